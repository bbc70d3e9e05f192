// Program loader: validation apart from decoding (as ExecuTorch's
// program_validation.h keeps it). A value record is checked against the
// format's schema (program_schema.h, made from program_format.def) before
// program.cc decodes any of its fields, and a decoded method's dataflow
// before it is used. Bounds checks stay beside the reads they guard
// (program.cc): every byte is checked right before it is read. A method's
// state table is decoded here too, since all of it is checks against the
// decoded method.

#include "runtime/core/format.h"
#include "runtime/executor/program_loader.h"
#include "runtime/executor/program_schema.h"

namespace pare {

using namespace loader;

Error Loader::check_value_record(const MethodDesc& m, uint32_t id, const uint8_t* rec, ValueKind kind, bool constant) {
  const char* kind_name = to_string(kind);
  const uint8_t flags = rd8(rec + 2);
  if (rd8(rec + 3) != 0 || (flags & ~kFlagConstant) != 0) {
    return PARE_INVALID("method '%s' value %u has reserved bits set", m.name, id);
  }
  if (kind != ValueKind::Tensor && rd8(rec + 1) != 0) {
    return PARE_INVALID("method '%s' value %u (%s) has a dtype", m.name, id, kind_name);
  }
  const schema::ValueFields& fields = schema::kValueFields[static_cast<size_t>(kind)];
  const bool must = fields.constant == schema::Constancy::Must;
  if ((must && !constant) || (fields.constant == schema::Constancy::Never && constant)) {
    return PARE_INVALID("method '%s' value %u (%s) %s be constant (flags bit 0)", m.name, id, kind_name,
                        must ? "must" : "cannot");
  }
  // A bool is 0 or 1 (the one field value the schema does not say).
  if (kind == ValueKind::Bool && rd32(rec + 4) > 1) {
    return PARE_INVALID("method '%s' value %u (bool) has payload %u (must be 0 or 1) or unused fields set", m.name, id,
                        rd32(rec + 4));
  }
  // Fields the kind does not use, and those only a constant sets, are 0.
  const unsigned allowed = constant ? fields.used : fields.used & ~fields.constant_only;
  const unsigned set = (rd32(rec + 4) != 0 ? 1u : 0u) | (rd64(rec + 8) != 0 ? 2u : 0u) |
                       (rd64(rec + 16) != 0 ? 4u : 0u) | (rd64(rec + 24) != 0 ? 8u : 0u);
  if ((set & ~allowed) != 0) {
    return PARE_INVALID("method '%s' value %u (%s) has unused fields set", m.name, id, kind_name);
  }
  return Error::Ok;
}

Error Loader::visit_list(uint64_t count) {
  if (count > list_visit_budget_) {
    return PARE_INVALID("lists are read too many times for the file size (overlapping or hostile tables)");
  }
  list_visit_budget_ -= count;
  return Error::Ok;
}

Error Loader::check_dataflow(MethodDesc& m, ValueDesc* values, uint32_t* last_use) {
  DefState* state = program_.allocator_.allocate_array<DefState>(m.num_values);
  if (state == nullptr && m.num_values > 0) return out_of_memory("dataflow state");
  for (uint32_t v = 0; v < m.num_values; ++v) {
    state[v] = values[v].constant ? DefState::Defined : DefState::Undefined;
    last_use[v] = 0;
  }
  for (uint32_t k = 0; k < m.num_inputs; ++k) {
    const uint32_t id = m.inputs[k];
    if (values[id].kind != ValueKind::Tensor || values[id].constant) {
      return PARE_INVALID("method '%s' input %u (value %u) must be a non-constant Tensor value", m.name, k, id);
    }
    if (state[id] != DefState::Undefined)
      return PARE_INVALID("method '%s' lists value %u as an input twice", m.name, id);
    state[id] = DefState::MethodInput;
  }

  // A value can be read in the init section only if it does not depend on
  // method inputs (init runs once, before any input is set).
  auto readable = [&](uint32_t id, bool init) {
    return state[id] == DefState::Defined || (!init && state[id] == DefState::MethodInput);
  };
  for (uint32_t i = 0; i < m.num_instructions; ++i) {
    const InstructionDesc& ins = m.instructions[i];
    const bool init = i < m.num_init_instructions;
    const char* op_name = program_.ops_[ins.op].name;
    for (uint32_t k = 0; k < ins.num_inputs; ++k) {
      const uint32_t id = ins.args[k];
      const ValueDesc& v = values[id];
      bool ok = true;
      if (v.kind == ValueKind::TensorList) {
        PARE_TRY(visit_list(v.count));
        for (uint32_t e = 0; e < v.count; ++e) {
          ok = ok && readable(v.value_ids[e], init);
          last_use[v.value_ids[e]] = i;
        }
      } else if (feature_selected(FeatureId::dynamic_shapes) && v.kind == ValueKind::IntList && v.int_refs != nullptr) {
        PARE_TRY(visit_list(v.count));
        for (uint32_t e = 0; e < v.count; ++e) {
          if (v.int_refs[e] == kNoValue) continue;
          ok = ok && readable(v.int_refs[e], init);
          last_use[v.int_refs[e]] = i;
        }
      } else {
        ok = readable(id, init);
      }
      if (!ok) {
        return PARE_INVALID("method '%s' instruction %u (%s) reads value %u before it is defined%s", m.name, i, op_name,
                            id, init ? " (init instructions cannot read method inputs)" : "");
      }
      last_use[id] = i;
    }
    for (uint32_t k = 0; k < ins.num_outputs; ++k) {
      const uint32_t id = ins.args[ins.num_inputs + k];
      const ValueDesc& v = values[id];
      const bool producible = v.kind == ValueKind::Tensor || v.kind == ValueKind::Int || v.kind == ValueKind::Double ||
                              v.kind == ValueKind::Bool || v.kind == ValueKind::TensorList ||
                              v.kind == ValueKind::Object;
      if (!producible || v.constant || state[id] != DefState::Undefined) {
        const char* why = !producible                          ? "is of a kind no operator produces"
                          : v.constant                         ? "is a constant"
                          : state[id] == DefState::MethodInput ? "is a method input"
                                                               : "is already defined (values are assigned once)";
        return PARE_INVALID("method '%s' instruction %u (%s) output %u (value %u, %s) %s", m.name, i, op_name, k, id,
                            to_string(v.kind), why);
      }
      if (v.kind == ValueKind::Object && !init) {
        return PARE_INVALID("method '%s' instruction %u (%s) creates an object outside the init section", m.name, i,
                            op_name);
      }
      if (v.kind == ValueKind::TensorList) {
        PARE_TRY(visit_list(v.count));
        for (uint32_t e = 0; e < v.count; ++e) {
          const uint32_t item = v.value_ids[e];
          if (values[item].constant || state[item] != DefState::Undefined) {
            return PARE_INVALID(
                "method '%s' instruction %u (%s) output list element %u (value %u) is "
                "already defined",
                m.name, i, op_name, e, item);
          }
          state[item] = DefState::Defined;
          last_use[item] = i;
        }
      }
      state[id] = DefState::Defined;
      last_use[id] = i;
    }
  }
  for (uint32_t k = 0; k < m.num_outputs; ++k) {
    const uint32_t id = m.outputs[k];
    const ValueDesc& v = values[id];
    bool ok = readable(id, false);
    if (v.kind == ValueKind::TensorList) {
      PARE_TRY(visit_list(v.count));
      ok = true;
      for (uint32_t e = 0; e < v.count; ++e) {
        if (values[v.value_ids[e]].kind == ValueKind::None) {
          return PARE_INVALID(
              "method '%s' output %u (value %u) is a Tensor[] with a None element; only operators read those", m.name,
              k, id);
        }
        ok = ok && readable(v.value_ids[e], false);
        last_use[v.value_ids[e]] = kLastUseForever;
      }
    }
    if (!ok) return PARE_INVALID("method '%s' output %u (value %u) is never defined", m.name, k, id);
    last_use[id] = kLastUseForever;
  }
  return Error::Ok;
}

// A method's state table (format 1.2): u32 count, u32 reserved, then count
// entries of u32 name, value, update, flags (docs/program_format.md,
// "State"). Offset 0: the method has no state. Runs after the dataflow
// check, which computed `last_use`.
Error Loader::decode_states(MethodDesc& m, uint64_t offset, uint32_t* last_use) {
  if (offset == 0) return Error::Ok;
  PARE_TRY(check_range("state table", offset, 8, 1, 8));
  const uint32_t count = rd32(base_ + offset);
  if (rd32(base_ + offset + 4) != 0) return PARE_INVALID("method '%s' state table reserved field is not zero", m.name);
  if (count == 0) return PARE_INVALID("method '%s' has an empty state table: write its offset as 0", m.name);
  PARE_TRY(check_range("state table entries", offset + 8, count, kStateEntrySize, 8));
  PARE_TRY(consume(count, kStateEntrySize, "state table entries"));
  StateDesc* states = program_.allocator_.allocate_array<StateDesc>(count);
  if (states == nullptr) return out_of_memory("a state table");
  for (uint32_t k = 0; k < count; ++k) {
    const uint8_t* e = base_ + offset + 8 + kStateEntrySize * k;
    const uint32_t name = rd32(e);
    const uint32_t value = rd32(e + 4);
    const uint32_t update = rd32(e + 8);
    const uint32_t flags = rd32(e + 12);
    if (name >= program_.num_strings_ || program_.strings_[name][0] == '\0') {
      return PARE_INVALID("method '%s' state %u has no name (string %u)", m.name, k, name);
    }
    StateDesc& s = states[k];
    s.name = program_.strings_[name];
    if (value >= m.num_values || m.values[value].kind != ValueKind::Tensor || !m.values[value].constant) {
      return PARE_INVALID(
          "method '%s' state '%s' refers to value %u, which is not a constant tensor (its initial value)", m.name,
          s.name, value);
    }
    for (uint32_t j = 0; j < k; ++j) {
      if (string_equal(states[j].name, s.name) || states[j].value == value) {
        return PARE_INVALID("method '%s' declares state '%s' (value %u) twice", m.name, s.name, value);
      }
    }
    if ((flags & ~kStateFlagInPlace) != 0) {
      return PARE_INVALID("method '%s' state '%s' has unknown flags 0x%x", m.name, s.name, flags);
    }
    for (uint32_t i = 0; i < m.num_init_instructions; ++i) {
      const InstructionDesc& ins = m.instructions[i];
      for (uint32_t a = 0; a < ins.num_inputs; ++a) {
        if (ins.args[a] == value) {
          return PARE_INVALID("method '%s' init instruction %u reads state '%s'; only the body may", m.name, i, s.name);
        }
      }
    }
    // Where the update comes from: a constant, a method input, or an
    // instruction's output (`producer`; only a body instruction's may be
    // written in place).
    uint32_t producer = kNoValue;
    bool defined = update != kNoValue && update < m.num_values && update != value &&
                   m.values[update].kind == ValueKind::Tensor && m.values[update].constant;
    for (uint32_t k = 0; k < m.num_inputs && update != kNoValue; ++k) defined = defined || m.inputs[k] == update;
    for (uint32_t i = 0; i < m.num_instructions && update != kNoValue; ++i) {
      const InstructionDesc& ins = m.instructions[i];
      for (uint32_t a = ins.num_inputs; a < static_cast<uint32_t>(ins.num_inputs) + ins.num_outputs; ++a) {
        if (ins.args[a] == update) producer = i;
      }
    }
    defined = defined || (producer != kNoValue && m.values[update].kind == ValueKind::Tensor);
    if (update != kNoValue && !defined) {
      return PARE_INVALID("method '%s' state '%s' is updated from value %u, which is not a tensor the method defines",
                          m.name, s.name, update);
    }
    s.value = value;
    s.update = update;
    s.in_place = (flags & kStateFlagInPlace) != 0;
    if (s.in_place && (producer == kNoValue || producer < m.num_init_instructions)) {
      return PARE_INVALID("method '%s' state '%s' is marked in place but no body instruction computes its update",
                          m.name, s.name);
    }
    if (s.in_place && last_use[value] > producer) {
      return PARE_INVALID("method '%s' state '%s' is marked in place but is read after instruction %u updates it",
                          m.name, s.name, producer);
    }
    // Read when the run ends: its memory (or its view's base) lives until then.
    if (update != kNoValue) last_use[update] = kLastUseForever;
  }
  m.states = states;
  m.num_states = count;
  return Error::Ok;
}

}  // namespace pare
