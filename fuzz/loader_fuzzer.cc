// libFuzzer target for the program loader: any byte string either loads or
// fails with a clean error (docs/program_format.md, "closed-world
// validation"), and a program that loads must create and run every method
// on generated inputs without memory errors or undefined behaviour.
//
// Built by fuzz/build.py against the full runtime (default selection) with
// -fsanitize=fuzzer,address,undefined; only the C API (pare.h) is used, as an
// app would. The harness is test code, not runtime code, so it may use libc.

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/allocator_interface.h>

#include "runtime/c_api/pare.h"
#include "runtime/core/scalar_type.h"

namespace {

// Inputs stay small so one execution stays fast; a method whose declared
// shapes need more is loaded and created but not run.
constexpr int64_t kMaxInputElements = 4096;

// The C API's dtype codes are PyTorch's ScalarType codes (runtime/c_api/pare.h),
// so the runtime's own table gives the sizes: 0 for a code it does not support.
size_t element_size(int32_t dtype) {
  return pare::is_supported_scalar_type_code(dtype) ? pare::element_size(static_cast<pare::ScalarType>(dtype)) : 0;
}

// Small, finite values of every dtype (-2..2 cycling; 0/1 for bool), so the
// run exercises kernels rather than float-to-int conversions of NaN, which
// C++ leaves undefined and torch does too.
void fill(void* data, int32_t dtype, int64_t n, int salt) {
  for (int64_t i = 0; i < n; ++i) {
    const int v = static_cast<int>((i + salt) % 5) - 2;
    switch (dtype) {
      case PARE_DTYPE_BYTE: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v + 2); break;
      case PARE_DTYPE_CHAR: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); break;
      case PARE_DTYPE_BOOL: static_cast<uint8_t*>(data)[i] = v > 0; break;
      case PARE_DTYPE_SHORT: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v); break;
      case PARE_DTYPE_INT: static_cast<int32_t*>(data)[i] = v; break;
      case PARE_DTYPE_LONG: static_cast<int64_t*>(data)[i] = v; break;
      case PARE_DTYPE_FLOAT: static_cast<float*>(data)[i] = 0.5f * static_cast<float>(v); break;
      case PARE_DTYPE_DOUBLE: static_cast<double*>(data)[i] = 0.5 * v; break;
      // Half and bfloat16 bit patterns of -1, -0.5, 0, 0.5, 1.
      case PARE_DTYPE_HALF: {
        const uint16_t bits[] = {0xBC00, 0xB800, 0x0000, 0x3800, 0x3C00};
        static_cast<uint16_t*>(data)[i] = bits[v + 2];
        break;
      }
      case PARE_DTYPE_BFLOAT16: {
        const uint16_t bits[] = {0xBF80, 0xBF00, 0x0000, 0x3F00, 0x3F80};
        static_cast<uint16_t*>(data)[i] = bits[v + 2];
        break;
      }
      default: break;
    }
  }
}

// Reads every byte of every output tensor, so an output whose sizes,
// strides or data pointer reach outside its memory is an ASan report here.
uint64_t touch_outputs(pare_method* method) {
  uint64_t sum = 0;
  const size_t n = pare_method_output_count(method);
  for (size_t i = 0; i < n; ++i) {
    int32_t kind = -1;
    if (pare_method_output_kind(method, i, &kind) != PARE_OK) abort();  // execute succeeded: outputs exist
    if (kind != PARE_VALUE_TENSOR) continue;
    pare_tensor_info info;
    if (pare_method_output_tensor(method, i, &info) != PARE_OK) abort();
    const size_t esize = element_size(info.dtype);
    if (esize == 0 || info.ndim < 0 || info.ndim > PARE_MAX_DIM) abort();
    int64_t numel = 1;
    for (int d = 0; d < info.ndim; ++d) numel *= info.sizes[d];
    if (numel == 0) continue;
    if (info.data == nullptr) abort();
    // Walk the elements in index order through the strides.
    int64_t index[PARE_MAX_DIM] = {0};
    for (int64_t e = 0; e < numel && e < (int64_t{1} << 20); ++e) {
      int64_t offset = 0;
      for (int d = 0; d < info.ndim; ++d) offset += index[d] * info.strides[d];
      const uint8_t* p = static_cast<const uint8_t*>(info.data) + offset * static_cast<int64_t>(esize);
      for (size_t b = 0; b < esize; ++b) sum += p[b];
      for (int d = info.ndim - 1; d >= 0; --d) {
        if (++index[d] < info.sizes[d]) break;
        index[d] = 0;
      }
    }
  }
  return sum;
}

