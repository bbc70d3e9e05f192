// An app's selection as link-time constants (selection.h): the one unit of
// the runtime compiled against the app's generated pare_selection/*.h.
// Everything here is a constant the compiler evaluates, so each table is
// plain read-only data, and the app's link step (rules/private/
// select_link.bzl) folds every query of the shared code into it.

#include "runtime/registry/selection.h"

#include "runtime/registry/selective.h"

namespace pare {
namespace {

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
// Only ever evaluated by the compiler, so the names of unselected operators
// do not reach the binary.
constexpr OpCandidate kOpCandidates[] = {
#define PARE_OP(name, fn) {name, KernelIf<TORCH_SELECTIVE_SCHEMA(name).selected>::get<&kernels::fn>()},
#include "runtime/inventory/inventory.inc"
#undef PARE_OP
};
static_assert(sizeof(kOpCandidates) / sizeof(OpCandidate) == kNumInventoryOps, "one candidate per inventory op");

constexpr size_t count_selected_ops() {
  size_t n = 0;
  for (const OpCandidate& c : kOpCandidates) n += c.fn != nullptr ? 1 : 0;
  return n;
}

// A table of N entries (one unused entry when N is 0: no zero-size arrays).
template <typename Entry, size_t N>
struct Table {
  Entry entries[N > 0 ? N : 1];
};

constexpr Table<OpEntry, count_selected_ops()> make_op_table() {
  Table<OpEntry, count_selected_ops()> table{};
  size_t n = 0;
  for (const OpCandidate& c : kOpCandidates) {
    if (c.fn != nullptr) table.entries[n++] = OpEntry{c.name, c.fn};
  }
  return table;
}

constexpr selection::OpSlots make_op_slots() {
  selection::OpSlots slots{};
  int16_t n = 0;
  for (size_t i = 0; i < kNumInventoryOps; ++i) slots.slot[i] = kOpCandidates[i].fn != nullptr ? n++ : -1;
  return slots;
}

// Calls visit(tag, dtype) for each (tag, dtype) pair the app selects, in
// tag order, then each tag's dtype order.
template <typename Visit>
constexpr void for_each_kernel_dtype(Visit&& visit) {
  for (size_t t = 0; t < kNumTags; ++t) {
    for (size_t i = 0; i < kTags[t].num_dtypes; ++i) {
      if (kernel_dtype_allowlist_check(kTags[t].name, kTags[t].dtypes[i])) visit(t, kTags[t].dtypes[i]);
    }
  }
}

constexpr selection::KernelDtypeMasks make_dtype_masks() {
  selection::KernelDtypeMasks masks{};
  for_each_kernel_dtype([&masks](size_t t, ScalarType d) {
    masks.mask[t] = static_cast<uint16_t>(masks.mask[t] | (1u << static_cast<unsigned>(d)));
  });
  return masks;
}

constexpr size_t count_kernel_dtypes() {
  size_t n = 0;
  for_each_kernel_dtype([&n](size_t, ScalarType) { ++n; });
  return n;
}

constexpr Table<KernelDtypeEntry, count_kernel_dtypes()> make_kernel_dtype_table() {
  Table<KernelDtypeEntry, count_kernel_dtypes()> table{};
  size_t n = 0;
  for_each_kernel_dtype([&table, &n](size_t t, ScalarType d) {
    table.entries[n++] = KernelDtypeEntry{static_cast<TagId>(t), d, kTags[t].name};
  });
  return table;
}

constexpr auto kSelectedOps = make_op_table();
constexpr auto kSelectedKernelDtypes = make_kernel_dtype_table();

}  // namespace

namespace selection {
extern const KernelDtypeMasks kKernelDtypeMasks = make_dtype_masks();
extern const OpSlots kOpSlots = make_op_slots();
extern const char* const kManifestName = PARE_MANIFEST_NAME;
}  // namespace selection

extern const OpEntry* const kOpTable = kSelectedOps.entries;
extern const size_t kNumOps = count_selected_ops();
extern const KernelDtypeEntry* const kKernelDtypeTable = kSelectedKernelDtypes.entries;
extern const size_t kNumKernelDtypes = count_kernel_dtypes();

extern const NamedEntry kClasses[kNumClasses] = {
#define PARE_CLASS(name) {#name, TORCH_SELECTIVE_CLASS(#name).selected},
#include "runtime/inventory/inventory.inc"
#undef PARE_CLASS
};
extern const NamedEntry kFeatures[kNumFeatures] = {
#define PARE_BUILD_FEATURE(name) {#name, PARE_SELECTIVE_FEATURE(#name).selected},
#include "runtime/inventory/inventory.inc"
#undef PARE_BUILD_FEATURE
};

}  // namespace pare
