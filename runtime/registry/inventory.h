#pragma once
// What the runtime can contain, whatever an app selects: the operators, the
// kernel tags with the dtypes each declares, the custom classes and the build
// features, all generated at compile time from the X-macro files
// (runtime/inventory/inventory.inc). Nothing here depends on a manifest, so
// every layer that includes it is compiled once per platform; what an app
// selects is in selection.h.

#include "runtime/core/error.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/value.h"

namespace pare {

class KernelContext;

namespace detail {
constexpr bool str_eq(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}
}  // namespace detail

// The one kernel signature. `inputs` are the operator's arguments in schema
// order (trailing defaulted arguments may be absent), `outputs` its results.
using KernelFn = Error (*)(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs);

namespace kernels {
#define PARE_OP(name, fn) Error fn(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs);
#include "runtime/inventory/inventory.inc"
#undef PARE_OP
}  // namespace kernels

enum class TagId : uint16_t {
#define PARE_KERNEL_TAG(tag, ...) tag,
#include "runtime/inventory/inventory.inc"
#undef PARE_KERNEL_TAG
  kCount
};
enum class ClassId : uint16_t {
#define PARE_CLASS(name) name,
#include "runtime/inventory/inventory.inc"
#undef PARE_CLASS
  kCount
};
enum class FeatureId : uint16_t {
#define PARE_BUILD_FEATURE(name) name,
#include "runtime/inventory/inventory.inc"
#undef PARE_BUILD_FEATURE
  kCount
};
constexpr size_t kNumTags = static_cast<size_t>(TagId::kCount);
constexpr size_t kNumClasses = static_cast<size_t>(ClassId::kCount);
constexpr size_t kNumFeatures = static_cast<size_t>(FeatureId::kCount);

// ---------------------------------------------------------------------------
// Kernel tags: struct pare::tags::<tag> per PARE_KERNEL_TAG line.

namespace detail {
// Lets a tag's dtype list be written with bare ScalarType names, or with
// PyTorch's quantized names for their storage dtypes (QInt8 is Char).
struct DtypeNames {
#define PARE_DTYPE(name, code, cpp_type, bytes, torch_name) static constexpr ScalarType name = ScalarType::name;
#define PARE_QUANTIZED_DTYPE(name, code, storage) static constexpr ScalarType name = ScalarType::storage;
#include "runtime/core/dtypes.def"
};
}  // namespace detail

namespace tags {
#define PARE_KERNEL_TAG(tag, ...)                                 \
  struct tag : ::pare::detail::DtypeNames {                       \
    static constexpr char name[] = #tag;                          \
    static constexpr ::pare::TagId id = ::pare::TagId::tag;       \
    static constexpr ::pare::ScalarType dtypes[] = {__VA_ARGS__}; \
  };
#include "runtime/inventory/inventory.inc"
#undef PARE_KERNEL_TAG
}  // namespace tags

struct TagInfo {
  const char* name;
  const ScalarType* dtypes;  // every dtype the tag declares
  size_t num_dtypes;
};

// One tag's name and dtypes. The error paths take this or the tag's name
// (dispatch.h), never an index into kTags: a binary holds the names (and,
// where a message lists them, the dtypes) of the tags its kernels use, and
// nothing of the others (each PARE_KERNEL_TAG line
// would otherwise cost every runtime about 90 bytes on android_arm64: the
// entry, the name, the dtype list and two relocations).
template <typename Tag>
inline constexpr TagInfo kTagInfo{Tag::name, Tag::dtypes, sizeof(Tag::dtypes) / sizeof(ScalarType)};

// Every tag by TagId, for constant evaluation (the selection tables of
// selection.cc) and for the tracing build's C API, which reports any tag.
inline constexpr TagInfo kTags[] = {
#define PARE_KERNEL_TAG(tag, ...) kTagInfo<tags::tag>,
#include "runtime/inventory/inventory.inc"
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

// Only ever evaluated by the compiler (never odr-used), so no name reaches
// the binary through it.
inline constexpr const char* kInventoryOpNames[] = {
#define PARE_OP(name, fn) name,
#include "runtime/inventory/inventory.inc"
#undef PARE_OP
};

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

// Every operator the runtime implements, selected or not.
constexpr size_t kNumInventoryOps = sizeof(detail::kInventoryOpNames) / sizeof(const char*);

// The inventory id of operator `name`, or -1 when the runtime has no such
// operator. Constant-evaluated when `name` is a literal (PARE_CALL_OP).
constexpr int op_id(const char* name) {
  for (size_t i = 0; i < kNumInventoryOps; ++i) {
    if (detail::str_eq(detail::kInventoryOpNames[i], name)) return static_cast<int>(i);
  }
  return -1;
}

// Load-time lookups.
const OpEntry* find_op(const char* name);
// True when the inventory declares `name` (a kernel implements it), selected or not.
bool is_known_op(const char* name);

// ---------------------------------------------------------------------------
// Kernel (tag, dtype) pairs, classes and features.

struct KernelDtypeEntry {
  TagId tag;
  ScalarType dtype;
  const char* tag_name;  // kTags[tag].name, kept for the selected tags only
};

struct NamedEntry {
  const char* name;
  bool selected;
};

// Class id by name; false when no such class exists in the runtime.
bool find_class(const char* name, ClassId* id);

}  // namespace pare
