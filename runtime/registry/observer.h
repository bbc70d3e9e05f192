#pragma once
// Observer: what a program actually used, recorded by the instrumentation
// build (-DPARE_TRACING=1) and read through the C API by tools/tracer to
// write the manifest.
//
// It records every operator called (as root, i.e. by the method's
// instruction list, and/or non-root, i.e. by another kernel through
// PARE_CALL_OP), every (kernel tag, dtype) a dtype dispatch reached, every
// custom class created or used, and every build feature used. Storage is a
// fixed set of bit masks sized by the inventory, so
// recording never allocates. In normal builds every hook is an empty inline
// function and the object is empty.

#include "runtime/registry/inventory.h"

namespace pare {

#if PARE_TRACING

class Observer {
 public:
  static constexpr bool kEnabled = true;
  static constexpr uint8_t kRoot = 1;
  static constexpr uint8_t kNonRoot = 2;

  void record_op(size_t op_index, bool root) { ops_[op_index] |= root ? kRoot : kNonRoot; }
  void record_kernel_dtype(TagId tag, ScalarType t) {
    dtypes_[static_cast<size_t>(tag)] |= static_cast<uint16_t>(1u << static_cast<unsigned>(t));
  }
  void record_class(ClassId id) { classes_[static_cast<size_t>(id)] = true; }
  void record_feature(FeatureId id) { features_[static_cast<size_t>(id)] = true; }
  void reset() { *this = Observer(); }

  // Bit mask of kRoot/kNonRoot for kOpTable[op_index].
  uint8_t op_calls(size_t op_index) const { return ops_[op_index]; }
  // Bit (1 << ScalarType code) per dtype reached under `tag`.
  uint16_t kernel_dtypes(TagId tag) const { return dtypes_[static_cast<size_t>(tag)]; }
  bool class_used(ClassId id) const { return classes_[static_cast<size_t>(id)]; }
  bool feature_used(FeatureId id) const { return features_[static_cast<size_t>(id)]; }

 private:
  uint8_t ops_[kNumInventoryOps > 0 ? kNumInventoryOps : 1] = {};  // by kOpTable index (at most this many)
  uint16_t dtypes_[kNumTags > 0 ? kNumTags : 1] = {};
  bool classes_[kNumClasses > 0 ? kNumClasses : 1] = {};
  bool features_[kNumFeatures > 0 ? kNumFeatures : 1] = {};
};

#else

class Observer {
 public:
  static constexpr bool kEnabled = false;
  void record_op(size_t, bool) {}
  void record_kernel_dtype(TagId, ScalarType) {}
  void record_class(ClassId) {}
  void record_feature(FeatureId) {}
  void reset() {}
  uint8_t op_calls(size_t) const { return 0; }
  uint16_t kernel_dtypes(TagId) const { return 0; }
  bool class_used(ClassId) const { return false; }
  bool feature_used(FeatureId) const { return false; }
};

#endif

}  // namespace pare
