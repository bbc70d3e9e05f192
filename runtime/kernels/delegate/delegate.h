#pragma once
// Delegate calls: the Delegate class and the init helper every backend's
// pare::delegate_init.<name> kernel calls (runtime/registry/backend.h,
// docs/delegates.md).

#include "runtime/registry/backend.h"

namespace pare {
namespace classes {

// What pare::delegate_init.<name> made of one blob: the backend and its
// handle. Destroyed with the method instance.
class Delegate : public ObjectBase {
 public:
  static constexpr char kName[] = "Delegate";
  static constexpr ClassId kId = ClassId::Delegate;

  Delegate() = default;
  Delegate(const Delegate&) = delete;
  Delegate& operator=(const Delegate&) = delete;
  ~Delegate() {
    if (handle != nullptr && backend->destroy != nullptr) backend->destroy(handle);
  }

  // Checks the backend is available and has it init `blob`. Out of line and
  // never inlined: the class's one symbol, which tools/verify looks for in
  // a runtime that selects it (codegen's expected_symbols.json).
  PARE_NOINLINE Error init(KernelContext& ctx, const Backend& with, const BackendBlob& blob);

  const Backend* backend = nullptr;
  void* handle = nullptr;
};

}  // namespace classes

inline constexpr auto kDelegateClass = selective_class_<classes::Delegate>("Delegate");

namespace kernels {

// pare::delegate_init.<backend.name>(Tensor blob, str key0, str value0, ...)
// -> Delegate: checks the backend is available, hands it the blob (a 1-D
// Byte constant) and the compile specs, and stores the handle.
Error delegate_init(KernelContext& ctx, const Backend& backend, ValueSpan inputs, ValueSpan outputs);

}  // namespace kernels
}  // namespace pare
