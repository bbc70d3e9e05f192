/* Reading a soak case file (case_file.h has the format). */

#include "tools/soak/case_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const unsigned char* at;
  const unsigned char* end;
  const char* path;
  char error[256];
} Reader;

static int take(Reader* r, void* out, size_t n) {
  if ((size_t)(r->end - r->at) < n) {
    if (r->error[0] == 0) snprintf(r->error, sizeof r->error, "%s: truncated case file", r->path);
    return 0;
  }
  memcpy(out, r->at, n);
  r->at += n;
  return 1;
}

static void* aligned_copy(Reader* r, size_t n) {
  void* data = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
  if (data == NULL || !take(r, data, n)) {
    free(data);
    return NULL;
  }
  return data;
}

static int take_name(Reader* r, char* out) {
  uint32_t n = 0;
  if (!take(r, &n, 4)) return 0;
  if (n == 0 || n >= NAME_MAX_BYTES) {
    snprintf(r->error, sizeof r->error, "%s: a name of %u bytes (1 to %d)", r->path, n, NAME_MAX_BYTES - 1);
    return 0;
  }
  if (!take(r, out, n)) return 0;
  out[n] = 0;
  return 1;
}

static int take_tensor(Reader* r, Tensor* t) {
  if (!take(r, &t->dtype, 4) || !take(r, &t->itemsize, 4) || !take(r, &t->ndim, 4)) return 0;
  if (t->ndim > PARE_MAX_DIM || t->itemsize == 0 || t->itemsize > 16) {
    snprintf(r->error, sizeof r->error, "%s: a tensor of rank %u, item size %u", r->path, t->ndim, t->itemsize);
    return 0;
  }
  uint64_t numel = 1, nbytes = 0;
  for (uint32_t d = 0; d < t->ndim; ++d) {
    if (!take(r, &t->sizes[d], 8)) return 0;
    if (t->sizes[d] < 0 || t->sizes[d] > (1ll << 31)) {
      snprintf(r->error, sizeof r->error, "%s: a tensor dimension of %lld", r->path, (long long)t->sizes[d]);
      return 0;
    }
    numel *= (uint64_t)t->sizes[d];
  }
  if (!take(r, &nbytes, 8)) return 0;
  if (nbytes != numel * t->itemsize) {
    snprintf(r->error, sizeof r->error, "%s: a tensor of %llu bytes for %llu elements of %u", r->path,
             (unsigned long long)nbytes, (unsigned long long)numel, t->itemsize);
    return 0;
  }
  t->nbytes = (size_t)nbytes;
  t->data = aligned_copy(r, t->nbytes);
  return t->data != NULL;
}

static int same_signature(const Set* a, const Set* b) {
  if (a->num_inputs != b->num_inputs) return 0;
  for (uint32_t i = 0; i < a->num_inputs; ++i) {
    const Tensor* x = &a->tensors[i];
    const Tensor* y = &b->tensors[i];
    if (x->dtype != y->dtype || x->ndim != y->ndim || memcmp(x->sizes, y->sizes, x->ndim * sizeof(int64_t)) != 0)
      return 0;
  }
  return 1;
}

static void* read_whole_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  void* data = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    const long n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n + 1)) != NULL &&
        fread(data, 1, (size_t)n, f) != (size_t)n) {
      free(data);
      data = NULL;
    }
    *size = (size_t)n;
  }
  fclose(f);
  return data;
}

int read_case(const char* path, Case* c, char* error, size_t error_size) {
  size_t size = 0;
  unsigned char* file = read_whole_file(path, &size);
  if (file == NULL) {
    snprintf(error, error_size, "%s: cannot read it (%s)", path, strerror(errno));
    return 0;
  }
  Reader r = {file, file + size, path, {0}};
  char magic[8];
  uint32_t version = 0;
  uint64_t program_size = 0;
  int ok = take(&r, magic, 8) && take(&r, &version, 4);
  if (ok && (memcmp(magic, "PARESOAK", 8) != 0 || version != CASE_VERSION)) {
    snprintf(r.error, sizeof r.error, "%s: not a soak case file of version %d; write it with python -m tools.soak",
             path, CASE_VERSION);
    ok = 0;
  }
  ok = ok && take_name(&r, c->name) && take_name(&r, c->method) && take(&r, &program_size, 8);
  if (ok && program_size > (uint64_t)(r.end - r.at)) {
    snprintf(r.error, sizeof r.error, "%s: truncated case file", path);
    ok = 0;
  }
  if (ok) {
    c->program_size = (size_t)program_size;
    c->program_bytes = aligned_copy(&r, c->program_size);
    ok = c->program_bytes != NULL && take(&r, &c->num_sets, 4);
  }
  if (ok && (c->num_sets == 0 || c->num_sets > 1024)) {
    snprintf(r.error, sizeof r.error, "%s: %u input sets (1 to 1024)", path, c->num_sets);
    ok = 0;
  }
  if (ok) c->sets = calloc(c->num_sets, sizeof(Set));
  for (uint32_t k = 0; ok && k < c->num_sets; ++k) {
    Set* s = &c->sets[k];
    ok = take(&r, &s->num_inputs, 4) && take(&r, &s->num_outputs, 4);
    if (ok && (s->num_inputs > 64 || s->num_outputs == 0 || s->num_outputs > 64)) {
      snprintf(r.error, sizeof r.error, "%s: set %u has %u inputs and %u outputs", path, k, s->num_inputs,
               s->num_outputs);
      ok = 0;
    }
    if (ok) s->tensors = calloc(s->num_inputs + s->num_outputs, sizeof(Tensor));
    for (uint32_t i = 0; ok && i < s->num_inputs + s->num_outputs; ++i) ok = take_tensor(&r, &s->tensors[i]);
  }
  if (ok && r.at != r.end) {
    snprintf(r.error, sizeof r.error, "%s: %zu bytes after the last set", path, (size_t)(r.end - r.at));
    ok = 0;
  }
  free(file);
  if (!ok) {
    snprintf(error, error_size, "%s", r.error[0] ? r.error : "out of memory reading a case");
    return 0;
  }
  c->signatures = 0;
  for (uint32_t k = 0; k < c->num_sets; ++k) {
    int seen = 0;
    for (uint32_t j = 0; j < k && !seen; ++j) seen = same_signature(&c->sets[j], &c->sets[k]);
    c->signatures += !seen;
  }
  return 1;
}
