// The example backend (docs/delegates.md, "Writing a backend"): the
// smallest complete backend, for the tests and as a model to copy. Its
// "device" runs float32 add, mul and relu over same-sized contiguous
// tensors; its blob (written by pare/delegates.py, ExampleBackend) is a
// straight-line register program:
//
//   offset 0   u8[4]  magic "PXEB"
//          4   u16    version, 1
//          6   u16    num_inputs     registers [0, num_inputs) are the inputs
//          8   u16    num_outputs
//         10   u16    num_registers  <= kMaxRegisters
//         12   u32    num_instructions
//         16   num_instructions x 12 bytes: u8 opcode, u8 0, u16 dst,
//                     u16 a, u16 b (0 unless add/mul), f32 immediate
//                     (0 unless add_scalar/mul_scalar)
//          .   num_outputs x u16: the output registers
//
// Each instruction writes a register no other writes and reads registers
// written before it; the blob ends right after the output list. init
// checks all of it, so a corrupt blob fails there and execute trusts it.
// Its "driver" is missing when PARE_EXAMPLE_BACKEND=unavailable, which is
// how the tests exercise an unavailable backend.

#include "runtime/kernels/delegate/delegate.h"
#include "runtime/pal/pal.h"

namespace pare {
namespace backends {
namespace example {
namespace {

enum Opcode : uint8_t { kAdd = 1, kMul = 2, kRelu = 3, kAddScalar = 4, kMulScalar = 5 };
constexpr size_t kHeaderBytes = 16;
constexpr size_t kInstructionBytes = 12;
constexpr uint32_t kMaxRegisters = 4096;

struct Instruction {
  uint8_t opcode;
  uint16_t dst;
  uint16_t a;
  uint16_t b;
  float immediate;
};

struct Program {
  uint32_t num_inputs;
  uint32_t num_outputs;
  uint32_t num_registers;
  uint32_t num_instructions;
  const Instruction* instructions;
  const uint16_t* outputs;
};

uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t* p) { return rd16(p) | (static_cast<uint32_t>(rd16(p + 2)) << 16); }

bool is_available(const char** reason) {
  const char* setting = pare_pal_getenv("PARE_EXAMPLE_BACKEND");
  const char kUnavailable[] = "unavailable";
  bool off = setting != nullptr;
  for (size_t i = 0; off && i < sizeof(kUnavailable); ++i) off = setting[i] == kUnavailable[i];
  *reason = "PARE_EXAMPLE_BACKEND=unavailable";
  return !off;
}

Error init(KernelContext& ctx, const BackendBlob& blob, void** handle) {
  const uint8_t* p = blob.data;
  PARE_CHECK_OR_RETURN(ctx, blob.size >= kHeaderBytes && p[0] == 'P' && p[1] == 'X' && p[2] == 'E' && p[3] == 'B',
                       Error::InvalidProgram, "the example backend's blob is corrupt (no PXEB header); re-export it");
  PARE_CHECK_OR_RETURN(ctx, rd16(p + 4) == 1, Error::InvalidProgram,
                       "the example backend's blob has version %u; this runtime reads version 1: re-export it",
                       static_cast<unsigned>(rd16(p + 4)));
  Program program{rd16(p + 6), rd16(p + 8), rd16(p + 10), rd32(p + 12), nullptr, nullptr};
  const uint64_t expected =
      kHeaderBytes + uint64_t{program.num_instructions} * kInstructionBytes + uint64_t{program.num_outputs} * 2;
  PARE_CHECK_OR_RETURN(ctx, blob.size == expected, Error::InvalidProgram,
                       "the example backend's blob is corrupt (%zu bytes, its header says %llu); re-export it",
                       blob.size, static_cast<unsigned long long>(expected));
  PARE_CHECK_OR_RETURN(
      ctx,
      program.num_registers <= kMaxRegisters && program.num_inputs <= program.num_registers && program.num_outputs > 0,
      Error::InvalidProgram,
      "the example backend's blob is corrupt (%u inputs, %u outputs, %u registers); re-export it", program.num_inputs,
      program.num_outputs, program.num_registers);
  PARE_TRY_ASSIGN(void* code,
                  ctx.allocate_persistent(program.num_instructions * sizeof(Instruction) +
                                              program.num_outputs * sizeof(uint16_t) + program.num_registers,
                                          alignof(Instruction)));
  Instruction* instructions = static_cast<Instruction*>(code);
  uint16_t* outputs = reinterpret_cast<uint16_t*>(instructions + program.num_instructions);
  uint8_t* defined = reinterpret_cast<uint8_t*>(outputs + program.num_outputs);
  for (uint32_t r = 0; r < program.num_registers; ++r) defined[r] = r < program.num_inputs ? 1 : 0;
  for (uint32_t i = 0; i < program.num_instructions; ++i) {
    const uint8_t* q = p + kHeaderBytes + i * kInstructionBytes;
    Instruction& in = instructions[i];
    in.opcode = q[0];
    in.dst = rd16(q + 2);
    in.a = rd16(q + 4);
    in.b = rd16(q + 6);
    const uint32_t bits = rd32(q + 8);
    __builtin_memcpy(&in.immediate, &bits, sizeof(float));
    const bool binary = in.opcode == kAdd || in.opcode == kMul;
    const bool scalar = in.opcode == kAddScalar || in.opcode == kMulScalar;
    const bool valid = (binary || scalar || in.opcode == kRelu) && q[1] == 0 && in.dst < program.num_registers &&
                       !defined[in.dst] && in.a < program.num_registers && defined[in.a] &&
                       (binary ? in.b < program.num_registers && defined[in.b] : in.b == 0) && (scalar || bits == 0);
    PARE_CHECK_OR_RETURN(ctx, valid, Error::InvalidProgram,
                         "the example backend's blob is corrupt (instruction %u: opcode %u, registers %u, %u, %u); "
                         "re-export it",
                         i, static_cast<unsigned>(in.opcode), static_cast<unsigned>(in.dst),
                         static_cast<unsigned>(in.a), static_cast<unsigned>(in.b));
    defined[in.dst] = 1;
  }
  for (uint32_t o = 0; o < program.num_outputs; ++o) {
    outputs[o] = rd16(p + kHeaderBytes + program.num_instructions * kInstructionBytes + 2 * o);
    PARE_CHECK_OR_RETURN(ctx, outputs[o] < program.num_registers && defined[outputs[o]], Error::InvalidProgram,
                         "the example backend's blob is corrupt (output %u reads register %u); re-export it", o,
                         static_cast<unsigned>(outputs[o]));
  }
  PARE_TRY_ASSIGN(void* header, ctx.allocate_persistent(sizeof(Program), alignof(Program)));
  program.instructions = instructions;
  program.outputs = outputs;
  *static_cast<Program*>(header) = program;
  *handle = header;
  return Error::Ok;
}

Error execute(KernelContext& ctx, void* handle, TensorList inputs, TensorList outputs) {
  const Program& program = *static_cast<const Program*>(handle);
  PARE_CHECK_OR_RETURN(ctx, inputs.size == program.num_inputs && outputs.size == program.num_outputs,
                       Error::InvalidArgument,
                       "the example backend's part takes %u inputs and %u outputs, got %zu and %zu", program.num_inputs,
                       program.num_outputs, inputs.size, outputs.size);
  PARE_CHECK_OR_RETURN(ctx, program.num_inputs > 0, Error::InvalidArgument,
                       "the example backend's part has no input to take its sizes from; re-export it");
  const Tensor& first = inputs.items[0]->tensor;
  for (uint32_t i = 0; i < program.num_inputs; ++i) {
    const Value& v = *inputs.items[i];
    bool same = v.is_tensor() && v.tensor.dtype == ScalarType::Float && v.tensor.dim == first.dim;
    for (size_t d = 0; same && d < first.dim; ++d) same = v.tensor.sizes[d] == first.sizes[d];
    PARE_CHECK_OR_RETURN(ctx, same && (v.tensor.numel() == 0 || v.tensor.is_contiguous()), Error::InvalidArgument,
                         "the example backend runs contiguous Float tensors of one size; input %u is not one of "
                         "input 0's sizes %s",
                         i, sizes_to_string(first.size_span()).text);
  }
  const int64_t n = static_cast<int64_t>(first.numel());
  const uint32_t temporaries = program.num_registers - program.num_inputs;
  float* scratch = nullptr;
  if (temporaries > 0 && n > 0) {
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(n) * temporaries * sizeof(float)));
    scratch = static_cast<float*>(memory);
  }
  auto reg = [&](uint32_t r) -> float* {
    return r < program.num_inputs ? const_cast<float*>(inputs.items[r]->tensor.data_as<float>())
                                  : scratch + static_cast<int64_t>(r - program.num_inputs) * n;
  };
  for (uint32_t i = 0; i < program.num_instructions; ++i) {
    const Instruction& in = program.instructions[i];
    float* out = reg(in.dst);
    const float* a = reg(in.a);
    const float* b = reg(in.b);
    const float k = in.immediate;
    switch (in.opcode) {
      case kAdd:
        for (int64_t j = 0; j < n; ++j) out[j] = a[j] + b[j];
        break;
      case kMul:
        for (int64_t j = 0; j < n; ++j) out[j] = a[j] * b[j];
        break;
      case kRelu:  // NaN stays NaN, as torch.relu
        for (int64_t j = 0; j < n; ++j) out[j] = a[j] > 0.0f || a[j] != a[j] ? a[j] : 0.0f;
        break;
      case kAddScalar:
        for (int64_t j = 0; j < n; ++j) out[j] = a[j] + k;
        break;
      default:  // kMulScalar (init admits nothing else)
        for (int64_t j = 0; j < n; ++j) out[j] = a[j] * k;
        break;
    }
  }
  for (uint32_t o = 0; o < program.num_outputs; ++o) {
    PARE_TRY_ASSIGN(Tensor * t, ctx.allocate_output(*outputs.items[o], ScalarType::Float, first.size_span()));
    const float* from = reg(program.outputs[o]);
    float* to = t->data_as<float>();
    for (int64_t j = 0; j < n; ++j) to[j] = from[j];
  }
  return Error::Ok;
}

}  // namespace

constexpr Backend kBackend = {"example", is_available, init, execute, nullptr};

}  // namespace example
}  // namespace backends

// pare::delegate_init.example(Tensor blob, str key0, str value0, ...) -> Delegate
Error kernels::pare_delegate_init_example(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return delegate_init(ctx, backends::example::kBackend, inputs, outputs);
}

}  // namespace pare
