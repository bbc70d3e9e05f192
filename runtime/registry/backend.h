#pragma once
// The backend interface of delegate calls (docs/delegates.md).
//
// A backend runs parts of a graph that the exporter handed to it ahead of
// time: its AOT side (pare/delegates.py) compiled each part into a blob
// stored in the program; at run time the backend checks that its device is
// there (is_available), turns the blob into a handle when a method instance
// is created (init), runs it each time the method runs (execute) and frees
// it with the instance (destroy).
//
// A backend is one `const Backend` plus one operator,
// pare::delegate_init.<name> (runtime/inventory/delegate/delegate.ops.def),
// whose kernel passes that Backend to kernels::delegate_init
// (runtime/kernels/delegate/delegate.h). The operator is selected like any
// other, so the backend is too: the op table of a runtime whose manifest
// does not name the operator never references the Backend, and the app's
// link deletes all of its code (tools/verify checks it like a kernel).

#include "runtime/registry/kernel.h"

namespace pare {

// One compile spec (tools.tracer export --delegate-spec KEY=VALUE): both
// strings live in the program, NUL-terminated.
struct CompileSpec {
  const char* key;
  const char* value;
};

struct BackendBlob {
  const uint8_t* data;  // in the program's constant data, 64-byte aligned
  size_t size;
  Span<const CompileSpec> specs;
};

struct Backend {
  // As the program and the manifest spell it (pare::delegate_init.<name>).
  const char* name;
  // Whether this device can run the backend at all (a driver, a GPU).
  // When it cannot, method creation fails with BackendUnavailable naming
  // the backend and why (`reason`, a static string).
  bool (*is_available)(const char** reason);
  // Validates and prepares `blob` (it must reject any corrupt blob with an
  // InvalidProgram error through ctx, never crash), and sets *handle.
  // Runs in the method's init section: memory from
  // ctx.allocate_persistent lives as long as the method instance.
  Error (*init)(KernelContext& ctx, const BackendBlob& blob, void** handle);
  // Runs the part: reads `inputs` (the partition's inputs, in the order
  // the exporter gave them), allocates each of `outputs` with
  // ctx.allocate_output and fills it.
  Error (*execute)(KernelContext& ctx, void* handle, TensorList inputs, TensorList outputs);
  // Frees what init acquired outside the method's memory (device objects);
  // may be null.
  void (*destroy)(void* handle);
};

}  // namespace pare
