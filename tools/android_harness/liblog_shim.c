// Stand-in for Android's liblog.so under qemu-aarch64 + glibc: the two
// logging entry points the runtime's PAL may call, printed to stderr.
#include <stdarg.h>
#include <stdio.h>

static const char* priority_name(int prio) {
  static const char* const names[] = {"?", "?", "V", "D", "I", "W", "E", "F", "S"};
  return (prio >= 0 && prio < 9) ? names[prio] : "?";
}

__attribute__((visibility("default"))) int __android_log_write(int prio, const char* tag, const char* msg) {
  return fprintf(stderr, "%s/%s: %s\n", priority_name(prio), tag ? tag : "", msg ? msg : "");
}

__attribute__((visibility("default"))) int __android_log_print(int prio, const char* tag, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return __android_log_write(prio, tag, buf);
}
