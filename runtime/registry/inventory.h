#pragma once
// What this build contains: the operator table, kernel tags, custom classes
// and build features, all generated at compile time from the X-macro files
// (runtime/kernels/inventory.inc) and filtered by the selection headers.
//
// The operator table is a constexpr array of {name, kernel} holding only
// selected operators. An entry for an unselected operator is never formed:
// KernelIf<false> discards the kernel's address as a template argument, so
// no relocation to the kernel exists and --gc-sections / -dead_strip remove
// it. There is no registration at static-initialisation time, hence no
// initialisation-order hazard and nothing to clash between two runtimes in
// one process (all of it has hidden visibility).
//
// Kernels look up other operators at compile time (op_index) to call them
// through the registry; the loader looks names up at load time (find_op).

#include "runtime/core/error.h"
#include "runtime/registry/selective.h"
#include "runtime/core/value.h"

namespace pare {

class KernelContext;

// The one kernel signature. `inputs` are the operator's arguments in schema
// order (trailing defaulted arguments may be absent), `outputs` its results.
using KernelFn = Error (*)(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs);

namespace kernels {
#define PARE_OP(name, fn) Error fn(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs);
#include "runtime/kernels/inventory.inc"
#undef PARE_OP
}  // namespace kernels

enum class TagId : uint16_t {
#define PARE_KERNEL_TAG(tag, ...) tag,
#include "runtime/kernels/inventory.inc"
#undef PARE_KERNEL_TAG
  kCount
};
enum class ClassId : uint16_t {
#define PARE_CLASS(name) name,
#include "runtime/kernels/inventory.inc"
#undef PARE_CLASS
  kCount
};
enum class FeatureId : uint16_t {
#define PARE_BUILD_FEATURE(name) name,
#include "runtime/kernels/inventory.inc"
#undef PARE_BUILD_FEATURE
  kCount
};
constexpr size_t kNumTags = static_cast<size_t>(TagId::kCount);
constexpr size_t kNumClasses = static_cast<size_t>(ClassId::kCount);
constexpr size_t kNumFeatures = static_cast<size_t>(FeatureId::kCount);

// ---------------------------------------------------------------------------
// Kernel tags: struct pare::tags::<tag> per PARE_KERNEL_TAG line.

namespace detail {
// Lets a tag's dtype list be written with bare ScalarType names.
struct DtypeNames {
  static constexpr ScalarType Byte = ScalarType::Byte;
  static constexpr ScalarType Char = ScalarType::Char;
  static constexpr ScalarType Short = ScalarType::Short;
  static constexpr ScalarType Int = ScalarType::Int;
  static constexpr ScalarType Long = ScalarType::Long;
  static constexpr ScalarType Half = ScalarType::Half;
  static constexpr ScalarType Float = ScalarType::Float;
  static constexpr ScalarType Double = ScalarType::Double;
  static constexpr ScalarType Bool = ScalarType::Bool;
  static constexpr ScalarType BFloat16 = ScalarType::BFloat16;
};
}  // namespace detail

namespace tags {
#define PARE_KERNEL_TAG(tag, ...)                                 \
  struct tag : ::pare::detail::DtypeNames {                       \
    static constexpr char name[] = #tag;                          \
    static constexpr ::pare::TagId id = ::pare::TagId::tag;       \
    static constexpr ::pare::ScalarType dtypes[] = {__VA_ARGS__}; \
  };
#include "runtime/kernels/inventory.inc"
#undef PARE_KERNEL_TAG
}  // namespace tags

struct TagInfo {
  const char* name;
  const ScalarType* dtypes;  // every dtype the tag declares
  size_t num_dtypes;
};
inline constexpr TagInfo kTags[] = {
#define PARE_KERNEL_TAG(tag, ...) {tags::tag::name, tags::tag::dtypes, sizeof(tags::tag::dtypes) / sizeof(ScalarType)},
#include "runtime/kernels/inventory.inc"
#undef PARE_KERNEL_TAG
};

template <typename Tag>
constexpr bool tag_declares(ScalarType t) {
  for (ScalarType d : Tag::dtypes) {
    if (d == t) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Operators.

struct OpEntry {
  const char* name;
  KernelFn fn;
};

namespace detail {

// Templated selective registration: the kernel's address is a template
// argument that the <false> specialisation ignores, so an unselected kernel
// is never referenced from emitted code or data.
template <bool kSelected>
struct KernelIf {
  template <KernelFn F>
  static constexpr KernelFn get() {
    return F;
  }
};
template <>
struct KernelIf<false> {
  template <KernelFn F>
  static constexpr KernelFn get() {
    return nullptr;
  }
};

struct OpCandidate {
  const char* name;
  KernelFn fn;  // null when not selected
};
// Only ever evaluated by the compiler (never odr-used), so the names of
// unselected operators do not reach the binary.
inline constexpr OpCandidate kOpCandidates[] = {
#define PARE_OP(name, fn) \
  {name, ::pare::detail::KernelIf<TORCH_SELECTIVE_SCHEMA(name).selected>::get<&::pare::kernels::fn>()},
#include "runtime/kernels/inventory.inc"
#undef PARE_OP
};

constexpr size_t count_selected_ops() {
  size_t n = 0;
  for (const OpCandidate& c : kOpCandidates) n += c.fn != nullptr ? 1 : 0;
  return n;
}

template <size_t N>
struct OpTable {
  OpEntry entries[N > 0 ? N : 1];
  static constexpr size_t size = N;
};

constexpr OpTable<count_selected_ops()> make_op_table() {
  OpTable<count_selected_ops()> table{};
  size_t n = 0;
  for (const OpCandidate& c : kOpCandidates) {
    if (c.fn != nullptr) table.entries[n++] = OpEntry{c.name, c.fn};
  }
  return table;
}

// FNV-1a, to recognise an operator the runtime implements but this build
// did not select without keeping every unselected name in the binary.
constexpr uint32_t fnv1a(const char* s) {
  uint32_t h = 2166136261u;
  while (*s != '\0') {
    h ^= static_cast<uint8_t>(*s++);
    h *= 16777619u;
  }
  return h;
}

}  // namespace detail

inline constexpr auto kOpTable = detail::make_op_table();
constexpr size_t kNumOps = decltype(kOpTable)::size;

// Index of a selected operator in kOpTable, or -1. Constant-evaluated when
// `name` is a literal, so calls between kernels cost no lookup.
constexpr int op_index(const char* name) {
  for (size_t i = 0; i < kNumOps; ++i) {
    if (detail::str_eq(kOpTable.entries[i].name, name)) return static_cast<int>(i);
  }
  return -1;
}

// Load-time lookups.
const OpEntry* find_op(const char* name);
// True when some kernel in runtime/kernels implements `name`, selected or not.
bool is_known_op(const char* name);

// ---------------------------------------------------------------------------
// Kernel (tag, dtype) pairs, classes and features in this build.

struct KernelDtypeEntry {
  TagId tag;
  ScalarType dtype;
};

namespace detail {
constexpr size_t count_kernel_dtypes() {
  size_t n = 0;
  for (const TagInfo& t : kTags) {
    for (size_t i = 0; i < t.num_dtypes; ++i) n += kernel_dtype_selected(t.name, t.dtypes[i]) ? 1 : 0;
  }
  return n;
}
template <size_t N>
struct KernelDtypeTable {
  KernelDtypeEntry entries[N > 0 ? N : 1];
  static constexpr size_t size = N;
};
constexpr KernelDtypeTable<count_kernel_dtypes()> make_kernel_dtype_table() {
  KernelDtypeTable<count_kernel_dtypes()> table{};
  size_t n = 0;
  for (size_t t = 0; t < kNumTags; ++t) {
    for (size_t i = 0; i < kTags[t].num_dtypes; ++i) {
      if (kernel_dtype_selected(kTags[t].name, kTags[t].dtypes[i])) {
        table.entries[n++] = KernelDtypeEntry{static_cast<TagId>(t), kTags[t].dtypes[i]};
      }
    }
  }
  return table;
}
}  // namespace detail

inline constexpr auto kKernelDtypeTable = detail::make_kernel_dtype_table();

struct NamedEntry {
  const char* name;
  bool selected;
};
// Every class and feature the runtime implements, with its selection; the
// names are kept so the loader can tell "not selected" from "unknown".
inline constexpr NamedEntry kClasses[] = {
#define PARE_CLASS(name) {#name, TORCH_SELECTIVE_CLASS(#name).selected},
#include "runtime/kernels/inventory.inc"
#undef PARE_CLASS
};
inline constexpr NamedEntry kFeatures[] = {
#define PARE_BUILD_FEATURE(name) {#name, PARE_SELECTIVE_FEATURE(#name).selected},
#include "runtime/kernels/inventory.inc"
#undef PARE_BUILD_FEATURE
};

constexpr bool class_selected(ClassId id) { return kClasses[static_cast<size_t>(id)].selected; }
constexpr bool feature_selected(FeatureId id) { return kFeatures[static_cast<size_t>(id)].selected; }

// Class id by name; false when no such class exists in the runtime.
bool find_class(const char* name, ClassId* id);

}  // namespace pare
