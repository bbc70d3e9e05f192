// Program loader: decoding of the v1 format (docs/program_format.md); the
// checks against the format's schema and of the dataflow are in
// program_validation.cc. Every read below is preceded by a bounds check
// on the exact bytes it touches; all offset arithmetic is done in uint64_t
// with explicit overflow checks, so a hostile file cannot make the loader
// read outside the buffer or allocate without bound (every count is
// limited by the bytes that must back it).

#include "runtime/executor/program_loader.h"

#include "runtime/core/format.h"

namespace pare {

using namespace loader;

Error feature_not_selected(Diagnostics& diagnostics, const char* feature) {
  return PARE_FAIL(diagnostics, Error::FeatureNotSelected,
                   "the manifest does not select build feature %s: add it to build_features in the manifest "
                   "(tools.tracer trace --features %s, or the runtime rule's build_features attribute)",
                   feature, feature);
}

Error Loader::invalid(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  program_.diagnostics_.vfail(Error::InvalidProgram, "invalid program", fmt, args);
  va_end(args);
  return Error::InvalidProgram;
}

Error Loader::fail_packed(Error code, uint32_t id, uint32_t shape, ...) {
  va_list args;
  va_start(args, shape);
  program_.diagnostics_.vfail_packed(code, "invalid program", id, shape, args);
  va_end(args);
  return code;
}

Error Loader::out_of_memory(const char* what) {
  return PARE_FAIL(program_.diagnostics_, Error::OutOfMemory, "out of memory while loading %s", what);
}

bool Loader::in_file(uint64_t offset, uint64_t count, uint64_t elem_size, uint64_t align) const {
  if (align > 1 && offset % align != 0) return false;
  uint64_t bytes = 0;
  uint64_t end = 0;
  if (__builtin_mul_overflow(count, elem_size, &bytes)) return false;
  if (__builtin_add_overflow(offset, bytes, &end)) return false;
  return end <= size_;
}

Error Loader::check_range(const char* what, uint64_t offset, uint64_t count, uint64_t elem_size, uint64_t align) {
  if (in_file(offset, count, elem_size, align)) return Error::Ok;
  if (align > 1 && offset % align != 0) {
    return PARE_INVALID("%s at offset %llu is not %llu-byte aligned", what, static_cast<unsigned long long>(offset),
                        static_cast<unsigned long long>(align));
  }
  return PARE_INVALID("%s at offset %llu (%llu x %llu bytes) extends past the end of the %llu-byte file", what,
                      static_cast<unsigned long long>(offset), static_cast<unsigned long long>(count),
                      static_cast<unsigned long long>(elem_size), static_cast<unsigned long long>(size_));
}

Error Loader::consume(uint64_t count, uint64_t elem_size, const char* what) {
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, elem_size, &bytes) || bytes > decode_budget_) {
    return PARE_INVALID("%s overlap other tables (decoded tables exceed the file size)", what);
  }
  decode_budget_ -= bytes;
  return Error::Ok;
}

