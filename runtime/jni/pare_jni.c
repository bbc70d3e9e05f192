/* JNI bridge: org.pare.Module's native methods over the Pare C API.
 *
 * Freestanding C (no libc headers): JNI declarations come from jni_min.h,
 * memory from the PAL. Everything crossing the boundary is a primitive or a
 * byte[] / long[]; the Java side (runtime/jni/java/org/pare/) builds the
 * friendly API on top. Every failure throws org.pare.PareException carrying
 * the runtime's message and returns a neutral value.
 *
 * Handles are pointers to the structs below, passed to Java as longs.
 */

#include <stddef.h>
#include <stdint.h>

#include "runtime/c_api/pare.h"
#include "runtime/jni/jni_min.h"
#include "runtime/pal/pal.h"

void* memcpy(void* dst, const void* src, size_t n);

/* One input's bytes, owned by the bridge until the next set or destroy: the
 * C API borrows input data until execute returns. */
typedef struct bridge_buffer {
  void* data;
  size_t size;
} bridge_buffer;

/* A loaded program and, when loaded from a byte[], the 64-byte aligned copy
 * it borrows (so constant tensors are used in place, not copied again). */
typedef struct bridge_program {
  pare_program* program;
  void* bytes;
} bridge_program;

typedef struct bridge_method {
  pare_method* method;
  size_t num_inputs;
  bridge_buffer* inputs;
} bridge_method;

static const char kExceptionClass[] = "org/pare/PareException";

static void throw_message(JNIEnv* env, const char* message) {
  if ((*env)->ExceptionCheck(env)) return; /* keep the first exception */
  jclass cls = (*env)->FindClass(env, kExceptionClass);
  if (cls) (*env)->ThrowNew(env, cls, message && *message ? message : "pare: unknown error");
}

static bridge_method* as_method(JNIEnv* env, jlong handle) {
  if (handle == 0) throw_message(env, "pare: the method (or its module) is closed");
  return (bridge_method*)(intptr_t)handle;
}

static void destroy_program(bridge_program* p) {
  if (!p) return;
  pare_program_destroy(p->program);
  pare_pal_free(p->bytes);
  pare_pal_free(p);
}

static pare_program* as_program(JNIEnv* env, jlong handle) {
  if (handle == 0) {
    throw_message(env, "pare: the module is closed");
    return NULL;
  }
  return ((bridge_program*)(intptr_t)handle)->program;
}

PARE_JNIEXPORT jint JNI_OnLoad(void* vm, void* reserved) {
  (void)vm;
  (void)reserved;
  return PARE_JNI_VERSION_1_6;
}

/* ---- Programs ---------------------------------------------------------- */

static jlong finish_load(JNIEnv* env, pare_status status, pare_program* program, void* bytes) {
  bridge_program* p = NULL;
  if (status == PARE_OK) p = (bridge_program*)pare_pal_malloc(sizeof(bridge_program), 8);
  if (!p) {
    throw_message(env, status == PARE_OK ? "pare: out of memory" : pare_program_error_message(program));
    pare_program_destroy(program);
    pare_pal_free(bytes);
    return 0;
  }
  p->program = program;
  p->bytes = bytes;
  return (jlong)(intptr_t)p;
}

PARE_JNIEXPORT jlong Java_org_pare_Module_nativeLoad(JNIEnv* env, jclass cls, jbyteArray bytes) {
  (void)cls;
  const jsize size = (*env)->GetArrayLength(env, bytes);
  void* copy = pare_pal_malloc(size > 0 ? (size_t)size : 1, 64);
  if (!copy) {
    throw_message(env, "pare: out of memory copying the program");
    return 0;
  }
  (*env)->GetByteArrayRegion(env, bytes, 0, size, (jbyte*)copy);
  pare_program* program = NULL;
  pare_status status = pare_program_load(copy, (size_t)size, 0, &program);
  return finish_load(env, status, program, copy);
}

PARE_JNIEXPORT jlong Java_org_pare_Module_nativeLoadFile(JNIEnv* env, jclass cls, jstring path) {
  (void)cls;
  const char* chars = (*env)->GetStringUTFChars(env, path, NULL);
  if (!chars) return 0;
  pare_program* program = NULL;
  pare_status status = pare_program_load_file(chars, &program);
  (*env)->ReleaseStringUTFChars(env, path, chars);
  return finish_load(env, status, program, NULL);
}

PARE_JNIEXPORT void Java_org_pare_Module_nativeDestroyProgram(JNIEnv* env, jclass cls, jlong handle) {
  (void)env;
  (void)cls;
  destroy_program((bridge_program*)(intptr_t)handle);
}

