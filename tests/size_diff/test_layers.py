"""tools/size_diff/layers.py: which Pare code is the kernels' shared code and which is the core.

The rule reads runtime/'s sources; the runtime itself is linked from two
bitcode modules with exactly this split (api_bitcode.bc: core, executor,
registry, C API, PAL; kernels_bitcode.bc: runtime/kernels/), so the rule is
checked against them symbol by symbol. pytest runs this file (not Bazel's
verify_test, whose runfiles have no runtime sources): tools/run_tests.sh
sets PARE_RUNTIME_BITCODE_DIR.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tools.size_diff.chart import write_png
from tools.size_diff.explain import explain
from tools.size_diff.layers import Layers, qualified_parts
from tools.size_diff.report import Run, bucket_total, build_report


def _defined(bitcode: Path) -> set[str]:
    nm = require_tool("llvm-nm-16", "llvm-nm", package="llvm-16")
    out = subprocess.run(
        [nm, "--defined-only", "-C", "--format=just-symbols", str(bitcode)], capture_output=True, text=True, check=True
    ).stdout
    return set(out.splitlines())


def _bitcode_dir() -> Path:
    d = os.environ.get("PARE_RUNTIME_BITCODE_DIR")
    if not d:
        pytest.fail(
            "PARE_RUNTIME_BITCODE_DIR is not set: build //runtime:bitcode and point it at "
            "bazel-bin/runtime/bitcode/linux_x86_64 (tools/run_tests.sh does)"
        )
    return Path(d)


def test_the_rule_agrees_with_the_runtimes_two_bitcode_modules():
    d = _bitcode_dir()
    core, kernels = _defined(d / "api_bitcode.bc"), _defined(d / "kernels_bitcode.bc")
    layers = Layers()
    # A packed message's symbol is text, owned by where the message is written (tools/size_diff/causes.py).
    kernel_only = {s for s in kernels - core if "pare" in s and "PackedText<" not in s}
    core_only = {s for s in core - kernels if "pare" in s}
    assert len(kernel_only) > 1000 and len(core_only) > 300  # the full runtime's, not a stub's
    called_core = sorted(s for s in kernel_only if not layers.is_shared_kernel_code(s))
    # An inline function of a core header that only kernels call is emitted into their module, but it is the
    # core's code (promote_types in runtime/core/scalar_type.h): the rule may say core for such a one only.
    assert all(layers.defined_outside_kernels(s) for s in called_core), called_core
    assert len(called_core) <= 3, called_core
    called_kernel = sorted(s for s in core_only if layers.is_shared_kernel_code(s))
    assert called_kernel == []


def test_the_rule_on_names():
    layers = Layers()
    shared = [
        "pare::gemm::x86_64_v4::tile(long, float const*, float const*, float*, long, long, long, "
        "pare::gemm::Output const&)",
        "pare::gemm::Im2ColPanels::operator()(long, long, long, long, float*) const",
        "pare::convert_into(pare::KernelContext&, pare::Tensor const&, pare::Tensor const&)",
        # A template of the registry, instantiated for a kernel: the kernel's code.
        "pare::Error pare::dispatch<pare::tags::mm_kernel, pare::kernels::aten_addmm(pare::KernelContext&, "
        "pare::Span<pare::Value* const>, pare::Span<pare::Value* const>)::$_0>(pare::KernelContext&, "
        "pare::ScalarType, pare::kernels::aten_addmm(pare::KernelContext&, pare::Span<pare::Value* const>, "
        "pare::Span<pare::Value* const>)::$_0&&)",
        "pare::kernels::(anonymous namespace)::softmax_row(float const*, float*, long)",
        "vtable for pare::classes::Conv2dPackedParams",
    ]
    core = [
        "pare::Loader::decode_value(pare::MethodDesc const&, unsigned int, unsigned char const*, "
        "pare::ValueKind const*, bool const*)",
        "pare::Method::init(char const*, pare::Method*)",
        "pare::(anonymous namespace)::kKnownOpHashes",
        "pare::FormatBuffer::vformat(char const*, __va_list_tag*)",
        "pare::KernelArgs::int_list(unsigned long, char const*)",
        "pare_method_execute",
        "memcpy",
    ]
    assert [s for s in shared if not layers.is_shared_kernel_code(s)] == []
    assert [s for s in core if layers.is_shared_kernel_code(s)] == []
    assert qualified_parts("void pare::depthwise::arm64_neon::plane<3, 1>(float const*, long)") == [
        "depthwise",
        "arm64_neon",
        "plane",
    ]
    assert qualified_parts("pare::(anonymous namespace)::fill_info(pare::Tensor const&)") == [
        "(anonymous namespace)",
        "fill_info",
    ]
    assert qualified_parts("memcpy") is None


def test_a_tree_without_sources_places_nothing(tmp_path):
    layers = Layers(tmp_path / "no_runtime_here")
    assert not layers.is_shared_kernel_code("pare::gemm::pack_a(float const*)")


def test_the_full_runtimes_report_splits_shared_kernels_from_core(tmp_path):
    lib = os.environ.get("PARE_RUNTIME_LIB")
    if not lib:
        pytest.fail("PARE_RUNTIME_LIB is not set: point it at the full runtime (tools/run_tests.sh does)")
    root = Path(lib).parent.parent  # <bundle>/linux_x86_64/libpare_full.so
    run = Run(
        "linux_x86_64",
        Path(lib),
        root / "linux_x86_64" / "unstripped" / Path(lib).name,
        root / "expected_symbols.json",
    )
    report = build_report("//runtime:full", [run])
    p = report["platforms"]["linux_x86_64"]
    assert p["attribution"]["residual"] == 0
    assert bucket_total(p, "shared_kernels") > 100_000 and bucket_total(p, "core") > 20_000
    rows = {s["name"]: s["bucket"] for s in p["symbols"]}
    assert {b for n, b in rows.items() if n.startswith("pare::gemm::")} == {"shared_kernels"}
    assert {b for n, b in rows.items() if n.startswith("pare::Loader::")} == {"core"}
    why = explain(report, "pare::gemm::sgemm_blocks")
    assert "shared kernel code" in why and "selected kernels call it" in why
    assert "core: every runtime carries it" in explain(report, "pare::Loader::decode_value")
    # The chart draws every bucket, the shared kernels' included (presubmit writes it).
    write_png(report, tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
