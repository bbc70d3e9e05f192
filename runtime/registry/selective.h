#pragma once
// An app's selection at compile time, for the one unit that turns it into
// link-time constants (selection.cc; runtime/registry/selection.h says why
// the rest of the runtime does not include this). Implements the compile-
// time half of docs/selection.md.
//
// The generated headers in `pare_selection/` (codegen output, or the
// select-everything defaults in runtime/selection/default/) define
// allowlists; this header turns them into constexpr predicates and
// PyTorch's registration spellings:
//
//   TORCH_SELECTIVE_SCHEMA("aten::add.Tensor")  -> SelectiveStr<selected?>
//   TORCH_SELECTIVE_CLASS("LinearPackedParams") -> SelectiveStr<selected?>
//   should_include_kernel_dtype(tag, dtype)     (from the generated header)
//
// selection.cc builds the operator table with them: an unselected
// operator's kernel is a template argument its specialisation discards, so
// its address is never taken.

// Defines detail::str_eq, which selected_kernel_dtypes.h calls.
#include "runtime/registry/inventory.h"

namespace pare {
namespace detail {

// True when `item` is one of the ';'-terminated entries of `list`
// ("a;b;c;"), compared exactly: "aten::add" does not match "aten::add.Tensor".
constexpr bool allowlist_contains(const char* list, const char* item) {
  const char* entry = list;
  while (*entry != '\0') {
    const char* p = entry;
    const char* q = item;
    while (*p != '\0' && *p != ';' && *q != '\0' && *p == *q) {
      ++p;
      ++q;
    }
    if (*q == '\0' && (*p == ';' || *p == '\0')) return true;
    while (*p != '\0' && *p != ';') ++p;
    entry = *p == ';' ? p + 1 : p;
  }
  return false;
}

}  // namespace detail
}  // namespace pare

#include "pare_selection/selected_ops.h"
#include "pare_selection/selected_kernel_dtypes.h"
#include "pare_selection/selected_classes.h"

// How "not selected" errors name the manifest the build came from (codegen
// writes the manifest's label; hand-written selections may omit it).
#ifndef PARE_MANIFEST_NAME
#define PARE_MANIFEST_NAME "unnamed selection"
#endif

#if !defined(TORCH_OPERATOR_ALLOWLIST_ALL) && !defined(TORCH_OPERATOR_ALLOWLIST)
#error "pare_selection/selected_ops.h must define TORCH_OPERATOR_ALLOWLIST_ALL or TORCH_OPERATOR_ALLOWLIST"
#endif
#if !defined(TORCH_CUSTOM_CLASS_ALLOWLIST_ALL) && !defined(TORCH_CUSTOM_CLASS_ALLOWLIST)
#error "pare_selection/selected_classes.h must define TORCH_CUSTOM_CLASS_ALLOWLIST_ALL or TORCH_CUSTOM_CLASS_ALLOWLIST"
#endif
#if !defined(TORCH_BUILD_FEATURE_ALLOWLIST_ALL) && !defined(TORCH_BUILD_FEATURE_ALLOWLIST)
#error \
    "pare_selection/selected_classes.h must define TORCH_BUILD_FEATURE_ALLOWLIST_ALL or TORCH_BUILD_FEATURE_ALLOWLIST"
#endif

namespace pare {

// `full_name` is the operator name with overload ("aten::add.Tensor"; the
// default overload is spelled without a dot, "aten::relu").
constexpr bool op_allowlist_check(const char* full_name) {
#if defined(TORCH_OPERATOR_ALLOWLIST_ALL)
  return (void)full_name, true;
#else
  return detail::allowlist_contains(TORCH_OPERATOR_ALLOWLIST, full_name);
#endif
}

constexpr bool custom_class_allowlist_check(const char* class_name) {
#if defined(TORCH_CUSTOM_CLASS_ALLOWLIST_ALL)
  return (void)class_name, true;
#else
  return detail::allowlist_contains(TORCH_CUSTOM_CLASS_ALLOWLIST, class_name);
#endif
}

constexpr bool build_feature_allowlist_check(const char* feature) {
#if defined(TORCH_BUILD_FEATURE_ALLOWLIST_ALL)
  return (void)feature, true;
#else
  return detail::allowlist_contains(TORCH_BUILD_FEATURE_ALLOWLIST, feature);
#endif
}

// Whether the manifest selects dtype `t` of kernel tag `tag`.
constexpr bool kernel_dtype_allowlist_check(const char* tag, ScalarType t) {
#if defined(PARE_INCLUDE_ALL_KERNEL_DTYPES)
  return (void)tag, (void)t, true;
#else
  return should_include_kernel_dtype(tag, t);
#endif
}

// A name carrying its selection verdict in its type, as PyTorch's
// c10::impl::SelectiveStr: overloads and specialisations on
// SelectiveStr<true>/<false> decide at compile time whether registration
// code exists at all.
template <bool kSelected>
class SelectiveStr {
 public:
  static constexpr bool selected = kSelected;
  constexpr explicit SelectiveStr(const char* name) : name_(name) {}
  constexpr operator const char*() const { return name_; }
  constexpr const char* name() const { return name_; }

 private:
  const char* name_;
};

}  // namespace pare

#define TORCH_SELECTIVE_SCHEMA(n) ::pare::SelectiveStr<::pare::op_allowlist_check(n)>(n)
// PyTorch spells the same check TORCH_SELECTIVE_NAME for operator names.
#define TORCH_SELECTIVE_NAME(n) TORCH_SELECTIVE_SCHEMA(n)
#define TORCH_SELECTIVE_CLASS(n) ::pare::SelectiveStr<::pare::custom_class_allowlist_check(n)>(n)
#define PARE_SELECTIVE_FEATURE(n) ::pare::SelectiveStr<::pare::build_feature_allowlist_check(n)>(n)
