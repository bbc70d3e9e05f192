// Host test of the smoke library, built with the linux_x86_64 toolchain.
#include <stdio.h>

#include "toolchains/smoke/smoke.h"

int main() {
  int failures = 0;
  const int cases[][2] = {{20, 42}, {0, 2}, {-1, 0}};
  for (const auto& c : cases) {
    const int got = pare_smoke_answer(c[0]);
    if (got != c[1]) {
      fprintf(stderr, "pare_smoke_answer(%d) = %d, want %d\n", c[0], got, c[1]);
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