Error Loader::run() {
  Diagnostics& diag = program_.diagnostics_;
  if (size_ < kHeaderSize) {
    return PARE_INVALID("the buffer is %llu bytes; a program has a %zu-byte header",
                        static_cast<unsigned long long>(size_), kHeaderSize);
  }
  if (base_[0] != 'P' || base_[1] != 'A' || base_[2] != 'R' || base_[3] != 'E') {
    return PARE_INVALID("bad magic: this is not a Pare program (expected \"PARE\")");
  }
  const uint16_t major = rd16(base_ + 4);
  const uint16_t minor = rd16(base_ + 6);
  if (major != kFormatVersionMajor) {
    return PARE_FAIL(diag, Error::InvalidProgram,
                     "unsupported program format version %u.%u: this runtime reads version %u.x; "
                     "re-export the model with a matching exporter",
                     major, minor, kFormatVersionMajor);
  }
  const uint32_t header_size = rd32(base_ + 8);
  const uint32_t flags = rd32(base_ + 12);
  const uint64_t file_size = rd64(base_ + 16);
  if (header_size != kHeaderSize) return PARE_INVALID("header_size is %u, expected 64", header_size);
  if ((flags & ~kHeaderFlagState) != 0) {
    return PARE_INVALID("header flags 0x%x set; version 1.2 defines only 0x1 (state)", flags);
  }
  has_state_ = flags != 0;
  if (has_state_ && !feature_selected(FeatureId::state)) {
    return feature_not_selected(diag, "state");
  }
  if (file_size < kHeaderSize) {
    return PARE_INVALID("file_size %llu is smaller than the %zu-byte header",
                        static_cast<unsigned long long>(file_size), kHeaderSize);
  }
  if (file_size > size_) {
    return PARE_INVALID("file_size is %llu but only %llu bytes were given: the file is truncated; copy it again",
                        static_cast<unsigned long long>(file_size), static_cast<unsigned long long>(size_));
  }
  size_ = file_size;  // trailing bytes (e.g. page padding) are ignored
  decode_budget_ = size_;
  list_visit_budget_ = kListVisitBudgetBase + kListVisitBudgetPerByte * size_;

  const uint64_t strings_offset = rd64(base_ + 24);
  const uint64_t ops_offset = rd64(base_ + 32);
  const uint64_t methods_offset = rd64(base_ + 40);
  const uint64_t data_offset = rd64(base_ + 48);
  data_size_ = rd64(base_ + 56);
  PARE_TRY(check_range("constant data segment", data_offset, data_size_, 1, kDataAlignment));
  data_base_ = base_ + data_offset;
  if (data_size_ > 0 && reinterpret_cast<uintptr_t>(data_base_) % kDataAlignment != 0) {
    // The caller's buffer is not 64-byte aligned: copy the constants once
    // so kernels can rely on aligned data. (Keep program buffers aligned to
    // use constants in place.)
    void* copy = pare_pal_malloc(static_cast<size_t>(data_size_), kDataAlignment);
    if (copy == nullptr) return out_of_memory("the constant data segment");
    __builtin_memcpy(copy, data_base_, static_cast<size_t>(data_size_));
    program_.owned_data_ = copy;
    data_base_ = static_cast<const uint8_t*>(copy);
  }

  PARE_TRY(decode_strings(strings_offset));
  PARE_TRY(decode_ops(ops_offset));
  PARE_TRY(decode_methods(methods_offset));
  return Error::Ok;
}

Error Loader::decode_strings(uint64_t offset) {
  PARE_TRY(check_range("string table", offset, 8, 1, 8));
  const uint32_t count = rd32(base_ + offset);
  if (rd32(base_ + offset + 4) != 0) return PARE_INVALID("string table reserved field is not zero");
  PARE_TRY(check_range("string table entries", offset + 8, count, 16, 8));
  PARE_TRY(consume(count, 16, "string table entries"));
  const char** strings = program_.allocator_.allocate_array<const char*>(count);
  if (strings == nullptr && count > 0) return out_of_memory("the string table");
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* entry = base_ + offset + 8 + 16ull * i;
    const uint64_t str_offset = rd64(entry);
    const uint64_t length = rd64(entry + 8);
    // The string plus its NUL terminator must be inside the file.
    if (length >= size_ || !in_file(str_offset, length + 1, 1, 1)) {
      return PARE_INVALID("string %u (offset %llu, length %llu) is outside the file", i,
                          static_cast<unsigned long long>(str_offset), static_cast<unsigned long long>(length));
    }
    PARE_TRY(consume(length + 1, 1, "strings"));
    // An embedded NUL only shortens the string as C code sees it; the
    // terminator is what keeps reads in bounds.
    const uint8_t* bytes = base_ + str_offset;
    if (bytes[length] != 0) return PARE_INVALID("string %u is not NUL-terminated", i);
    strings[i] = reinterpret_cast<const char*>(bytes);
  }
  program_.strings_ = strings;
  program_.num_strings_ = count;
  return Error::Ok;
}

namespace {

// The backend of a delegate call's init operator ("pare::delegate_init.<backend>"), else null.
const char* delegate_backend(const char* op) {
  const char kPrefix[] = "pare::delegate_init.";
  for (size_t i = 0; i + 1 < sizeof(kPrefix); ++i) {
    if (op[i] != kPrefix[i]) return nullptr;
  }
  return op + sizeof(kPrefix) - 1;
}

}  // namespace

