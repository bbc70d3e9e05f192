"""Programs with state (format 1.2, build feature state): buffers a model
mutates persist in the method instance between executes, updated in place,
and are reset, read and written by name (docs/program_format.md, "State")."""

from __future__ import annotations

import copy
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from runtime_testing import MutatedBuffers
from torch import nn

from pare import _format_table as fmt
from pare.program import ProgramBuilder, read
from pare.runtime import PareError
from tests.mobile.state.kv_cache import KVCache
from tools.tracer import export_model
from tools.tracer.model_spec import ModelSpec


def _sequence(dim: int = 8, prefill: int = 3, steps: int = 4):
    """A prefill of `prefill` tokens, then `steps` decode steps of one."""
    gen = torch.Generator().manual_seed(0)
    calls = [(torch.randn(1, prefill, dim, generator=gen), torch.arange(prefill))]
    for pos in range(prefill, prefill + steps):
        calls.append((torch.randn(1, 1, dim, generator=gen), torch.tensor([pos])))
    return calls


@pytest.fixture(scope="module")
def kv_model():
    torch.manual_seed(0)
    module = KVCache(v_fill=0.5).eval()
    calls = _sequence()
    # The representative inputs: a prefill and a decode step (S is dynamic).
    spec = ModelSpec(Path(__file__), copy.deepcopy(module), tuple(calls[:2]))
    exported = export_model(spec)
    return module, calls, exported.program


def _run_torch(module: nn.Module, calls):
    ref = copy.deepcopy(module)
    with torch.no_grad():
        return [ref(*c).numpy() for c in calls], ref


def test_the_program_records_the_state(kv_model):
    _, _, program = kv_model
    info = read(program)
    assert info.version == (1, 2)
    (method,) = info.methods
    states = {name: (value, update, in_place) for name, value, update, in_place in method.states}
    assert set(states) == {"k_cache", "v_cache"}
    for name, (value, update, in_place) in states.items():
        assert method.values[value].constant and method.values[value].sizes == [1, 2, 16, 4]
        assert update is not None and in_place, name  # index_put writes into the state
    assert "aten::index_put" in {ins.op for ins in method.instructions}


