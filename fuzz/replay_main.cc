// Runs the loader fuzz target (loader_fuzzer.cc) once on each file named on
// the command line, without libFuzzer: the replay tests (tests/fuzz) link it
// with the harness against the runtime library under test, sanitized under
// PARE_SANITIZE, so a saved input (a seed, a regression) replays through
// exactly the harness that found it, control block included. Exit status 0
// when every input ran; a broken promise aborts and a sanitizer report ends
// the process as in the fuzzer.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    FILE* f = fopen(argv[i], "rb");
    if (f == nullptr) {
      fprintf(stderr, "replay: cannot open %s\n", argv[i]);
      return 2;
    }
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    // Exactly sized, as libFuzzer passes an input: reading past it is a report.
    uint8_t* data = static_cast<uint8_t*>(malloc(size > 0 ? static_cast<size_t>(size) : 1));
    if (data == nullptr || fread(data, 1, static_cast<size_t>(size), f) != static_cast<size_t>(size)) {
      fprintf(stderr, "replay: cannot read %s\n", argv[i]);
      return 2;
    }
    fclose(f);
    fprintf(stderr, "replay: %s (%ld bytes)\n", argv[i], size);
    LLVMFuzzerTestOneInput(data, static_cast<size_t>(size));
    free(data);
  }
  return 0;
}