Error Loader::decode_ops(uint64_t offset) {
  Diagnostics& diag = program_.diagnostics_;
  PARE_TRY(check_range("operator table", offset, 4, 1, 4));
  const uint32_t count = rd32(base_ + offset);
  PARE_TRY(check_range("operator table entries", offset + 4, count, 4, 4));
  PARE_TRY(consume(count, 4, "operator table entries"));
  ProgramOp* ops = program_.allocator_.allocate_array<ProgramOp>(count);
  if (ops == nullptr && count > 0) return out_of_memory("the operator table");
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t name_index = rd32(base_ + offset + 4 + 4ull * i);
    if (name_index >= program_.num_strings_) {
      return PARE_INVALID("operator %u names string %u; the program has %u strings", i, name_index,
                          program_.num_strings_);
    }
    const char* name = program_.strings_[name_index];
    const OpEntry* entry = find_op(name);
    if (entry == nullptr) {
      // A delegate call to a backend this runtime lacks (docs/delegates.md):
      // named as a backend, with the CLI options that fix it.
      const char* backend = delegate_backend(name);
      if (backend != nullptr) {
        return PARE_FAIL(diag, is_known_op(name) ? Error::OperatorNotSelected : Error::OperatorNotFound,
                         "the program delegates to backend '%s', which this runtime lacks (the manifest %s "
                         "does not select %s): trace the model with --delegate %s, or re-export it without it",
                         backend, selection::kManifestName, name, backend);
      }
      if (is_known_op(name)) {
        return PARE_FAIL(diag, Error::OperatorNotSelected,
                         "the manifest (%s) does not select %s: re-trace the model or add it to the "
                         "manifest (this build's runtime was compiled without it)",
                         selection::kManifestName, name);
      }
      return PARE_FAIL(diag, Error::OperatorNotFound,
                       "operator %s is not implemented by this runtime (no kernel in "
                       "runtime/inventory/*/*.ops.def); export the model with supported ops or add a kernel",
                       name);
    }
    ops[i] = ProgramOp{name, entry, static_cast<size_t>(entry - kOpTable)};
  }
  program_.ops_ = ops;
  program_.num_ops_ = count;
  return Error::Ok;
}

Error Loader::decode_methods(uint64_t offset) {
  PARE_TRY(check_range("method table", offset, 8, 1, 8));
  const uint32_t count = rd32(base_ + offset);
  if (rd32(base_ + offset + 4) != 0) return PARE_INVALID("method table reserved field is not zero");
  if (count == 0) return PARE_INVALID("the program has no methods");
  if (count > kMaxMethods) {
    return PARE_FAIL(program_.diagnostics_, Error::LimitExceeded,
                     "the program has %u methods; this runtime supports up to %llu", count,
                     static_cast<unsigned long long>(kMaxMethods));
  }
  PARE_TRY(check_range("method table entries", offset + 8, count, 8, 8));
  PARE_TRY(consume(count, 8, "method table entries"));
  MethodDesc* methods = program_.allocator_.allocate_array<MethodDesc>(count);
  if (methods == nullptr) return out_of_memory("the method table");
  program_.methods_ = methods;
  if (feature_selected(FeatureId::state) && has_state_) {
    // Format 1.2: count state table offsets follow the method offsets.
    PARE_TRY(check_range("state table offsets", offset + 8 + 8ull * count, count, 8, 8));
    PARE_TRY(consume(count, 8, "state table offsets"));
  }
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t record = rd64(base_ + offset + 8 + 8ull * i);
    PARE_TRY(check_range("method record", record, 1, kMethodRecordSize, 8));
    PARE_TRY(consume(1, kMethodRecordSize, "method records"));
    const bool stateful = feature_selected(FeatureId::state) && has_state_;
    const uint64_t states = stateful ? rd64(base_ + offset + 8 + 8ull * (count + i)) : 0;
    PARE_TRY(decode_method(i, record, states, methods[i]));
    program_.num_methods_ = i + 1;
  }
  return Error::Ok;
}

