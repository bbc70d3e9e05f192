"""The instrumentation build records every op (root and non-root), every
(kernel tag, dtype) reached, every class and build feature used; normal
builds record nothing."""

import numpy as np
from runtime_testing import fragmenting_program, symbolic_view_program

from pare.program import ProgramBuilder


def traced_program():
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None, 4])
    i = m.input("Int", [None, 4])
    packed = m.linear_prepack(np.ones((2, 4), np.float32), None)
    y = m.op("aten::add.Scalar", x, 1)  # -> aten::add.Tensor, non-root
    z = m.op("aten::mul.Tensor", y, i)  # Int promoted to Float through copy_kernel
    m.output(m.op("pare::linear_prepacked", z, packed))
    return pb.to_bytes()


def run_traced(rt):
    program = rt.load(traced_program())
    method = program.method()
    method.run(np.ones((3, 4), np.float32), np.ones((3, 4), np.int32))
    return program, method


def test_tracing_records_everything_used(tracing_runtime):
    assert tracing_runtime.is_tracing_build
    program, method = run_traced(tracing_runtime)
    method.set_profiling(True)
    trace = program.trace()
    assert {name: (u.root, u.non_root) for name, u in trace.ops.items()} == {
        "aten::add.Tensor": (False, True),
        "aten::add.Scalar": (True, False),
        "aten::mul.Tensor": (True, False),
        "pare::linear_prepack": (True, False),
        "pare::linear_prepacked": (True, False),
    }
    assert trace.kernel_dtypes == {
        "add_kernel": ("Float",),
        "mul_kernel": ("Float",),
        "copy_kernel": ("Int", "Float"),  # source dtype, then destination
        "prepacked_kernel": ("Float",),
    }
    assert trace.classes == ("LinearPackedParams",)
    # Greedy by size lays traced_program's arena out smaller than first fit: a runtime for it keeps that layout.
    assert trace.features == ("op_profiling", "greedy_planner")


def test_tracing_records_greedy_planner_only_where_it_wins(tracing_runtime):
    # One block: both layouts are the same, and a tie keeps first fit. No second layout is needed.
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::relu", m.input("Float", [64])))
    program = tracing_runtime.load(pb.to_bytes())
    program.method().run(np.ones(64, np.float32))
    assert program.trace().ops and program.trace().features == ()
    # Greedy by size wins on the fragmenting program (48 KB against 52 KB): the runtime must keep it.
    frag, _ = fragmenting_program()
    program = tracing_runtime.load(frag)
    method = program.method()
    method.run(np.linspace(-2, 2, 1024, dtype=np.float32))
    assert method.memory_stats().planned_arena_bytes == 48 * 1024
    assert program.trace().features == ("greedy_planner",)
    # An app that pins greedy by size needs it too, whichever layout would win.
    program, method = run_traced(tracing_runtime)
    program.reset_trace()
    method.set_planner("greedy_by_size")
    assert program.trace().features == ("greedy_planner",)


def test_tracing_records_dynamic_shapes_for_symbolic_sizes_or_a_second_signature(tracing_runtime):
    # One input shape, run twice: one plan, no symbolic sizes. Nothing to select.
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::relu", m.input("Float", [None])))
    program = tracing_runtime.load(pb.to_bytes())
    method = program.method()
    for _ in range(2):
        method.run(np.ones(8, np.float32))
    assert "dynamic_shapes" not in program.trace().features
    # A second input shape while the first's plan is kept: the runtime must keep a plan per shape.
    method.run(np.ones(16, np.float32))
    assert "dynamic_shapes" in program.trace().features
    # Symbolic sizes in the program: recorded when a method is created, before any run.
    program = tracing_runtime.load(symbolic_view_program())
    program.method()
    assert program.trace().features == ("dynamic_shapes",)


def test_tracing_records_output_buffers_when_bound(tracing_runtime):
    program, method = run_traced(tracing_runtime)
    program.reset_trace()
    method.set_output_buffer(0, None)  # unbinding uses nothing
    assert program.trace().features == ()
    out = np.empty((3, 2), np.float32)
    method.set_output_buffer(0, out)
    assert program.trace().features == ("output_buffers",)
    (y,) = method.run(np.ones((3, 4), np.float32), np.ones((3, 4), np.int32))
    assert np.shares_memory(y, out)


def test_trace_accumulates_over_runs_and_resets(tracing_runtime):
    program, method = run_traced(tracing_runtime)
    method.run(np.ones((2, 4), np.float32), np.ones((2, 4), np.int32))
    assert "aten::mul.Tensor" in program.trace().ops
    program.reset_trace()
    empty = program.trace()
    assert empty.ops == {} and empty.kernel_dtypes == {} and empty.classes == () and empty.features == ()
    method.run(np.ones((2, 4), np.float32), np.ones((2, 4), np.int32))
    assert set(program.trace().ops) == {
        "aten::add.Scalar",
        "aten::add.Tensor",
        "aten::mul.Tensor",
        "pare::linear_prepacked",
    }  # prepack ran at method creation only


def test_normal_builds_record_nothing(runtime):
    assert not runtime.is_tracing_build
    program, _ = run_traced(runtime)
    trace = program.trace()
    assert trace.ops == {} and trace.kernel_dtypes == {} and trace.classes == () and trace.features == ()
