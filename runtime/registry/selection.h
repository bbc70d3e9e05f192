#pragma once
// What an app's runtime selects, as link-time constants.
//
// The kernels, the executor and the C API are compiled once per platform,
// with every dtype body of every kernel, and ask these questions at run
// time. The answers are constants that one small translation unit per app
// defines (selection.cc, compiled against the app's generated
// pare_selection/*.h headers). The app's link step (rules/private/
// select_link.bzl) merges the shared code's LLVM bitcode with that unit,
// folds every load of a constant below, deletes the branches and functions
// that become unreachable, and only then generates machine code: an
// unselected operator, (kernel tag, dtype) body, class or feature is never
// code in the library, exactly as when selection was a compile-time switch
// (docs/selection.md). Read the tables only through these functions, with
// arguments the compiler knows (a tag type, a FeatureId literal), so that
// every query folds.
//
// A build that does not fold (an unoptimised test build) still behaves the
// same: every query is answered correctly at run time, the unselected code
// is merely present.

#include "runtime/registry/inventory.h"

namespace pare {
namespace selection {

// Bit (1 << dtype code) per dtype of each kernel tag the app selects.
struct KernelDtypeMasks {
  uint16_t mask[kNumTags];
};
extern const KernelDtypeMasks kKernelDtypeMasks;
// Per inventory operator (op_id): its index in kOpTable, or -1 when the app
// does not select it.
struct OpSlots {
  int16_t slot[kNumInventoryOps];
};
extern const OpSlots kOpSlots;
// The manifest the selection came from, for "not selected" messages.
extern const char* const kManifestName;

}  // namespace selection

// The selected operators, {name, kernel} in inventory order, for the loader's
// name lookup and the C API; kernels call each other through op_id instead.
extern const OpEntry* const kOpTable;
extern const size_t kNumOps;
// The selected (kernel tag, dtype) pairs, for the C API.
extern const KernelDtypeEntry* const kKernelDtypeTable;
extern const size_t kNumKernelDtypes;
// Every class and feature the runtime implements, with its selection; the
// names are kept so the loader can tell "not selected" from "unknown".
extern const NamedEntry kClasses[kNumClasses];
extern const NamedEntry kFeatures[kNumFeatures];

static_assert(sizeof(uint16_t) * 8 > static_cast<unsigned>(ScalarType::BFloat16),
              "kKernelDtypeMasks holds a bit per dtype code");

// The dtype predicate of dtype dispatch (runtime/registry/dispatch.h).
inline bool kernel_dtype_selected(TagId tag, ScalarType t) {
  return (selection::kKernelDtypeMasks.mask[static_cast<size_t>(tag)] >> static_cast<unsigned>(t)) & 1u;
}
inline bool class_selected(ClassId id) { return kClasses[static_cast<size_t>(id)].selected; }
inline bool feature_selected(FeatureId id) { return kFeatures[static_cast<size_t>(id)].selected; }
// The index in kOpTable of inventory operator `id` (op_id), or -1.
inline int op_slot(int id) { return selection::kOpSlots.slot[id]; }

}  // namespace pare
