#pragma once
/* The slice of the Java Native Interface Pare's bridge uses, declared from
 * the JNI specification (the function-table indices of "JNI Functions").
 *
 * Why not <jni.h>: OpenJDK's jni.h includes <stdio.h> and <stdarg.h>, which a
 * freestanding Android build has no sysroot for; the NDK's copy is not on
 * this machine either. JNIEnv is a pointer to a table of function pointers
 * whose layout is fixed by the spec, so declaring the entries we call (and
 * padding the rest) is exact. tests/mobile/test_jni_layout.py compiles this
 * header next to the JDK's jni.h and checks every offset.
 */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t jint;
typedef int64_t jlong;
typedef int8_t jbyte;
typedef uint8_t jboolean;
typedef jint jsize;

typedef struct pare_jni_opaque* jobject;
typedef jobject jclass;
typedef jobject jstring;
typedef jobject jarray;
typedef jarray jbyteArray;
typedef jarray jlongArray;
typedef jobject jthrowable;

#define PARE_JNI_VERSION_1_6 0x00010006
#define PARE_JNI_ERR (-1)
#define PARE_JNIEXPORT __attribute__((visibility("default")))

struct pare_jni_interface;
typedef const struct pare_jni_interface* JNIEnv;

/* Entries at their specified indices; the gaps are the functions Pare does
 * not call. */
struct pare_jni_interface {
  void* unused_0_3[4];
  jint (*GetVersion)(JNIEnv* env); /* 4 */
  void* unused_5[1];
  jclass (*FindClass)(JNIEnv* env, const char* name); /* 6 */
  void* unused_7_13[7];
  jint (*ThrowNew)(JNIEnv* env, jclass clazz, const char* message); /* 14 */
  void* unused_15_22[8];
  void (*DeleteLocalRef)(JNIEnv* env, jobject ref); /* 23 */
  void* unused_24_166[143];
  jstring (*NewStringUTF)(JNIEnv* env, const char* utf); /* 167 */
  void* unused_168[1];
  const char* (*GetStringUTFChars)(JNIEnv* env, jstring s, jboolean* is_copy); /* 169 */
  void (*ReleaseStringUTFChars)(JNIEnv* env, jstring s, const char* chars);    /* 170 */
  jsize (*GetArrayLength)(JNIEnv* env, jarray array);                          /* 171 */
  void* unused_172_175[4];
  jbyteArray (*NewByteArray)(JNIEnv* env, jsize length); /* 176 */
  void* unused_177_179[3];
  jlongArray (*NewLongArray)(JNIEnv* env, jsize length); /* 180 */
  void* unused_181_199[19];
  void (*GetByteArrayRegion)(JNIEnv* env, jbyteArray a, jsize start, jsize len, jbyte* buf); /* 200 */
  void* unused_201_203[3];
  void (*GetLongArrayRegion)(JNIEnv* env, jlongArray a, jsize start, jsize len, jlong* buf); /* 204 */
  void* unused_205_207[3];
  void (*SetByteArrayRegion)(JNIEnv* env, jbyteArray a, jsize start, jsize len, const jbyte* buf); /* 208 */
  void* unused_209_211[3];
  void (*SetLongArrayRegion)(JNIEnv* env, jlongArray a, jsize start, jsize len, const jlong* buf); /* 212 */
  void* unused_213_227[15];
  jboolean (*ExceptionCheck)(JNIEnv* env); /* 228 */
};

#ifdef __cplusplus
}
#endif