Error Loader::decode_method(uint32_t index, uint64_t offset, uint64_t states_offset, MethodDesc& m) {
  const uint8_t* r = base_ + offset;
  const uint32_t name_index = rd32(r);
  m.num_values = rd32(r + 4);
  m.num_inputs = rd32(r + 8);
  m.num_outputs = rd32(r + 12);
  m.num_instructions = rd32(r + 16);
  m.num_init_instructions = rd32(r + 20);
  const uint64_t values_offset = rd64(r + 24);
  const uint64_t io_offset = rd64(r + 32);
  const uint64_t instructions_offset = rd64(r + 40);

  if (name_index >= program_.num_strings_) {
    return PARE_INVALID("method %u names string %u; the program has %u strings", index, name_index,
                        program_.num_strings_);
  }
  m.name = program_.strings_[name_index];
  method_name_ = m.name;
  for (uint32_t j = 0; j < index; ++j) {
    if (string_equal(program_.methods_[j].name, m.name)) {
      return PARE_INVALID("two methods are named '%s'", m.name);
    }
  }
  PARE_TRY(check_range("value table", values_offset, m.num_values, kValueRecordSize, 8));
  const uint64_t num_io = static_cast<uint64_t>(m.num_inputs) + m.num_outputs;
  PARE_TRY(check_range("method inputs/outputs", io_offset, num_io, 4, 4));
  PARE_TRY(check_range("instruction table", instructions_offset, m.num_instructions, kInstructionRecordSize, 8));
  PARE_TRY(consume(m.num_values, kValueRecordSize, "value tables"));
  PARE_TRY(consume(num_io, 4, "method input/output lists"));
  PARE_TRY(consume(m.num_instructions, kInstructionRecordSize, "instruction tables"));
  if (m.num_init_instructions > m.num_instructions) {
    return PARE_INVALID("method '%s' has %u init instructions but only %u instructions", m.name,
                        m.num_init_instructions, m.num_instructions);
  }

  LoadAllocator& alloc = program_.allocator_;
  ValueDesc* values = alloc.allocate_array<ValueDesc>(m.num_values);
  ValueKind* kinds = alloc.allocate_array<ValueKind>(m.num_values);
  bool* constants = alloc.allocate_array<bool>(m.num_values);
  uint32_t* io = alloc.allocate_array<uint32_t>(static_cast<size_t>(num_io));
  InstructionDesc* instructions = alloc.allocate_array<InstructionDesc>(m.num_instructions);
  uint32_t* last_use = alloc.allocate_array<uint32_t>(m.num_values);
  if ((m.num_values > 0 && (values == nullptr || kinds == nullptr || constants == nullptr || last_use == nullptr)) ||
      (num_io > 0 && io == nullptr) || (m.num_instructions > 0 && instructions == nullptr)) {
    return out_of_memory("a method's tables");
  }

  // Pass 1: kinds, so that lists can check what their elements refer to.
  for (uint32_t i = 0; i < m.num_values; ++i) {
    const uint8_t* rec = base_ + values_offset + kValueRecordSize * i;
    const uint8_t kind = rd8(rec);
    if (kind >= kNumValueKinds) {
      return PARE_INVALID("method '%s' value %u has unknown kind %u", m.name, i, kind);
    }
    kinds[i] = static_cast<ValueKind>(kind);
    constants[i] = (rd8(rec + 2) & kFlagConstant) != 0;
  }
  for (uint32_t i = 0; i < m.num_values; ++i) {
    PARE_TRY(decode_value(m, i, base_ + values_offset + kValueRecordSize * i, kinds, constants, values[i]));
  }
  m.values = values;

  for (uint64_t k = 0; k < num_io; ++k) {
    io[k] = rd32(base_ + io_offset + 4 * k);
    if (io[k] >= m.num_values) {
      return PARE_INVALID("method '%s' %s %llu refers to value %u; the method has %u values", m.name,
                          k < m.num_inputs ? "input" : "output",
                          static_cast<unsigned long long>(k < m.num_inputs ? k : k - m.num_inputs), io[k],
                          m.num_values);
    }
  }
  m.inputs = io;
  m.outputs = io + m.num_inputs;

  for (uint32_t i = 0; i < m.num_instructions; ++i) {
    const uint8_t* rec = base_ + instructions_offset + kInstructionRecordSize * i;
    InstructionDesc& ins = instructions[i];
    ins.op = rd32(rec);
    ins.num_inputs = rd16(rec + 4);
    ins.num_outputs = rd16(rec + 6);
    const uint64_t args_offset = rd64(rec + 8);
    if (ins.op >= program_.num_ops_) {
      return PARE_INVALID("method '%s' instruction %u uses operator %u; the program has %u operators", m.name, i,
                          ins.op, program_.num_ops_);
    }
    const uint64_t num_args = static_cast<uint64_t>(ins.num_inputs) + ins.num_outputs;
    PARE_TRY(check_range("instruction arguments", args_offset, num_args, 4, 4));
    PARE_TRY(consume(num_args, 4, "instruction arguments"));
    uint32_t* args = alloc.allocate_array<uint32_t>(static_cast<size_t>(num_args));
    if (args == nullptr && num_args > 0) return out_of_memory("instruction arguments");
    for (uint64_t k = 0; k < num_args; ++k) {
      args[k] = rd32(base_ + args_offset + 4 * k);
      if (args[k] >= m.num_values) {
        return PARE_INVALID(
            "method '%s' instruction %u (%s) argument %llu refers to value %u; the "
            "method has %u values",
            m.name, i, program_.ops_[ins.op].name, static_cast<unsigned long long>(k), args[k], m.num_values);
      }
    }
    ins.args = args;
  }
  m.instructions = instructions;

  PARE_TRY(check_dataflow(m, values, last_use));
  if (feature_selected(FeatureId::state)) PARE_TRY(decode_states(m, states_offset, last_use));
  m.last_use = last_use;
  return Error::Ok;
}