def test_a_sequence_matches_torch_eager_step_by_step(runtime, kv_model):
    module, calls, program = kv_model
    expected, ref = _run_torch(module, calls)
    method = runtime.load(program).method()
    assert sorted(method.state_names) == ["k_cache", "v_cache"]
    for step, (c, want) in enumerate(zip(calls, expected)):
        (got,) = method.run(c[0].numpy(), c[1].numpy())
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
    np.testing.assert_allclose(method.state("k_cache"), ref.k_cache.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(method.state("v_cache"), ref.v_cache.numpy(), rtol=1e-6, atol=1e-6)


def test_the_cache_is_updated_in_place_without_an_arena_copy(runtime, kv_model):
    _, calls, program = kv_model
    # The same program with its updates copied into the state when the run ends.
    copied = bytearray(program)
    table = _state_table(program)
    for k in range(2):
        struct.pack_into("<I", copied, table + 8 + 16 * k + 12, 0)
    in_place, by_copy = runtime.load(program).method(), runtime.load(bytes(copied)).method()
    for c in calls:
        (a,) = in_place.run(c[0].numpy(), c[1].numpy())
        (b,) = by_copy.run(c[0].numpy(), c[1].numpy())
        np.testing.assert_array_equal(a, b)
    cache_bytes = 1 * 2 * 16 * 4 * 4
    # index_put writes its rows into the caches: neither cache has a block in
    # the arena, which holds less than one cache for a decode step, while the
    # copying program's holds both updated caches. (The two arenas' other
    # blocks may lay out differently, so their difference is no measure.)
    assert in_place.memory_stats().planned_arena_bytes < cache_bytes
    assert by_copy.memory_stats().planned_arena_bytes >= 2 * cache_bytes


def test_reset_restores_the_initial_state(runtime, kv_model):
    module, calls, program = kv_model
    method = runtime.load(program).method()
    first = [method.run(c[0].numpy(), c[1].numpy())[0] for c in calls]
    assert not np.array_equal(method.state("k_cache"), np.zeros((1, 2, 16, 4), np.float32))
    method.reset_state()
    np.testing.assert_array_equal(method.state("k_cache"), np.zeros((1, 2, 16, 4), np.float32))
    np.testing.assert_array_equal(method.state("v_cache"), np.full((1, 2, 16, 4), 0.5, np.float32))
    again = [method.run(c[0].numpy(), c[1].numpy())[0] for c in calls]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_read_and_write_a_named_buffer(runtime, kv_model):
    module, calls, program = kv_model
    method = runtime.load(program).method()
    cache = np.random.default_rng(1).standard_normal((1, 2, 16, 4)).astype(np.float32)
    method.set_state("v_cache", cache)
    np.testing.assert_array_equal(method.state("v_cache"), cache)
    ref = copy.deepcopy(module)
    ref.v_cache.copy_(torch.from_numpy(cache))
    expected, _ = _run_torch(ref, calls[:2])
    for c, want in zip(calls[:2], expected):
        np.testing.assert_allclose(method.run(c[0].numpy(), c[1].numpy())[0], want, rtol=1e-5, atol=1e-6)
    with pytest.raises(PareError, match="method 'forward' has no state named 'q_cache'") as e:
        method.state("q_cache")
    assert e.value.status_name == "InvalidArgument"
    with pytest.raises(
        PareError, match=r"state 'k_cache' of method 'forward' is a Float tensor of sizes \[1, 2, 16, 4\]"
    ):
        method.set_state("k_cache", np.zeros((1, 2, 8, 4), np.float32))
    with pytest.raises(PareError, match="is a Float tensor"):
        method.set_state("k_cache", np.zeros((1, 2, 16, 4), np.float64))


def test_two_instances_keep_separate_state(runtime, kv_model):
    module, calls, program = kv_model
    loaded = runtime.load(program)
    a, b = loaded.method(), loaded.method()
    expected, _ = _run_torch(module, calls)
    # a runs the whole sequence, b only its prefill: then b decodes as a fresh instance would.
    for c in calls:
        a.run(c[0].numpy(), c[1].numpy())
    (got,) = b.run(calls[0][0].numpy(), calls[0][1].numpy())
    np.testing.assert_allclose(got, expected[0], rtol=1e-5, atol=1e-6)
    assert not np.array_equal(a.state("k_cache"), b.state("k_cache"))


def _index_put_program(in_place: bool):
    """state s [4] += nothing: s[idx] = v, and the output reads s after the update."""
    pb = ProgramBuilder()
    m = pb.method()
    v = m.input("Float", [None])
    idx = m.input("Long", [None])
    s = m.state("s", np.arange(4, dtype=np.float32))
    new = m.op("aten::index_put", s, [idx], v)
    m.update_state(s, new, in_place=in_place)
    m.output(m.op("aten::mul.Scalar", new, 2.0))
    return pb


@pytest.mark.parametrize("in_place", [True, False])
def test_a_state_written_back_in_place_or_copied(runtime, in_place):
    method = runtime.load(_index_put_program(in_place).to_bytes()).method()
    (y,) = method.run(np.array([10.0], np.float32), np.array([1]))
    assert y.tolist() == [0, 20, 4, 6]
    (y,) = method.run(np.array([30.0, 40.0], np.float32), np.array([0, 3]))
    assert y.tolist() == [60, 20, 4, 80]
    assert method.state("s").tolist() == [30, 10, 2, 40]


def test_an_unselected_feature_answers_feature_not_selected(selective_runtime, runtime):
    with pytest.raises(
        PareError,
        match=r"does not select build feature state: add it to build_features in the manifest "
        r"\(tools.tracer trace --features state",
    ) as e:
        selective_runtime.load(_index_put_program(True).to_bytes())
    assert e.value.status_name == "FeatureNotSelected"
    assert "\n" not in str(e.value)
    # A program without state loads; its method has no state and the entry points say why.
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::relu", m.input("Float", [2])))
    method = selective_runtime.load(pb.to_bytes()).method()
    assert method.state_names == []
    for call in (method.reset_state, lambda: method.state("s"), lambda: method.set_state("s", np.zeros(1))):
        with pytest.raises(PareError, match="does not select build feature state") as e:
            call()
        assert e.value.status_name == "FeatureNotSelected"


def _state_table(data: bytes) -> int:
    """The offset of the first method's state table."""
    methods_offset = struct.unpack_from("<Q", data, 40)[0]
    (count,) = struct.unpack_from("<I", data, methods_offset)
    return struct.unpack_from("<Q", data, methods_offset + 8 + 8 * count)[0]


def _patched(data: bytes, offset: int, fmt_: str, value) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt_, out, offset, value)
    return bytes(out)