/* Method names joined with '\n' (names cannot contain one). */
PARE_JNIEXPORT jstring Java_org_pare_Module_nativeMethodNames(JNIEnv* env, jclass cls, jlong handle) {
  (void)cls;
  pare_program* program = as_program(env, handle);
  if (!program) return NULL;
  const size_t count = pare_program_method_count(program);
  size_t total = 1;
  for (size_t i = 0; i < count; ++i) {
    const char* name = pare_program_method_name(program, i);
    while (name && *name++) ++total;
    ++total;
  }
  char* joined = (char*)pare_pal_malloc(total, 1);
  if (!joined) {
    throw_message(env, "pare: out of memory");
    return NULL;
  }
  char* p = joined;
  for (size_t i = 0; i < count; ++i) {
    const char* name = pare_program_method_name(program, i);
    if (i) *p++ = '\n';
    while (name && *name) *p++ = *name++;
  }
  *p = '\0';
  jstring result = (*env)->NewStringUTF(env, joined);
  pare_pal_free(joined);
  return result;
}

/* ---- Methods ----------------------------------------------------------- */

static void destroy_method(bridge_method* m) {
  if (!m) return;
  for (size_t i = 0; i < m->num_inputs; ++i) pare_pal_free(m->inputs[i].data);
  pare_pal_free(m->inputs);
  pare_method_destroy(m->method);
  pare_pal_free(m);
}

/* share_with: 0, or a method whose states the new one uses (build feature
 * state: a prefill and a decode method over one KV cache). */
PARE_JNIEXPORT jlong Java_org_pare_Module_nativeCreateMethod(JNIEnv* env, jclass cls, jlong program_handle,
                                                             jstring name, jlong share_with) {
  (void)cls;
  pare_program* program = as_program(env, program_handle);
  if (!program) return 0;
  const char* chars = (*env)->GetStringUTFChars(env, name, NULL);
  if (!chars) return 0;
  pare_method* method = NULL;
  pare_method* shared = share_with ? ((bridge_method*)(intptr_t)share_with)->method : NULL;
  pare_status status = pare_method_create_sharing_state(program, chars, shared, &method);
  (*env)->ReleaseStringUTFChars(env, name, chars);
  if (status != PARE_OK) {
    throw_message(env, method ? pare_method_error_message(method) : pare_program_error_message(program));
    pare_method_destroy(method);
    return 0;
  }
  bridge_method* m = (bridge_method*)pare_pal_malloc(sizeof(bridge_method), 8);
  const size_t n = pare_method_input_count(method);
  bridge_buffer* inputs = (bridge_buffer*)pare_pal_malloc((n ? n : 1) * sizeof(bridge_buffer), 8);
  if (!m || !inputs) {
    pare_pal_free(m);
    pare_pal_free(inputs);
    pare_method_destroy(method);
    throw_message(env, "pare: out of memory");
    return 0;
  }
  for (size_t i = 0; i < n; ++i) inputs[i].data = NULL, inputs[i].size = 0;
  m->method = method;
  m->num_inputs = n;
  m->inputs = inputs;
  return (jlong)(intptr_t)m;
}

PARE_JNIEXPORT void Java_org_pare_Module_nativeDestroyMethod(JNIEnv* env, jclass cls, jlong handle) {
  (void)env;
  (void)cls;
  destroy_method((bridge_method*)(intptr_t)handle);
}

PARE_JNIEXPORT jint Java_org_pare_Module_nativeInputCount(JNIEnv* env, jclass cls, jlong handle) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  return m ? (jint)m->num_inputs : 0;
}

/* A Java long[] shape into `sizes`: its rank, or -1 with an exception
 * thrown when it has more than PARE_MAX_DIM dimensions. */
static jsize read_shape(JNIEnv* env, jlongArray shape, int64_t sizes[PARE_MAX_DIM]) {
  const jsize ndim = (*env)->GetArrayLength(env, shape);
  if (ndim > PARE_MAX_DIM) {
    throw_message(env, "pare: a tensor may have at most 8 dimensions");
    return -1;
  }
  (*env)->GetLongArrayRegion(env, shape, 0, ndim, (jlong*)sizes);
  return ndim;
}