Error Loader::decode_value(const MethodDesc& m, uint32_t id, const uint8_t* rec, const ValueKind* kinds,
                           const bool* constants, ValueDesc& v) {
  Diagnostics& diag = program_.diagnostics_;
  const uint8_t dtype_code = rd8(rec + 1);
  const uint32_t a = rd32(rec + 4);
  const uint64_t b = rd64(rec + 8);
  const uint64_t c = rd64(rec + 16);
  const uint64_t d = rd64(rec + 24);
  v.kind = kinds[id];
  v.constant = constants[id];
  v.dtype = ScalarType::Undefined;
  v.int_refs = nullptr;
  // Reserved bits, dtype, constancy and unused fields: the schema's checks.
  PARE_TRY(check_value_record(m, id, rec, v.kind, v.constant));
  switch (v.kind) {
    case ValueKind::None: return Error::Ok;

    case ValueKind::Int:
    case ValueKind::Double:
      if (v.kind == ValueKind::Int)
        v.int_value = static_cast<int64_t>(b);
      else
        v.double_value = __builtin_bit_cast(double, b);
      return Error::Ok;

    case ValueKind::Bool: v.bool_value = a != 0; return Error::Ok;

    case ValueKind::String:
      if (a >= program_.num_strings_) {
        return PARE_INVALID("method '%s' value %u (str) is malformed", m.name, id);
      }
      v.string = program_.strings_[a];
      return Error::Ok;

    case ValueKind::IntList: {
      if (a == 0 && (b != 0 || c != 0)) {
        return PARE_INVALID("method '%s' value %u (int[]) has unused fields set", m.name, id);
      }
      v.count = a;
      if (a == 0) {
        v.ints = nullptr;
        return Error::Ok;
      }
      PARE_TRY(check_range("int list", b, a, 8, 8));
      PARE_TRY(consume(a, 8, "int lists"));
      int64_t* ints = program_.allocator_.allocate_array<int64_t>(a);
      if (ints == nullptr) return out_of_memory("an int list");
      for (uint32_t k = 0; k < a; ++k) ints[k] = static_cast<int64_t>(rd64(base_ + b + 8ull * k));
      v.ints = ints;
      if (c != 0) {
        if (!feature_selected(FeatureId::dynamic_shapes)) return feature_not_selected(diag, "dynamic_shapes");
        PARE_TRY(check_range("int list references", c, a, 4, 4));
        PARE_TRY(consume(a, 4, "int list references"));
        uint32_t* refs = program_.allocator_.allocate_array<uint32_t>(a);
        if (refs == nullptr) return out_of_memory("an int list");
        for (uint32_t k = 0; k < a; ++k) {
          refs[k] = rd32(base_ + c + 4ull * k);
          if (refs[k] != kNoValue && (refs[k] >= m.num_values || kinds[refs[k]] != ValueKind::Int)) {
            return PARE_INVALID(
                "method '%s' value %u (int[]) element %u refers to value %u, which is "
                "not an int value",
                m.name, id, k, refs[k]);
          }
        }
        v.int_refs = refs;
      }
      return Error::Ok;
    }

    case ValueKind::DoubleList: {
      if (a == 0 && b != 0) {
        return PARE_INVALID("method '%s' value %u (float[]) has unused fields set", m.name, id);
      }
      v.count = a;
      v.doubles = nullptr;
      if (a == 0) return Error::Ok;
      PARE_TRY(check_range("float list", b, a, 8, 8));
      PARE_TRY(consume(a, 8, "float lists"));
      double* doubles = program_.allocator_.allocate_array<double>(a);
      if (doubles == nullptr) return out_of_memory("a float list");
      for (uint32_t k = 0; k < a; ++k) doubles[k] = __builtin_bit_cast(double, rd64(base_ + b + 8ull * k));
      v.doubles = doubles;
      return Error::Ok;
    }

    case ValueKind::TensorList: {
      if (a == 0 && b != 0) {
        return PARE_INVALID("method '%s' value %u (Tensor[]) has unused fields set", m.name, id);
      }
      v.count = a;
      v.value_ids = nullptr;
      if (a == 0) return Error::Ok;
      PARE_TRY(check_range("tensor list", b, a, 4, 4));
      PARE_TRY(consume(a, 4, "tensor lists"));
      uint32_t* ids = program_.allocator_.allocate_array<uint32_t>(a);
      if (ids == nullptr) return out_of_memory("a tensor list");
      for (uint32_t k = 0; k < a; ++k) {
        ids[k] = rd32(base_ + b + 4ull * k);
        // None elements (format 1.1) make a Tensor?[] argument (index_put's
        // indices); kernels taking Tensor[] refuse them (KernelArgs::tensor_list).
        if (ids[k] >= m.num_values || (kinds[ids[k]] != ValueKind::Tensor && kinds[ids[k]] != ValueKind::None)) {
          return PARE_INVALID(
              "method '%s' value %u (Tensor[]) element %u refers to value %u, which is "
              "not a tensor value",
              m.name, id, k, ids[k]);
        }
      }
      v.value_ids = ids;
      return Error::Ok;
    }

    case ValueKind::Object: {
      if (a >= program_.num_strings_) {
        return PARE_INVALID("method '%s' value %u (Object) is malformed", m.name, id);
      }
      const char* class_name = program_.strings_[a];
      ClassId class_id = ClassId::kCount;
      if (!find_class(class_name, &class_id)) {
        return PARE_INVALID("method '%s' value %u has unknown custom class '%s'", m.name, id, class_name);
      }
      if (!class_selected(class_id)) {
        return PARE_FAIL(diag, Error::ClassNotSelected,
                         "the manifest does not select custom class %s: re-trace the model or add "
                         "it to custom_classes in the manifest",
                         class_name);
      }
      v.class_id = class_id;
      return Error::Ok;
    }

    case ValueKind::Tensor: {
      if (v.constant || dtype_code != kUnknownDtypeCode) {
        if (!is_supported_scalar_type_code(dtype_code)) {
          return PARE_INVALID("method '%s' value %u has unsupported dtype code %u", m.name, id, dtype_code);
        }
        v.dtype = static_cast<ScalarType>(dtype_code);
      }
      if (a == kUnknownRankCode && !v.constant) {
        if (b != 0) return PARE_INVALID("method '%s' value %u (Tensor) has unused fields set", m.name, id);
        v.dim = ValueDesc::kUnknownRank;
        v.sizes = nullptr;
        return Error::Ok;
      }
      if (a > kMaxDim) {
        return PARE_FAIL(diag, Error::LimitExceeded,
                         "method '%s' value %u has rank %u; this runtime supports up to %zu dims", m.name, id, a,
                         kMaxDim);
      }
      v.dim = static_cast<uint8_t>(a);
      int64_t* sizes = nullptr;
      if (a > 0) {
        PARE_TRY(check_range("tensor sizes", b, a, 8, 8));
        PARE_TRY(consume(a, 8, "tensor sizes"));
        sizes = program_.allocator_.allocate_array<int64_t>(a);
        if (sizes == nullptr) return out_of_memory("tensor sizes");
        for (uint32_t k = 0; k < a; ++k) {
          sizes[k] = static_cast<int64_t>(rd64(base_ + b + 8ull * k));
          if (sizes[k] < (v.constant ? 0 : -1)) {
            return PARE_INVALID("method '%s' value %u has size %lld in dim %u", m.name, id,
                                static_cast<long long>(sizes[k]), k);
          }
        }
      } else if (b != 0) {
        return PARE_INVALID("method '%s' value %u (0-dim Tensor) has a sizes offset", m.name, id);
      }
      v.sizes = sizes;
      if (!v.constant) return Error::Ok;
      size_t numel = 0;
      uint64_t nbytes = 0;
      if (!checked_numel(IntArrayRef(sizes, a), &numel) ||
          __builtin_mul_overflow(static_cast<uint64_t>(numel), element_size(v.dtype), &nbytes)) {
        return PARE_INVALID("method '%s' value %u: constant tensor size overflows", m.name, id);
      }
      uint64_t end = 0;
      if (d != nbytes) {
        return PARE_INVALID("method '%s' value %u: constant data is %llu bytes but its sizes and dtype need %llu",
                            m.name, id, static_cast<unsigned long long>(d), static_cast<unsigned long long>(nbytes));
      }
      if (c % kDataAlignment != 0) {
        return PARE_INVALID("method '%s' value %u: constant data offset %llu is not %llu-byte aligned", m.name, id,
                            static_cast<unsigned long long>(c), static_cast<unsigned long long>(kDataAlignment));
      }
      if (__builtin_add_overflow(c, d, &end) || end > data_size_) {
        return PARE_INVALID(
            "method '%s' value %u: constant data (offset %llu, %llu bytes) extends past the "
            "%llu-byte data segment",
            m.name, id, static_cast<unsigned long long>(c), static_cast<unsigned long long>(d),
            static_cast<unsigned long long>(data_size_));
      }
      v.data = data_base_ + c;
      return Error::Ok;
    }
  }
  return PARE_INVALID("method '%s' value %u has unknown kind", m.name, id);
}