def test_malformed_state_metadata_is_refused(runtime):
    data = _index_put_program(True).to_bytes()
    table = _state_table(data)
    info = read(data)
    (state_name, value, update, _), *_ = info.methods[0].states
    assert state_name == "s"
    input_value = info.methods[0].inputs[0]
    cases = [
        (table + 4, "<I", 1, "state table reserved field is not zero"),
        (table, "<I", 0, "has an empty state table: write its offset as 0"),
        (table + 8, "<I", 0xFFFF, "state 0 has no name"),
        (table + 12, "<I", input_value, f"refers to value {input_value}, which is not a constant tensor"),
        (table + 16, "<I", value, f"is updated from value {value}, which is not a tensor the method defines"),
        (table + 16, "<I", input_value, "is marked in place but no body instruction computes its update"),
        (table + 20, "<I", 6, "has unknown flags 0x6"),
        (12, "<I", 2, "header flags 0x2 set; version 1.2 defines only 0x1"),
    ]
    for offset, fmt_, new, message in cases:
        with pytest.raises(PareError, match=message) as e:
            runtime.load(_patched(data, offset, fmt_, new))
        assert e.value.status_name == "InvalidProgram", message
        assert "\n" not in str(e.value)
    # In place, but the state is read after its update is produced.
    pb = ProgramBuilder()
    m = pb.method()
    v, idx = m.input("Float", [None]), m.input("Long", [None])
    s = m.state("s", np.zeros(4, np.float32))
    new = m.op("aten::index_put", s, [idx], v)
    m.update_state(s, new, in_place=True)
    m.output(m.op("aten::add.Tensor", new, s))
    with pytest.raises(PareError, match="state 's' is marked in place but is read after instruction 0 updates it"):
        runtime.load(pb.to_bytes())


def test_an_older_program_without_state_is_unchanged():
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::relu", m.input("Float", [2])))
    data = pb.to_bytes()
    assert struct.unpack_from("<HHII", data, 4) == (1, 0, 64, 0)  # version 1.0, no header flags
    assert fmt.HEADER_FLAG_STATE == 1


def _prefill_decode_program(decode_sizes=(4,)):
    """prefill writes rows of state "s"; decode reads it (s * 2) and writes one more."""
    pb = ProgramBuilder()
    prefill = pb.method("prefill")
    v, idx = prefill.input("Float", [None]), prefill.input("Long", [None])
    s = prefill.state("s", np.zeros(4, np.float32))
    prefill.update_state(s, prefill.op("aten::index_put", s, [idx], v), in_place=True)
    prefill.output(prefill.op("aten::relu", v))
    decode = pb.method("decode")
    v, idx = decode.input("Float", [1]), decode.input("Long", [1])
    s = decode.state("s", np.zeros(decode_sizes, np.float32))
    new = decode.op("aten::index_put", s, [idx], v)
    decode.update_state(s, new, in_place=True)
    decode.output(decode.op("aten::mul.Scalar", new, 2.0))
    return pb.to_bytes()


