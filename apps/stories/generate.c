/* The LLM app's generation loop in C: the C API only, no Python
 * (docs/llm.md, "The LLM app"; tests/llm/test_llm_app.py builds it against
 * the app's linux_x86_64 runtime and compares its tokens with
 * pare.generate's).
 *
 *   generate PROGRAM MAX_NEW_TOKENS PROMPT [PROMPT ...]
 *
 * PROGRAM is an LLM program file (ExecuTorch's calling convention:
 * forward(tokens int64[1, S], input_pos int64[S]) -> logits float32
 * [1, vocab], the KV cache kept as state), e.g. apps/stories/model.py
 * exported. Each PROMPT is comma-separated token ids ("1,450,4996"). For
 * every prompt, on one method instance: reset the state, run the whole
 * prompt in one execute (the prefill), then one execute per new token at
 * the next position (the decode steps), each new token the argmax of the
 * last logits (greedy, the first of equal logits as torch.argmax). Prints
 * one line of new tokens per prompt on stdout, and the prefill and decode
 * rates on stderr. Exit 0, or 2 naming the failed call and the runtime's
 * message. */

#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/c_api/pare.h"

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Parses "1,450,4996" into tokens (malloc'd); 0 on a malformed list. */
static size_t parse_prompt(const char* text, int64_t** out) {
  size_t count = 1;
  for (const char* c = text; *c; ++c) count += *c == ',';
  int64_t* tokens = malloc(count * sizeof(int64_t));
  const char* c = text;
  for (size_t i = 0; tokens != NULL && i < count; ++i) {
    char* end = NULL;
    long long value = strtoll(c, &end, 10);
    if (end == c || value < 0 || (*end != ',' && *end != '\0')) {
      free(tokens);
      return 0;
    }
    tokens[i] = (int64_t)value;
    c = end + (*end == ',');
  }
  *out = tokens;
  return tokens == NULL ? 0 : count;
}

/* The index of the largest of output 0's logits (its last dimension). */
static pare_status argmax_logits(const pare_method* method, int64_t* token) {
  pare_tensor_info logits;
  pare_status status = pare_method_output_tensor(method, 0, &logits);
  if (status != PARE_OK) return status;
  if (logits.dtype != PARE_DTYPE_FLOAT || logits.ndim < 1) {
    fprintf(stderr, "output 0 is %s of rank %d, not float32 logits: export an LLM spec (docs/llm.md)\n",
            pare_dtype_name(logits.dtype), (int)logits.ndim);
    return PARE_ERROR_INVALID_ARGUMENT;
  }
  const float* data = logits.data;
  int64_t vocab = logits.sizes[logits.ndim - 1], stride = logits.strides[logits.ndim - 1];
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i) {
    if (data[i * stride] > data[best * stride]) best = i;
  }
  *token = best;
  return PARE_OK;
}

/* Sets tokens [1, count] and input_pos [count] (positions start, start + 1,
 * ...), runs forward and picks the next token. The inputs are borrowed
 * until execute returns. */
static pare_status step(pare_method* method, const int64_t* tokens, int64_t* positions, int64_t count, int64_t start,
                        int64_t* next) {
  for (int64_t i = 0; i < count; ++i) positions[i] = start + i;
  int64_t token_sizes[2] = {1, count};
  pare_status status =
      pare_method_set_input(method, 0, PARE_DTYPE_LONG, token_sizes, 2, NULL, tokens, (size_t)count * sizeof(int64_t));
  if (status == PARE_OK) {
    status =
        pare_method_set_input(method, 1, PARE_DTYPE_LONG, &count, 1, NULL, positions, (size_t)count * sizeof(int64_t));
  }
  if (status == PARE_OK) status = pare_method_execute(method);
  if (status == PARE_OK) status = argmax_logits(method, next);
  return status;
}

/* One prompt: reset the KV cache, prefill, decode; prints the new tokens. */
static pare_status generate(pare_method* method, const int64_t* prompt, int64_t count, int64_t max_new_tokens) {
  pare_status status = pare_method_reset_state(method);
  int64_t* positions = malloc((size_t)count * sizeof(int64_t));
  if (positions == NULL) return PARE_ERROR_OUT_OF_MEMORY;
  int64_t token = 0;
  double start = now_seconds();
  if (status == PARE_OK) status = step(method, prompt, positions, count, 0, &token);
  double prefill = now_seconds() - start;
  start = now_seconds();
  for (int64_t i = 0; status == PARE_OK; ++i) {
    printf(i == 0 ? "%lld" : " %lld", (long long)token);
    fflush(stdout); /* each token as it is picked, as an app streams them */
    if (i + 1 == max_new_tokens) break;
    int64_t pos;
    status = step(method, &token, &pos, 1, count + i, &token);
  }
  double decode = now_seconds() - start;
  free(positions);
  if (status != PARE_OK) return status;
  printf("\n");
  fprintf(stderr, "prefill %lld tokens: %.1f tokens/s; decode %lld tokens: %.1f tokens/s\n", (long long)count,
          (double)count / prefill, (long long)(max_new_tokens - 1),
          max_new_tokens > 1 ? (double)(max_new_tokens - 1) / decode : 0.0);
  return PARE_OK;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s PROGRAM MAX_NEW_TOKENS PROMPT [PROMPT ...] (a prompt: token ids, e.g. 1,450,4996)\n",
            argv[0]);
    return 2;
  }
  char* end = NULL;
  long long max_new_tokens = strtoll(argv[2], &end, 10);
  if (*end != '\0' || max_new_tokens < 1) {
    fprintf(stderr, "MAX_NEW_TOKENS must be a whole number >= 1, got %s\n", argv[2]);
    return 2;
  }
  pare_program* program = NULL;
  pare_status status = pare_program_load_file(argv[1], &program);
  if (status != PARE_OK) {
    fprintf(stderr, "pare_program_load_file(%s): %s: %s\n", argv[1], pare_status_name(status),
            pare_program_error_message(program));
    pare_program_destroy(program);
    return 2;
  }
  pare_method* method = NULL;
  status = pare_method_create(program, "forward", &method);
  if (status != PARE_OK) {
    fprintf(stderr, "pare_method_create(forward): %s: %s\n", pare_status_name(status),
            method != NULL ? pare_method_error_message(method) : pare_program_error_message(program));
  }
  int exit_code = status == PARE_OK ? 0 : 2;
  for (int p = 3; exit_code == 0 && p < argc; ++p) {
    int64_t* prompt = NULL;
    size_t count = parse_prompt(argv[p], &prompt);
    if (count == 0) {
      fprintf(stderr, "prompt %s: give token ids >= 0 separated by commas, e.g. 1,450,4996\n", argv[p]);
      exit_code = 2;
      break;
    }
    status = generate(method, prompt, (int64_t)count, (int64_t)max_new_tokens);
    free(prompt);
    if (status != PARE_OK) {
      fprintf(stderr, "\nprompt %s: %s: %s\n", argv[p], pare_status_name(status), pare_method_error_message(method));
      exit_code = 2;
    }
  }
  pare_method_destroy(method);
  pare_program_destroy(program);
  return exit_code;
}