PARE_JNIEXPORT void Java_org_pare_Module_nativeSetInput(JNIEnv* env, jclass cls, jlong handle, jint index, jint dtype,
                                                        jlongArray shape, jbyteArray data) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  if (!m) return;
  if (index < 0 || (size_t)index >= m->num_inputs) {
    throw_message(env, "pare: input index out of range for this method");
    return;
  }
  int64_t sizes[PARE_MAX_DIM];
  const jsize ndim = read_shape(env, shape, sizes);
  if (ndim < 0) return;
  const jsize nbytes = (*env)->GetArrayLength(env, data);
  bridge_buffer* buf = &m->inputs[index];
  if (buf->size < (size_t)nbytes || !buf->data) {
    pare_pal_free(buf->data);
    buf->data = pare_pal_malloc(nbytes > 0 ? (size_t)nbytes : 1, 64);
    buf->size = buf->data ? (size_t)nbytes : 0;
    if (!buf->data) {
      throw_message(env, "pare: out of memory for an input");
      return;
    }
  }
  (*env)->GetByteArrayRegion(env, data, 0, nbytes, (jbyte*)buf->data);
  pare_status status =
      pare_method_set_input(m->method, (size_t)index, dtype, sizes, (size_t)ndim, NULL, buf->data, (size_t)nbytes);
  if (status != PARE_OK) throw_message(env, pare_method_error_message(m->method));
}

PARE_JNIEXPORT void Java_org_pare_Module_nativeExecute(JNIEnv* env, jclass cls, jlong handle) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  if (m && pare_method_execute(m->method) != PARE_OK) throw_message(env, pare_method_error_message(m->method));
}

PARE_JNIEXPORT void Java_org_pare_Module_nativeSetNumThreads(JNIEnv* env, jclass cls, jlong handle, jint threads) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  if (m && pare_method_set_num_threads(m->method, (uint32_t)threads) != PARE_OK) {
    throw_message(env, pare_method_error_message(m->method));
  }
}

/* ---- Build feature state ------------------------------------------------- */

PARE_JNIEXPORT jboolean Java_org_pare_Module_nativeHasState(JNIEnv* env, jclass cls, jlong handle) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  return m && pare_method_state_name(m->method, 0) ? 1 : 0;
}

PARE_JNIEXPORT void Java_org_pare_Module_nativeResetState(JNIEnv* env, jclass cls, jlong handle) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  if (m && pare_method_reset_state(m->method) != PARE_OK) throw_message(env, pare_method_error_message(m->method));
}

PARE_JNIEXPORT void Java_org_pare_Module_nativeSetState(JNIEnv* env, jclass cls, jlong handle, jstring name, jint dtype,
                                                        jlongArray shape, jbyteArray data) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  if (!m) return;
  int64_t sizes[PARE_MAX_DIM];
  const jsize ndim = read_shape(env, shape, sizes);
  if (ndim < 0) return;
  const jsize nbytes = (*env)->GetArrayLength(env, data);
  const char* chars = (*env)->GetStringUTFChars(env, name, NULL);
  void* bytes = pare_pal_malloc(nbytes > 0 ? (size_t)nbytes : 1, 64);
  pare_status status = PARE_ERROR_OUT_OF_MEMORY;
  if (chars && bytes) {
    (*env)->GetByteArrayRegion(env, data, 0, nbytes, (jbyte*)bytes);
    status = pare_method_set_state(m->method, chars, dtype, sizes, (size_t)ndim, bytes, (size_t)nbytes);
  }
  pare_pal_free(bytes);
  if (chars) (*env)->ReleaseStringUTFChars(env, name, chars);
  if (status != PARE_OK)
    throw_message(env, chars && bytes ? pare_method_error_message(m->method) : "pare: out of memory");
}

PARE_JNIEXPORT jint Java_org_pare_Module_nativeOutputCount(JNIEnv* env, jclass cls, jlong handle) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  return m ? (jint)pare_method_output_count(m->method) : 0;
}

/* Output `index` as a tensor: its dtype, shape and contiguous bytes. Int,
 * double and bool outputs become 0-dim Long, Double and Bool tensors. */
typedef struct bridge_output {
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[PARE_MAX_DIM];
  int64_t strides[PARE_MAX_DIM];
  const void* data;
  union {
    int64_t i;
    double d;
    uint8_t b;
  } scalar;
} bridge_output;

static void from_info(const pare_tensor_info* info, bridge_output* out) {
  out->dtype = info->dtype;
  out->ndim = info->ndim;
  for (int32_t d = 0; d < info->ndim; ++d) out->sizes[d] = info->sizes[d], out->strides[d] = info->strides[d];
  out->data = info->data;
}