def test_two_methods_share_state(runtime):
    program = runtime.load(_prefill_decode_program())
    prefill = program.method("prefill")
    decode = program.method("decode", share_state_with=prefill)
    alone = program.method("decode")
    prefill.run(np.array([1.0, 2.0], np.float32), np.array([0, 1]))
    (y,) = decode.run(np.array([3.0], np.float32), np.array([2]))
    assert y.tolist() == [2, 4, 6, 0]
    assert prefill.state("s").tolist() == [1, 2, 3, 0]  # one buffer
    (y,) = alone.run(np.array([3.0], np.float32), np.array([2]))
    assert y.tolist() == [0, 0, 6, 0]  # an instance of its own
    decode.reset_state()
    assert prefill.state("s").tolist() == [0, 0, 0, 0]
    with pytest.raises(
        PareError, match="state 's' of method 'decode' is a Float tensor of sizes \\[5\\]; method 'prefill'"
    ):
        mismatched = runtime.load(_prefill_decode_program((5,)))
        mismatched.method("decode", share_state_with=mismatched.method("prefill"))
    other = runtime.load(_prefill_decode_program()).method("prefill")
    with pytest.raises(PareError, match="can only share the state of a created method of the same program"):
        program.method("decode", share_state_with=other)


def test_sharing_state_without_the_feature_answers_feature_not_selected(selective_runtime):
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::relu", m.input("Float", [2])))
    program = selective_runtime.load(pb.to_bytes())
    first = program.method()
    with pytest.raises(PareError, match="does not select build feature state") as e:
        program.method(share_state_with=first)
    assert e.value.status_name == "FeatureNotSelected"


def test_a_repeated_sequence_length_reuses_its_plan(runtime, kv_model):
    _, calls, program = kv_model
    method = runtime.load(program).method()
    method.run(calls[0][0].numpy(), calls[0][1].numpy())  # prefill, S = 3: plans
    method.run(calls[1][0].numpy(), calls[1][1].numpy())  # decode, S = 1: plans once
    assert method.memory_stats().num_plans == 2
    method.run(calls[2][0].numpy(), calls[2][1].numpy())  # the first replay sizes the arena
    arena = method.memory_stats().arena_bytes
    assert arena > 0
    for c in calls[3:]:
        method.run(c[0].numpy(), c[1].numpy())
        stats = method.memory_stats()
        # Every further decode step replays its plan: nothing allocated, nothing re-planned.
        assert (stats.num_plans, stats.temporary_blocks, stats.arena_bytes) == (2, 0, arena)
    method.reset_state()
    method.run(calls[0][0].numpy(), calls[0][1].numpy())  # a new prompt of the same length
    assert method.memory_stats().num_plans == 2


def test_in_place_and_copied_updates_match_torch_over_a_sequence(runtime):
    module = MutatedBuffers()
    calls = [(torch.randn(4, generator=torch.Generator().manual_seed(k)),) for k in range(4)]
    program = export_model(ModelSpec(Path(__file__), copy.deepcopy(module), tuple(calls[:1]))).program
    states = {name: in_place for name, _, _, in_place in read(program).methods[0].states}
    assert states == {"count": True, "history": False}
    expected, ref = _run_torch(module, calls)
    method = runtime.load(program).method()
    for step, (c, want) in enumerate(zip(calls, expected)):
        np.testing.assert_allclose(method.run(c[0].numpy())[0], want, rtol=1e-6, atol=1e-6, err_msg=f"step {step}")
    assert method.state("count").tolist() == [4.0]
    np.testing.assert_array_equal(method.state("history"), ref.history.numpy())


def test_a_buffer_overwritten_by_an_input_matches_torch(runtime):
    # self.c.copy_(x) updates the state from the method input itself (no
    # instruction computes it): copied back when the run ends.
    class Overwrite(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", torch.zeros(2, 4))

        def forward(self, x):
            old = self.c.reshape(8)
            self.c.copy_(x)
            return old * 2

    module = Overwrite()
    calls = [(torch.randn(2, 4, generator=torch.Generator().manual_seed(k)),) for k in range(3)]
    program = export_model(ModelSpec(Path(__file__), copy.deepcopy(module), tuple(calls[:1]))).program
    (state,) = read(program).methods[0].states
    assert state[0] == "c" and not state[3]
    expected, ref = _run_torch(module, calls)
    method = runtime.load(program).method()
    for c, want in zip(calls, expected):
        np.testing.assert_array_equal(method.run(c[0].numpy())[0], want)
    np.testing.assert_array_equal(method.state("c"), ref.c.numpy())
