"""The Vulkan compute backend (docs/delegates.md, "The Vulkan backend") on
Mesa's lavapipe: each operator, exported with --delegate vulkan and run on
the full runtime, matches a float64 torch reference on awkward shapes (odd
sizes, batch > 1); a model with an operator the backend lacks runs as
partitions with CPU operators between them; without a Vulkan driver
(VK_ICD_FILENAMES pointing nowhere) method creation names the backend and
the fix, and --delegate-fallback runs the CPU copy; a corrupt blob is
refused with one line.

These tests need a Vulkan device: tools/setup.sh installs lavapipe
(mesa-vulkan-drivers) and glslc. Without one they fail, naming the fix."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pare import vulkan_blob
from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime
from tools.tracer import delegation, model_spec
from tools.tracer.exporter import export_model

VULKAN = delegation.DelegateOptions(("vulkan",))
REPO = Path(__file__).resolve().parents[2]
# Float32 on the device against a float64 reference: sums of up to a few
# hundred products accumulated in another order than torch's, and
# lavapipe's exp/log/inversesqrt (GLSL.std.450, a few ulp).
ATOL, RTOL = 2e-5, 2e-5


@pytest.fixture(scope="module")
def runtime(runtime_lib) -> Runtime:
    """The full runtime, failing (not skipping) when this machine has no
    Vulkan device the backend can use."""
    rt = Runtime(runtime_lib)
    probe = ProgramBuilder()
    m = probe.method()
    x = m.input("Float", [3])
    blob = _blob_of(nn.ReLU(), (torch.randn(3),))
    (y,) = m.delegate_call("vulkan", blob, (), [x], 1)
    m.output(y)
    try:
        rt.load(probe.to_bytes()).method()
    except PareError as e:
        if e.status_name == "BackendUnavailable":
            pytest.fail(
                f"no usable Vulkan device on this machine ({e}); install Mesa's lavapipe: "
                "apt-get install mesa-vulkan-drivers libvulkan1 (tools/setup.sh)"
            )
        raise
    return rt


def spec_from(module: nn.Module, inputs) -> model_spec.ModelSpec:
    return model_spec.ModelSpec(
        REPO / "tests" / "runtime" / "vulkan_inline.py", module.eval(), tuple(map(tuple, inputs))
    )


def _blob_of(module, inputs) -> bytes:
    exported = export_model(spec_from(module, [inputs]), delegates=VULKAN)
    return exported_blob(exported.program)


def exported_blob(program: bytes) -> bytes:
    """The first vulkan blob in `program` (it starts with PVKB and its
    header gives its size)."""
    at = program.index(vulkan_blob.MAGIC)
    size = struct.unpack_from("<I", program, at + 8)[0]
    return program[at : at + size]


def check(runtime, module, *inputs, delegated=None, cpu=None):
    """Exports `module` with --delegate vulkan, runs it, and compares each
    output with the module in float64."""
    module = module.eval()
    exported = export_model(spec_from(module, [inputs]), delegates=VULKAN)
    report = exported.delegation
    if cpu is not None:  # the CPU's operators, by name
        assert dict(report.cpu) == cpu, report.describe()
    if delegated is not None:
        assert report.delegated_ops("vulkan") == delegated, report.describe()
    got = runtime.load(exported.program).method().run(*(t.numpy() for t in inputs))
    with torch.no_grad():
        want = module.double()(*(t.double() for t in inputs))
    module.float()
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(torch.from_numpy(g).double(), w, atol=ATOL, rtol=RTOL)
    return report


class Fn(nn.Module):
    """fn(self, a) as a module, with `params` as its parameters."""

    def __init__(self, fn, **params):
        super().__init__()
        self.fn = fn
        for name, value in params.items():
            setattr(self, name, value if isinstance(value, nn.Module) else nn.Parameter(value))

    def forward(self, a):
        return self.fn(self, a)


class Fn2(Fn):
    """fn(self, a, b)."""

    def forward(self, a, b):
        return self.fn(self, a, b)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape)))


# --- matrix products -----------------------------------------------------------


@pytest.mark.parametrize("batch, n_in, n_out", [(1, 1, 1), (3, 17, 5), (7, 33, 65)])
def test_linear(runtime, batch, n_in, n_out):
    check(runtime, nn.Linear(n_in, n_out), randn(batch, n_in))


def test_linear_without_bias_on_a_3d_input(runtime):
    check(runtime, nn.Linear(9, 4, bias=False), randn(2, 5, 9))


def test_addmm_with_alpha_beta_and_a_row_bias(runtime):
    def fn(self, x, y):
        return torch.addmm(self.b, x, y, beta=0.5, alpha=-2.0)

    check(runtime, Fn2(fn, b=randn(3, 1)), randn(3, 7), randn(7, 5), delegated=1)


def test_mm_bmm_and_matmul(runtime):
    check(runtime, Fn2(lambda self, a, b: torch.mm(a, b)), randn(5, 3), randn(3, 9), delegated=1)
    check(runtime, Fn2(lambda self, a, b: torch.bmm(a, b)), randn(3, 5, 7), randn(3, 7, 2), delegated=1)
    # matmul broadcasting a batch: expand and views around a bmm.
    check(runtime, Fn2(lambda self, a, b: a @ b), randn(2, 3, 5, 4), randn(4, 6))
    check(runtime, Fn2(lambda self, a, b: a @ b.transpose(-1, -2)), randn(2, 5, 4), randn(2, 3, 4))


# --- elementwise -------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [torch.add, torch.sub, torch.mul, torch.div, lambda a, b: torch.add(a, b, alpha=-1.5)],
    ids=["add", "sub", "mul", "div", "add_alpha"],
)
def test_binary_with_broadcasting(runtime, op):
    check(runtime, Fn2(lambda self, a, b: op(a, b)), randn(2, 3, 5, 7), randn(3, 1, 7) + 3.0, delegated=1)
    check(runtime, Fn2(lambda self, a, b: op(a, b)), randn(3, 1), randn(1, 5) + 3.0, delegated=1)


def test_binary_with_a_number_and_a_parameter(runtime):
    check(runtime, Fn(lambda self, a: (a * 2.5 - 1) / 3 + self.p, p=randn(7)), randn(3, 7), delegated=4)


@pytest.mark.parametrize(
    "fn",
    [
        torch.relu,
        F.relu6,
        lambda x: F.hardtanh(x, -0.5, 2.0),
        lambda x: torch.clamp(x, min=-0.25),
        lambda x: torch.clamp(x, max=0.75),
        lambda x: torch.clamp(x, -1.0, 1.0),
        F.hardswish,
        torch.sigmoid,
        F.silu,
        F.gelu,
        lambda x: F.gelu(x, approximate="tanh"),
    ],
    ids=[
        "relu",
        "relu6",
        "hardtanh",
        "clamp_min",
        "clamp_max",
        "clamp",
        "hardswish",
        "sigmoid",
        "silu",
        "gelu",
        "gelu_tanh",
    ],
)
def test_activations(runtime, fn):
    x = randn(3, 5, 7) * 5
    x[0, 0, :3] = torch.tensor([-100.0, 100.0, 0.0])
    check(runtime, Fn(lambda self, a: fn(a)), x)


@pytest.mark.parametrize("act", [torch.relu, F.relu6, torch.sigmoid, F.gelu], ids=["relu", "relu6", "sigmoid", "gelu"])
def test_activations_fuse_into_linear_and_conv(runtime, act):
    for layer, x in ((nn.Linear(6, 5), randn(4, 6)), (nn.Conv2d(3, 4, 3), randn(2, 3, 6, 5))):
        module = Fn(lambda self, x: act(self.layer(x)), layer=layer)
        check(runtime, module, x, delegated=2)
        blob = _blob_of(module, (x,))
        assert struct.unpack_from("<I", blob, 24)[0] == 1  # one dispatch: the activation fused


# --- convolution, pooling, reductions, shapes ---------------------------------------


@pytest.mark.parametrize(
    "c_in, c_out, kernel, stride, padding, dilation, groups",
    [
        (3, 5, 3, 1, 1, 1, 1),  # standard
        (4, 6, 1, 1, 0, 1, 1),  # 1x1
        (6, 6, 3, 2, 1, 1, 6),  # depthwise, stride 2
        (6, 4, (3, 2), (2, 1), (0, 1), 1, 2),  # grouped, rectangular
        (3, 2, 3, 1, 2, 2, 1),  # dilated
    ],
)
def test_conv2d(runtime, c_in, c_out, kernel, stride, padding, dilation, groups):
    conv = nn.Conv2d(c_in, c_out, kernel, stride, padding, dilation, groups)
    check(runtime, conv, randn(2, c_in, 9, 7), delegated=1)


def test_conv2d_without_bias(runtime):
    check(runtime, nn.Conv2d(3, 4, 3, bias=False), randn(1, 3, 5, 5))


@pytest.mark.parametrize(
    "pool",
    [
        nn.MaxPool2d(2),
        nn.MaxPool2d(3, 2, 1),
        nn.MaxPool2d(3, 1, 1, dilation=2),
        nn.AvgPool2d(2),
        nn.AvgPool2d(3, 2, 1),
        nn.AvgPool2d(3, 2, 1, count_include_pad=False),
        nn.AvgPool2d(3, 1, 1, divisor_override=4),
        nn.AdaptiveAvgPool2d(1),
        nn.AdaptiveAvgPool2d((3, 2)),
    ],
    ids=[
        "max2",
        "max3s2p1",
        "max_dilated",
        "avg2",
        "avg3s2p1",
        "avg_no_pad_count",
        "avg_divisor",
        "adaptive1",
        "adaptive3x2",
    ],
)
def test_pooling(runtime, pool):
    check(runtime, pool, randn(2, 3, 9, 7), delegated=1)


def test_mean_softmax_log_softmax_layer_norm(runtime):
    x = randn(2, 3, 5, 7)
    check(runtime, Fn(lambda self, a: a.mean(dim=(2, 3))), x, delegated=1)
    check(runtime, Fn(lambda self, a: a.mean(dim=1, keepdim=True)), x, delegated=1)
    check(runtime, Fn(lambda self, a: torch.softmax(a, dim=-1)), x, delegated=1)
    check(runtime, Fn(lambda self, a: torch.softmax(a, dim=1)), x, delegated=1)
    check(runtime, Fn(lambda self, a: torch.log_softmax(a, dim=2)), x, delegated=1)
    check(runtime, nn.LayerNorm(7), x, delegated=1)
    check(runtime, nn.LayerNorm((5, 7), elementwise_affine=False), x, delegated=1)


def test_cat_permute_and_views(runtime):
    def fn(self, a, b):
        c = torch.cat([a, b * 2, a], dim=1)
        return c.permute(0, 2, 1).reshape(3, -1), c.flatten(1).unsqueeze(0)

    check(runtime, Fn2(fn), randn(3, 2, 5), randn(3, 4, 5))


# --- whole models ---------------------------------------------------------------


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 2, 1)
        self.dw = nn.Conv2d(8, 8, 3, 1, 1, groups=8)
        self.pw = nn.Conv2d(8, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu6(self.stem(x))
        x = F.hardswish(self.dw(x))
        x = F.relu(self.pw(x)) + F.max_pool2d(x, 1).repeat(1, 2, 1, 1)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.softmax(self.fc(x), dim=-1)


def test_a_small_cnn_runs_whole_or_around_the_cpu(runtime):
    report = check(runtime, SmallCnn(), randn(2, 3, 17, 15))
    assert report.partitions["vulkan"] == 2 and report.cpu["aten::repeat"] == 1, report.describe()


class EncoderLayer(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, 2 * d)
        self.ff2 = nn.Linear(2 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4).unbind(0)
        att = torch.softmax(q @ k.transpose(-1, -2) * (d // h) ** -0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


def test_a_transformer_encoder_layer(runtime):
    module = EncoderLayer().eval()
    x = randn(2, 7, 16)
    exported = export_model(spec_from(module, [(x,)]), delegates=VULKAN)
    report = exported.delegation
    assert report.delegated_ops("vulkan") >= 20, report.describe()
    (got,) = runtime.load(exported.program).method().run(x.numpy())
    with torch.no_grad():
        want = module.double()(x.double())
    torch.testing.assert_close(torch.from_numpy(got).double(), want, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("size", [64, 224])
def test_mobilenet_v2_runs_whole_on_the_device(runtime, size):
    """torchvision's MobileNetV2 (random weights, batch norm folded): every
    operator but the classifier weight's transpose, which the exporter
    folds, in one partition."""
    sys.path.insert(0, str(REPO / "models" / "zoo"))
    try:
        from _zoo import vision
    finally:
        sys.path.remove(str(REPO / "models" / "zoo"))
    model, _ = vision("mobilenet_v2")
    x = randn(2, 3, size, size)
    exported = export_model(spec_from(model, [(x,)]), delegates=VULKAN)
    report = exported.delegation
    assert report.partitions["vulkan"] == 1 and dict(report.cpu) == {"aten::transpose.int": 1}, report.describe()
    assert report.delegated["vulkan"]["aten::convolution"] == 52
    (got,) = runtime.load(exported.program).method().run(x.numpy())
    with torch.no_grad():
        want = model.double()(x.double())
    torch.testing.assert_close(torch.from_numpy(got).double(), want, atol=ATOL, rtol=RTOL)


def _dynamic_blob_bounds(blob: bytes) -> list[tuple[int, int, int, int]]:
    """The (input, dim, min, max) of each dynamic size the blob records."""
    shaders, _tensors, _dispatches = struct.unpack_from("<3I", blob, 16)
    (symbols,) = struct.unpack_from("<I", blob, 52)
    at = vulkan_blob.HEADER_BYTES + 16 * shaders
    return [struct.unpack_from("<4I", blob, at + 16 * i) for i in range(symbols)]


def test_the_demo_runs_whole_at_any_batch(runtime):
    """The demo app's model (apps/demo/model.py), whose batch is exported
    dynamic, in one partition with every compute operator (the linear
    weights' transposes are constants the exporter folds), run at batch 1,
    4, 3 and 1 again (the backend re-records at each new batch) against
    torch in float64."""
    spec = model_spec.load_model_spec(REPO / "apps" / "demo" / "model.py")
    exported = export_model(spec, delegates=VULKAN)
    report = exported.delegation
    assert report.partitions["vulkan"] == 1 and dict(report.cpu) == {"aten::transpose.int": 2}, report.describe()
    assert report.delegated_ops("vulkan") == 15, report.describe()
    ((_input, dim, low, high),) = _dynamic_blob_bounds(exported_blob(exported.program))
    assert (dim, low) == (0, 1) and high >= 1024
    method = runtime.load(exported.program).method()
    model = spec.module
    for batch in (1, 4, 3, 1):
        x = torch.rand(batch, 3, 32, 32, generator=torch.Generator().manual_seed(batch))
        (got,) = method.run(x.numpy())
        with torch.no_grad():
            want = model.double()(x.double())
        model.float()
        assert got.shape == (batch, 10)
        torch.testing.assert_close(torch.from_numpy(got).double(), want, atol=ATOL, rtol=RTOL)


class Wide(nn.Module):
    """Each row of x times 2^21 numbers: a batch above 4 exceeds a storage
    buffer (2^25 floats)."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(-1, 1, 1 << 21).reshape(1, 1, -1))

    def forward(self, x):
        return x.unsqueeze(2) * self.scale


def test_a_batch_outside_the_exported_bounds_fails_in_one_line(runtime):
    x = randn(2, 4)
    spec = spec_from(Wide(), [(x,), (randn(3, 4),)])
    exported = export_model(spec, delegates=VULKAN)
    assert exported.delegation.delegated_ops("vulkan") >= 1 and not exported.delegation.cpu, (
        exported.delegation.describe()
    )
    assert [b[1:] for b in _dynamic_blob_bounds(exported_blob(exported.program))] == [(0, 1, 4)]
    method = runtime.load(exported.program).method()
    (got,) = method.run(randn(4, 4).numpy())
    torch.testing.assert_close(torch.from_numpy(got), Wide()(randn(4, 4)).detach(), atol=1e-6, rtol=1e-6)
    for batch in (5, 0):
        with pytest.raises(PareError) as e:
            method.run(randn(batch, 4).numpy())
        message = str(e.value)
        assert e.value.status_name == "InvalidArgument" and "\n" not in message, message
        assert (
            f"the vulkan backend's input 0 has size {batch} in dim 0, outside the 1..4 its part was exported for"
            in (message)
        )
    (got,) = method.run(randn(1, 4).numpy())  # and runs again after the refusals
    assert got.shape == (1, 4, 1 << 21)


@pytest.mark.absent_code
def test_the_backend_is_selected_like_an_operator(runtime, selection_cache, selective_lib, tmp_path):
    """A selection of just the backend's operators and the Delegate class
    runs a wholly delegated model on the device; one without them
    (selective_lib) has none of the backend's code, as tools/verify proves
    (the init operator's entry covers pare::backends::vulkan::)."""
    import runtime_build
    from runtime_testing import SELECTIVE_CLASSES, SELECTIVE_OPS
    from test_delegate_calls import _symbols, _verified

    ops = ["pare::delegate_init.vulkan", "pare::delegate_call"]
    sel = runtime_build.write_selection(selection_cache / "selection_vulkan_backend", ops, {}, ["Delegate"], [])
    lib = runtime_build.build(selection_cache, "vulkan_backend", selection_dir=sel)
    module = nn.Sequential(nn.Linear(5, 3), nn.ReLU()).eval()
    x = randn(2, 5)
    program = export_model(spec_from(module, [(x,)]), delegates=VULKAN).program
    (got,) = Runtime(lib).load(program).method().run(x.numpy())
    with torch.no_grad():
        want = module.double()(x.double())
    torch.testing.assert_close(torch.from_numpy(got).double(), want, atol=ATOL, rtol=RTOL)
    assert "pare::backends::vulkan::" in _symbols(lib)
    assert "pare::backends::vulkan::" not in _symbols(selective_lib)
    result = _verified(lib, ops, ["Delegate"], tmp_path, "with_vulkan")
    entry = {r.entry.key: r for r in result.entries}["pare::delegate_init.vulkan"]
    assert entry.status == "ok" and any("pare::backends::vulkan::" in s.demangled for s in entry.symbols)
    result = _verified(selective_lib, SELECTIVE_OPS, SELECTIVE_CLASSES, tmp_path, "without_vulkan")
    entry = {r.entry.key: r for r in result.entries}["pare::delegate_init.vulkan"]
    assert entry.entry.expect == "absent" and entry.status == "ok" and not entry.symbols


# --- no driver, fallback, corrupt blobs ---------------------------------------------


NO_DRIVER = "import os, sys; os.environ['VK_ICD_FILENAMES'] = '/nonexistent.json'\n"


def _in_subprocess(code: str, runtime_lib) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (the Vulkan loader reads
    VK_ICD_FILENAMES once per process)."""
    env_code = NO_DRIVER + code
    return subprocess.run(
        [sys.executable, "-c", env_code, str(runtime_lib)], capture_output=True, text=True, timeout=600
    )


def test_without_a_driver_the_backend_names_itself_and_the_fix(runtime_lib, tmp_path):
    module = nn.Sequential(nn.Linear(5, 3), nn.ReLU())
    x = randn(2, 5)
    spec = spec_from(module, [(x,)])
    plain = tmp_path / "plain.pare"
    plain.write_bytes(export_model(spec, delegates=VULKAN).program)
    fallback = tmp_path / "fallback.pare"
    fallback.write_bytes(export_model(spec, delegates=delegation.DelegateOptions(("vulkan",), fallback=True)).program)
    torch.save(x, tmp_path / "x.pt")
    code = f"""
import torch
from pare.runtime import PareError, Runtime
rt = Runtime(sys.argv[1])
try:
    rt.load(open({str(plain)!r}, 'rb').read()).method()
    print('CREATED')
except PareError as e:
    print(e.status_name)
    print(e)
x = torch.load({str(tmp_path / "x.pt")!r})
(y,) = rt.load(open({str(fallback)!r}, 'rb').read()).method().run(x.numpy())
torch.save(torch.from_numpy(y), {str(tmp_path / "y.pt")!r})
"""
    run = _in_subprocess(code, runtime_lib)
    assert run.returncode == 0, run.stderr
    status, message = run.stdout.strip().splitlines()[:2]
    assert status == "BackendUnavailable"
    assert message.startswith("pare::delegate_init.vulkan: backend 'vulkan' is not available on this device (")
    assert "install its driver, or re-export the model with --delegate-fallback (or without --delegate vulkan)" in (
        message
    )
    with torch.no_grad():
        want = module(x)
    torch.testing.assert_close(torch.load(tmp_path / "y.pt"), want, rtol=1e-6, atol=1e-6)


def _program(blob: bytes) -> bytes:
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2, 5])
    (y,) = m.delegate_call("vulkan", blob, (), [x], 1)
    m.output(y)
    return pb.to_bytes()


@pytest.fixture(scope="module")
def blob() -> bytes:
    return _blob_of(nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Linear(3, 4)), (randn(2, 5),))


def _resealed(blob: bytearray) -> bytes:
    """`blob` with its checksum recomputed, so init's later checks see the change."""
    struct.pack_into("<I", blob, 12, vulkan_blob.fnv1a(bytes(blob[16:])))
    return bytes(blob)


def _field(blob: bytes, offset: int, value: int) -> bytes:
    b = bytearray(blob)
    struct.pack_into("<I", b, offset, value)
    return _resealed(b)


def test_the_blob_runs(runtime, blob):
    x = randn(2, 5)
    (y,) = runtime.load(_program(blob)).method().run(x.numpy())
    assert y.shape == (2, 4)


def _corrupt_cases(blob: bytes):
    shaders, tensors = struct.unpack_from("<2I", blob, 16)
    tensor_table = vulkan_blob.HEADER_BYTES + 16 * shaders
    dispatch_table = tensor_table + 40 * tensors
    return [
        (b"", r"no PVKB header"),
        (b"PVKC" + blob[4:], r"no PVKB header"),
        (_field(blob, 4, 1), r"has version 1; this runtime reads version 2"),
        (blob[:-4], r"bytes, its header says"),
        (blob[:100] + bytes([blob[100] ^ 1]) + blob[101:], r"checksum"),
        (_field(blob, 16, 0), r"0 shaders"),
        (_field(blob, 20, 5000), r"5000 tensors"),
        (_field(blob, 36, 3), r"sections at"),
        (_field(blob, vulkan_blob.HEADER_BYTES + 8, 9), r"shader 0: .* 9 bindings"),
        (_field(blob, tensor_table, 7), r"tensor 0: kind 7"),
        (_field(blob, tensor_table + 8, 11), r"tensor 0: .* 11 elements"),
        (_field(blob, tensor_table + 4, 1), r"(tensor 0: kind 0, index 1|input 0 has no tensor)"),
        (_field(blob, dispatch_table, 60), r"dispatch 0: shader 60"),
        (_field(blob, dispatch_table + 4, 0), r"dispatch 0: .* 0 threads"),
        (_field(blob, dispatch_table + 16, 0), r"dispatch 0: .* binding 0 tensor 0"),
        (_field(blob, dispatch_table + 16 + 4 * 7, 1), r"dispatch 0"),
    ]


def test_a_corrupt_blob_is_refused_with_one_line(runtime, blob):
    import re

    for bad, detail in _corrupt_cases(blob):
        program = runtime.load(_program(bad))
        with pytest.raises(PareError) as e:
            program.method()
        message = str(e.value)
        assert e.value.status_name == "InvalidProgram", message
        assert "\n" not in message
        assert re.search(r"^pare::delegate_init\.vulkan: the vulkan backend's blob .*" + detail, message), message
        assert "re-export it" in message


@pytest.fixture(scope="module")
def dynamic_blob() -> bytes:
    module = nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Linear(3, 4))
    exported = export_model(spec_from(module, [(randn(2, 5),), (randn(3, 5),)]), delegates=VULKAN)
    return exported_blob(exported.program)