// ---------------------------------------------------------------------------

Program::~Program() { reset(); }

void Program::reset() {
  pare_pal_free(owned_buffer_);
  pare_pal_free(owned_data_);
  owned_buffer_ = nullptr;
  owned_data_ = nullptr;
  allocator_.release();
  strings_ = nullptr;
  num_strings_ = 0;
  ops_ = nullptr;
  num_ops_ = 0;
  methods_ = nullptr;
  num_methods_ = 0;
  loaded_ = false;
}

Error Program::load(const void* data, size_t size, uint32_t flags) {
  diagnostics_.clear();
  if (loaded_) return PARE_FAIL(diagnostics_, Error::InvalidState, "this program handle is already loaded");
  if (data == nullptr && size > 0) {
    return PARE_FAIL(diagnostics_, Error::InvalidArgument, "program data is null but size is %zu", size);
  }
  if ((flags & ~kLoadCopyBuffer) != 0) {
    return PARE_FAIL(diagnostics_, Error::InvalidArgument, "unknown load flags 0x%x", flags);
  }
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  if ((flags & kLoadCopyBuffer) != 0 && size > 0) {
    void* copy = pare_pal_malloc(size, 64);
    if (copy == nullptr) {
      return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory copying a %zu-byte program", size);
    }
    __builtin_memcpy(copy, data, size);
    owned_buffer_ = copy;
    bytes = static_cast<const uint8_t*>(copy);
  }
  Loader loader(*this, bytes != nullptr ? bytes : kEmptyBuffer, size);
  const Error error = loader.run();
  if (error != Error::Ok) {
    // Keep the message, drop everything else.
    pare_pal_free(owned_buffer_);
    pare_pal_free(owned_data_);
    owned_buffer_ = nullptr;
    owned_data_ = nullptr;
    allocator_.release();
    num_methods_ = 0;
    methods_ = nullptr;
    return error;
  }
  loaded_ = true;
  return Error::Ok;
}

Error Program::load_file(const char* path) {
  diagnostics_.clear();
  if (path == nullptr) return PARE_FAIL(diagnostics_, Error::InvalidArgument, "program path is null");
  void* data = nullptr;
  size_t size = 0;
  const int status = pare_pal_read_file(path, 64, &data, &size);
  if (status == -2) {
    return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory reading program file '%s'", path);
  }
  if (status != 0) {
    return PARE_FAIL(diagnostics_, Error::FileError, "cannot read program file '%s'", path);
  }
  const Error error = load(data, size, 0);
  if (error != Error::Ok) {
    pare_pal_free(data);
    return error;
  }
  owned_buffer_ = data;
  return Error::Ok;
}

const MethodDesc* Program::find_method(const char* name) const {
  for (uint32_t i = 0; i < num_methods_; ++i) {
    if (string_equal(methods_[i].name, name)) return &methods_[i];
  }
  return nullptr;
}

}  // namespace pare