// Sets every input (declared dtype, or Float where any dtype is allowed;
// declared sizes, `dynamic` where any size is allowed) and executes.
// Returns false when the inputs would be too large to run.
bool run_once(pare_method* method, int64_t dynamic, int salt, void** buffers, size_t num_buffers) {
  const size_t n = pare_method_input_count(method);
  if (n > num_buffers) return false;
  for (size_t i = 0; i < n; ++i) {
    pare_tensor_info info;
    if (pare_method_input_info(method, i, &info) != PARE_OK) return false;
    const int32_t dtype = info.dtype < 0 ? PARE_DTYPE_FLOAT : info.dtype;
    const size_t esize = element_size(dtype);
    if (esize == 0) return false;
    const int32_t ndim = info.ndim < 0 ? 2 : info.ndim;
    if (ndim > PARE_MAX_DIM) return false;
    int64_t sizes[PARE_MAX_DIM];
    int64_t numel = 1;
    for (int32_t d = 0; d < ndim; ++d) {
      sizes[d] = info.ndim < 0 || info.sizes[d] < 0 ? dynamic : info.sizes[d];
      if (sizes[d] > kMaxInputElements) return false;
      numel *= sizes[d];
      if (numel > kMaxInputElements) return false;
    }
    // Exactly sized heap blocks: a kernel reading past an input is a report.
    const size_t nbytes = static_cast<size_t>(numel) * esize;
    free(buffers[i]);
    buffers[i] = malloc(nbytes == 0 ? 1 : nbytes);
    fill(buffers[i], dtype, numel, salt);
    if (pare_method_set_input(method, i, dtype, sizes, static_cast<size_t>(ndim), nullptr, buffers[i], nbytes) !=
        PARE_OK) {
      return true;  // rejected cleanly: nothing to run
    }
  }
  if (pare_method_execute(method) == PARE_OK) touch_outputs(method);
  return true;
}

void exercise(pare_program* program) {
  const size_t methods = pare_program_method_count(program);
  for (size_t m = 0; m < methods && m < 8; ++m) {
    const char* name = pare_program_method_name(program, m);
    if (name == nullptr) abort();  // a loaded program names all its methods
    pare_method* method = nullptr;
    if (pare_method_create(program, name, &method) == PARE_OK) {
      void* buffers[16] = {nullptr};
      // Two shapes for dynamic dims: the second run re-plans memory.
      if (run_once(method, 2, 0, buffers, 16)) run_once(method, 3, 1, buffers, 16);
      for (void* b : buffers) free(b);
    } else if (method != nullptr && pare_method_error_message(method)[0] == '\0') {
      abort();  // a failure always says why
    }
    pare_method_destroy(method);
  }
}

}  // namespace

// The runtime's allocations reach the PAL through this wrapper (fuzz/build.py
// links with --wrap=pare_pal_malloc): like a small device, the process has a
// 256 MB budget, and an allocation past it fails, which the runtime must turn
// into its OutOfMemory error. Without it, a valid program whose constant
// shapes ask for several 1 GB intermediates ends the run on libFuzzer's RSS
// limit, and one that fills 1 GB takes seconds under ASan (a timeout on a
// loaded machine): findings about this machine rather than the runtime.
constexpr size_t kMemoryBudget = size_t{256} << 20;

extern "C" void* __real_pare_pal_malloc(size_t size, size_t alignment);

extern "C" void* __wrap_pare_pal_malloc(size_t size, size_t alignment) {
  const size_t used = __sanitizer_get_current_allocated_bytes();
  if (size > kMemoryBudget || used > kMemoryBudget - size) return nullptr;
  return __real_pare_pal_malloc(size, alignment);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Odd sizes load a copy, even sizes borrow libFuzzer's exactly sized
  // buffer (usually not 64-byte aligned, so constants are copied out).
  const uint32_t flags = (size & 1) ? PARE_LOAD_COPY : 0;
  pare_program* program = nullptr;
  if (pare_program_load(data, size, flags, &program) == PARE_OK) {
    exercise(program);
  } else if (program != nullptr && pare_program_error_message(program)[0] == '\0') {
    abort();  // a failure always says why
  }
  pare_program_destroy(program);
  return 0;
}