def test_a_corrupt_dynamic_blob_is_refused_with_one_line(runtime, dynamic_blob):
    """The symbols' and terms' checks, each by name; the blob itself runs."""
    import re

    blob = dynamic_blob
    shaders, tensors, dispatches = struct.unpack_from("<3I", blob, 16)
    symbols, terms = struct.unpack_from("<2I", blob, 52)
    assert symbols == 1 and terms > 0
    symbol = vulkan_blob.HEADER_BYTES + 16 * shaders
    term = symbol + 16 * symbols + 40 * tensors + 176 * dispatches
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [-1, 5])
    (y,) = m.delegate_call("vulkan", blob, (), [x], 1)
    m.output(y)
    (got,) = runtime.load(pb.to_bytes()).method().run(randn(7, 5).numpy())
    assert got.shape == (7, 4)
    cases = [
        (_field(blob, symbol, 1), r"symbol 0: input 1 dim 0"),
        (_field(blob, symbol + 4, 2), r"symbol 0: input 0 dim 2"),
        (_field(blob, symbol + 8, 0), r"symbol 0: .* from 0 to"),
        (_field(blob, symbol + 8, 1 << 30), r"symbol 0: .* from 1073741824 to"),
        (_field(blob, term, 0), r"term 0: word 0"),
        (_field(blob, term, 10 * tensors + 44 * dispatches), r"term 0: word"),
        (_field(blob, term + 4, 1), r"term 0: .* symbol 1"),
        (_field(blob, term + 8, 1 << 30), r"tensor \d+: "),
        (_field(blob, 52, 9), r"9 symbols"),
        (_field(blob, 4, 1), r"has version 1; this runtime reads version 2: re-export it"),
    ]
    for bad, detail in cases:
        pb = ProgramBuilder()
        m = pb.method()
        x = m.input("Float", [-1, 5])
        (y,) = m.delegate_call("vulkan", bad, (), [x], 1)
        m.output(y)
        with pytest.raises(PareError) as e:
            runtime.load(pb.to_bytes()).method()
        message = str(e.value)
        assert e.value.status_name == "InvalidProgram" and "\n" not in message, message
        assert re.search(r"^pare::delegate_init\.vulkan: the vulkan backend's blob .*" + detail, message), message


def test_mutated_blobs_fail_cleanly(runtime, blob):
    rng = random.Random(45)
    for _ in range(200):
        bad = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        if bytes(bad) == blob:
            continue
        with pytest.raises(PareError) as e:
            runtime.load(_program(bytes(bad))).method()
        assert e.value.status_name == "InvalidProgram", str(e.value)


def test_a_missing_glslc_fails_the_export_in_one_line(monkeypatch):
    vulkan_blob.spirv.cache_clear()
    monkeypatch.setattr(vulkan_blob.shutil, "which", lambda name: None)
    with pytest.raises(Exception) as e:
        export_model(spec_from(nn.ReLU(), [(randn(3),)]), delegates=VULKAN)
    vulkan_blob.spirv.cache_clear()
    assert str(e.value).endswith(
        "backend vulkan: glslc (the GLSL to SPIR-V compiler) is not installed: apt-get install glslc "
        "(tools/setup.sh installs it), or export without --delegate vulkan"
    )
    assert "\n" not in str(e.value)