/* Output `index`, or with `state` non-null that state of the method. */
static int read_output(JNIEnv* env, bridge_method* m, jint index, jstring state, bridge_output* out) {
  if (state) {
    const char* chars = (*env)->GetStringUTFChars(env, state, NULL);
    pare_tensor_info info;
    const pare_status status = chars ? pare_method_state_tensor(m->method, chars, &info) : PARE_ERROR_OUT_OF_MEMORY;
    if (chars) (*env)->ReleaseStringUTFChars(env, state, chars);
    if (status != PARE_OK) {
      throw_message(env, chars ? pare_method_error_message(m->method) : "pare: out of memory");
      return 0;
    }
    from_info(&info, out);
    return 1;
  }
  int32_t kind = 0;
  if (pare_method_output_kind(m->method, (size_t)index, &kind) != PARE_OK) {
    throw_message(env, pare_method_error_message(m->method));
    return 0;
  }
  out->ndim = 0;
  pare_status status = PARE_OK;
  switch (kind) {
    case PARE_VALUE_TENSOR: {
      pare_tensor_info info;
      status = pare_method_output_tensor(m->method, (size_t)index, &info);
      if (status != PARE_OK) break;
      from_info(&info, out);
      return 1;
    }
    case PARE_VALUE_INT:
      status = pare_method_output_int(m->method, (size_t)index, &out->scalar.i);
      out->dtype = PARE_DTYPE_LONG;
      break;
    case PARE_VALUE_DOUBLE:
      status = pare_method_output_double(m->method, (size_t)index, &out->scalar.d);
      out->dtype = PARE_DTYPE_DOUBLE;
      break;
    case PARE_VALUE_BOOL: {
      int32_t b = 0;
      status = pare_method_output_bool(m->method, (size_t)index, &b);
      out->scalar.b = b ? 1 : 0;
      out->dtype = PARE_DTYPE_BOOL;
      break;
    }
    default:
      throw_message(env, "pare: this output is not a tensor or a number; the Java API cannot return it");
      return 0;
  }
  if (status != PARE_OK) {
    throw_message(env, pare_method_error_message(m->method));
    return 0;
  }
  out->data = &out->scalar;
  return 1;
}

/* The three below read output `index`, or the method's state named `state` when it is not null. */
PARE_JNIEXPORT jint Java_org_pare_Module_nativeOutputDtype(JNIEnv* env, jclass cls, jlong handle, jint index,
                                                           jstring state) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  bridge_output out;
  return m && read_output(env, m, index, state, &out) ? out.dtype : -1;
}

PARE_JNIEXPORT jlongArray Java_org_pare_Module_nativeOutputShape(JNIEnv* env, jclass cls, jlong handle, jint index,
                                                                 jstring state) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  bridge_output out;
  if (!m || !read_output(env, m, index, state, &out)) return NULL;
  jlongArray shape = (*env)->NewLongArray(env, out.ndim);
  if (shape) (*env)->SetLongArrayRegion(env, shape, 0, out.ndim, (const jlong*)out.sizes);
  return shape;
}

/* The output's elements in row-major order, gathered through its strides. */
PARE_JNIEXPORT jbyteArray Java_org_pare_Module_nativeOutputData(JNIEnv* env, jclass cls, jlong handle, jint index,
                                                                jstring state) {
  (void)cls;
  bridge_method* m = as_method(env, handle);
  bridge_output out;
  if (!m || !read_output(env, m, index, state, &out)) return NULL;
  const int esize = (int)pare_dtype_element_size(out.dtype);
  int64_t numel = 1;
  for (int32_t d = 0; d < out.ndim; ++d) numel *= out.sizes[d];
  const int64_t nbytes = numel * esize;
  if (esize == 0 || nbytes > 0x7fffffff) {
    throw_message(env, "pare: output too large (or of an unknown dtype) for a Java byte[]");
    return NULL;
  }
  jbyteArray result = (*env)->NewByteArray(env, (jsize)nbytes);
  if (!result || numel == 0) return result;
  int contiguous = 1;
  int64_t expected = 1;
  for (int32_t d = out.ndim - 1; d >= 0; --d) {
    if (out.sizes[d] != 1 && out.strides[d] != expected) contiguous = 0;
    expected *= out.sizes[d];
  }
  if (contiguous) {
    (*env)->SetByteArrayRegion(env, result, 0, (jsize)nbytes, (const jbyte*)out.data);
    return result;
  }
  uint8_t* packed = (uint8_t*)pare_pal_malloc((size_t)nbytes, 64);
  if (!packed) {
    throw_message(env, "pare: out of memory reading an output");
    return NULL;
  }
  int64_t counter[PARE_MAX_DIM] = {0};
  for (int64_t i = 0; i < numel; ++i) {
    int64_t offset = 0;
    for (int32_t d = 0; d < out.ndim; ++d) offset += counter[d] * out.strides[d];
    memcpy(packed + i * esize, (const uint8_t*)out.data + offset * esize, (size_t)esize);
    for (int32_t d = out.ndim - 1; d >= 0; --d) {
      if (++counter[d] < out.sizes[d]) break;
      counter[d] = 0;
    }
  }
  (*env)->SetByteArrayRegion(env, result, 0, (jsize)nbytes, (const jbyte*)packed);
  pare_pal_free(packed);
  return result;
}
