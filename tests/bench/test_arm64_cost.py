"""tools.bench.arm64_cost: the iterations one run of a model takes of each
costed arm64 hot loop, counted from the convolution plan and geometry
(hand-computed trip counts, asserted exactly), the arm64 constants read
back from the runtime's headers, the one-line reasons (a missing llvm-mca-16,
an estimate that moved), and the CI check: a fresh estimate of a few zoo
models against models/zoo/results.json's."""

import re

import pytest
import torch

from pare import _format_table as fmt
from tests.conftest import REPO_ROOT, require_tool
from tools.bench import arm64_cost, arm64_graph, arm64_mca, int8_mca
from tools.bench.arm64_cost import DEPTHWISE, GEMM, INT8_COLUMNS, INT8_TILE, Conv


@pytest.mark.parametrize(("path", "name"), list(arm64_cost.HEADER_CONSTANTS))
def test_constants_are_the_arm64_builds(path, name):
    text = (REPO_ROOT / path).read_text()
    # depthwise_kernels.inc: the arm64 branch's value (the first).
    m = re.search(rf"constexpr int(?:64_t)? {name} = (?:int64_t\{{1\}} << )?(\d+)", text)
    assert m, f"{name} not found in {path}"
    value = int(m.group(1))
    if "<<" in m.group(0):
        value = 1 << value
    assert value == arm64_cost.HEADER_CONSTANTS[(path, name)]


def test_a_1x1_and_a_3x3_convolution_by_hand():
    # 1x1, 16 -> 32 channels over 8x8: C [32, 64] = A [32, 16] B [16, 64].
    # Row panels: 5 whole ones (30 rows); the last 2 rows run few_rows_kernel.
    # Column tiles: 64 / 8 = 8. Two-depth steps: 16 / 2 = 8.
    one = arm64_cost.conv_count(Conv(1, 16, 32, 1, 8, 8, (1, 1), layout=fmt.LAYOUT_GEMM_A))
    assert dict(one.iterations) == {GEMM: 5 * 8 * 8}
    assert one.macs == 32 * 64 * 16 and one.costed_macs == 30 * 64 * 16
    assert one.uncosted == {"gemm few-rows tail": 1}
    # 3x3, padding 1, 8 -> 12 channels over 10x10: C [12, 100] = A [12, 72] B [72, 100].
    # 2 row panels, ceil(100 / 8) = 13 column tiles, 36 steps.
    three = arm64_cost.conv_count(Conv(1, 8, 12, 1, 10, 10, (3, 3), padding=(1, 1), layout=fmt.LAYOUT_GEMM_A))
    assert dict(three.iterations) == {GEMM: 2 * 13 * 36}
    assert three.macs == three.costed_macs == 12 * 100 * 72
    assert three.uncosted == {"im2col panels (packing)": 1}


def test_depth_blocks_odd_depths_and_groups():
    # k = 600: depth blocks 256, 256, 88 -> 128 + 128 + 44 steps; 7 rows: one whole panel and a
    # 1-row tail; 9 columns: 2 tiles.
    assert arm64_cost.gemm_tile_iterations(7, 9, 600) == (1 * 2 * 300, 6 * 9 * 600)
    # 5 rows take the full tile; 3 too, unless the runtime selects pixel rows.
    assert arm64_cost.gemm_tile_iterations(5, 8, 4)[0] == 2
    assert arm64_cost.gemm_tile_iterations(3, 8, 4)[0] == 2
    assert arm64_cost.gemm_tile_iterations(3, 8, 4, few_rows=(1, 2, 3, 4))[0] == 0
    # An odd depth: its last depth is the one-depth tail.
    assert arm64_cost.gemm_tile_iterations(6, 8, 9) == (4, 6 * 8 * 8)
    # 2 groups of 4 -> 6 channels over 4x4, 3x3 unpadded: per group C [6, 4] = A [6, 36] B [36, 4].
    grouped = arm64_cost.conv_count(Conv(1, 8, 12, 2, 4, 4, (3, 3), layout=fmt.LAYOUT_GEMM_A))
    assert grouped.iterations[GEMM] == 2 * 1 * 1 * 18


def test_depthwise_rows():
    # 3x3 depthwise, 32 channels, 40x40, padding 1: 40 // 16 = 2 steps of 16 outputs per row.
    c = Conv(1, 32, 32, 32, 40, 40, (3, 3), padding=(1, 1), layout=fmt.LAYOUT_AS_GIVEN)
    count = arm64_cost.conv_count(c)
    assert dict(count.iterations) == {DEPTHWISE[1]: 32 * 40 * 2}
    assert count.costed_macs == 32 * 40 * 32 * 9 and count.uncosted == {"depthwise row tails": 1}
    # Stride 2 over 14x14: out 7x7, no whole step of 16: nothing costed, the tail listed.
    s2 = arm64_cost.conv_count(Conv(1, 8, 8, 8, 14, 14, (3, 3), (2, 2), (1, 1), layout=fmt.LAYOUT_AS_GIVEN))
    assert not s2.iterations and s2.costed_macs == 0 and s2.uncosted == {"depthwise row tails": 1}
    # 5x5 has no estimate: listed.
    five = arm64_cost.conv_count(Conv(1, 8, 8, 8, 32, 32, (5, 5), padding=(2, 2), layout=fmt.LAYOUT_AS_GIVEN))
    assert five.uncosted == {"depthwise 5x5 stride 1": 1} and not five.iterations


def test_winograd_products():
    # F(4x4, 3x3), 16 -> 16 channels over 8x8: 4 tiles, one block (winograd::allocate: at
    # least 16, at most the tiles); 36 products C [16, 4] = U [16, 16] V [16, 4]:
    # 3 row panels, 1 column tile, 8 steps.
    c = Conv(1, 16, 16, 1, 8, 8, (3, 3), padding=(1, 1), layout=fmt.LAYOUT_WINOGRAD4)
    assert arm64_cost.winograd_block(4, 4, 16, 16) == 4
    count = arm64_cost.conv_count(c)
    assert count.iterations[GEMM] == 36 * 3 * 1 * 8
    # The output transform: one step of 4 tiles per output channel.
    assert count.iterations[arm64_cost.WINOGRAD4_OUTPUT] == 16
    assert count.uncosted == {"winograd 4x4 input transform": 1}
    # 5x5 tiles (20x20 output) in one block of 25: ceil(25 / 4) = 7 steps per channel, the last overlapping.
    big = arm64_cost.conv_count(Conv(1, 16, 16, 1, 20, 20, (3, 3), padding=(1, 1), layout=fmt.LAYOUT_WINOGRAD4))
    assert big.iterations[arm64_cost.WINOGRAD4_OUTPUT] == 16 * 7
    assert arm64_cost.winograd_block(4, 10_000, 64, 64) == 4 * (1 << 18) // (36 * 4 * 128) // 16 * 16


def test_the_int8_im2col_chunk_is_qconvs():
    text = (REPO_ROOT / "runtime/kernels/quantized/qconv.cc").read_text()
    assert "const int64_t rows = (int64_t{64} << 10) / (k * g.out_w);" in text
    assert arm64_cost.INT8_CHUNK_BYTES == 64 << 10


def test_an_int8_1x1_and_3x3_convolution_by_hand():
    # 1x1, 16 -> 10 channels over 6x6: gemm_columns(10, 36, 16): 2 blocks of 8 channels (the
    # last 2 channels run the whole tile), 3 tiles of 12 pixels, 4 quads of depth.
    one = arm64_cost.int8_conv_count(Conv(1, 16, 10, 1, 6, 6, (1, 1)))
    assert dict(one.iterations) == {INT8_COLUMNS: 2 * 3 * 4}
    assert one.macs == 10 * 36 * 16 and one.costed_macs == 10 * 36 * 16
    assert one.uncosted == {}
    # 3x3, padding 1, 8 -> 12 channels over 10x10, batch 2: per image gemm_columns(12, 100, 72)
    # on the im2col matrix: 2 blocks, 8 tiles (96 pixels; the last 4 a narrower loop), 18 quads.
    three = arm64_cost.int8_conv_count(Conv(2, 8, 12, 1, 10, 10, (3, 3), padding=(1, 1)))
    assert dict(three.iterations) == {INT8_COLUMNS: 2 * 2 * 8 * 18}
    assert three.costed_macs == 2 * 12 * 96 * 72
    assert three.uncosted == {"int8 im2col (packing)": 1, "int8 columns pixel tail": 1}
    # 3 input channels (a stem), 3x3 over 100x25: k = 27 (7 quads), chunks of 65536 // (27 * 25) = 97
    # output rows: 97 x 25 = 2425 pixels (202 tiles, 1 left) and 3 x 25 = 75 (6 tiles, 3 left),
    # not 2500 // 12 = 208.
    stem = arm64_cost.int8_conv_count(Conv(1, 3, 4, 1, 100, 25, (3, 3), padding=(1, 1)))
    assert dict(stem.iterations) == {INT8_COLUMNS: (202 + 6) * 7}
    assert stem.uncosted["int8 columns pixel tail"] == 2
    # A last tile of 9-11 pixels runs the whole tile: 1x1 over 5x7 = 35 pixels, 3 tiles.
    tail = arm64_cost.int8_conv_count(Conv(1, 12, 16, 1, 5, 7, (1, 1)))
    assert dict(tail.iterations) == {INT8_COLUMNS: 2 * 3 * 3} and not tail.uncosted
    # Depthwise: the portable plane, listed.
    # Depthwise: rows under 16 outputs run 8-output blocks (not costed); 3x3
    # and 5x5 rows of 16 or more, ceil(out_w / 16) blocks per row, one
    # iteration per filter row; dilation across and 7x7 not costed.
    dw = arm64_cost.int8_conv_count(Conv(1, 8, 8, 8, 10, 10, (3, 3), padding=(1, 1)))
    assert not dw.iterations and dw.uncosted == {"int8 depthwise rows under 16": 1} and dw.macs == 8 * 100 * 9
    wide = arm64_cost.int8_conv_count(Conv(2, 6, 6, 6, 20, 40, (5, 5), stride=(2, 2), padding=(2, 2)))
    assert dict(wide.iterations) == {int8_mca.DEPTHWISE_5X5_S2: 2 * 6 * 10 * 2 * 5} and not wide.uncosted
    assert wide.costed_macs == wide.macs == 2 * 6 * 10 * 20 * 25
    dilated = arm64_cost.int8_conv_count(Conv(1, 4, 4, 4, 20, 20, (3, 3), padding=(2, 2), dilation=(2, 2)))
    assert not dilated.iterations and dilated.uncosted == {"int8 depthwise": 1}


def test_an_int8_linear_by_hand():
    # gemm_rows(6, 10, 40): 1 block of 4 channels, 2 tiles of 4 rows, 2 steps of 16 bytes.
    count = arm64_cost.int8_linear_count(10, 40, 6)
    assert dict(count.iterations) == {INT8_TILE: 1 * 2 * 2}
    assert count.macs == 10 * 40 * 6 and count.costed_macs == 4 * 4 * 16 * 4
    assert set(count.uncosted) == {"int8 tile row tail", "int8 tile channel tail", "int8 tile depth tail"}
    # One row (a batch-1 classifier): the 1-row tail only.
    assert not arm64_cost.int8_linear_count(1, 1280, 1000).iterations


def test_int8_dynamic_linear_count():
    # 10 rows x 40 -> 20: 2 blocks of 16 channels (the second partial, run whole) x 2 row tiles x
    # 2 steps of 4 quads (10 quads: 2 by broadcast, not costed), and 2 rows of the 1-row block.
    count = arm64_cost.int8_dynamic_linear_count(10, 40, 20)
    assert dict(count.iterations) == {arm64_cost.INT8_DYNAMIC: 2 * 2 * 2}
    assert count.macs == 10 * 40 * 20 and count.costed_macs == 20 * 8 * 32
    assert set(count.uncosted) == {"int8 dynamic row tail", "int8 dynamic depth tail"}
    whole = arm64_cost.int8_dynamic_linear_count(8, 64, 32)
    assert whole.costed_macs == whole.macs and not whole.uncosted


def test_a_dynamically_quantized_linear_graph():
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from pare.quantizer import PareQuantizer

    model = torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.ReLU(), torch.nn.Linear(48, 16)).eval()
    x = (torch.randn(8, 64),)
    prepared = prepare_pt2e(torch.export.export(model, x).module(), PareQuantizer(dynamic=True))
    prepared(*x)
    ep = torch.export.export(convert_pt2e(prepared), x).run_decompositions()
    count = arm64_graph.graph_count(ep, x, [], "two dynamic linears")
    # 64 -> 48 on 8 rows: 3 blocks x 2 row tiles x 4 steps; 48 -> 16: 1 x 2 x 3.
    assert dict(count.iterations) == {arm64_cost.INT8_DYNAMIC: 3 * 2 * 4 + 1 * 2 * 3}
    assert count.costed_macs == count.macs == 8 * (64 * 48 + 48 * 16)


def test_an_int8_graph():
    from tests.tracer.models.quantized_cnn import quantized

    model, inputs = quantized()
    ep = torch.export.export(model, inputs[0]).run_decompositions()
    count = arm64_graph.graph_count(ep, inputs[0], [], "SmallCNN int8")
    # Batch 2 of 3x16x16: the 3 -> 8 stem (k = 27) and the 8 -> 8 body (k = 72), 3x3 padded:
    # 1 block x 22 tiles (256 pixels: 21 and a last of 4, not costed) each, 7 and 18 quads; the
    # 8 -> 10 linear on 2 rows: tails only.
    assert dict(count.iterations) == {INT8_COLUMNS: 2 * 21 * (7 + 18)}
    assert count.uncosted["int8 im2col (packing)"] == 2 and count.uncosted["int8 tile row tail"] == 1
    assert "int8 convolution" not in count.uncosted and "addmm" not in count.uncosted


def test_a_graph_pairs_no_prepacks_and_lists_the_rest():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Conv2d(8, 12, 3, padding=1)
            self.b = torch.nn.Conv2d(12, 16, 1)

        def forward(self, x):
            return torch.relu(self.b(self.a(x)))

    x = torch.rand(1, 8, 10, 10)
    ep = torch.export.export(Net().eval(), (x,)).run_decompositions()  # aten.convolution, as the exporter's
    count = arm64_graph.graph_count(ep, (x,), [], "Net")
    # The 3x3 as above (936); the 1x1: C [16, 100] = A [16, 12] B [12, 100]: 2 whole panels and a
    # 4-row one that takes the full tile (no pixel rows here), 13 column tiles, 6 steps.
    assert count.iterations[GEMM] == 2 * 13 * 36 + 3 * 13 * 6
    assert count.uncosted["relu"] == 1
    with pytest.raises(arm64_cost.CostError, match="pair with no convolution"):
        arm64_graph.graph_count(ep, (x,), [((5, 5, 1, 1), fmt.LAYOUT_GEMM_A)], "Net")


def test_a_dynamic_batch_counts_the_given_input():
    # A dynamic batch's SymInt holds torch.export's hint (its example's 2 here): the count is
    # the given input's (1), the 3x3 of test_a_1x1_and_a_3x3_convolution_by_hand once.
    net = torch.nn.Conv2d(8, 12, 3, padding=1).eval()
    x = torch.rand(2, 8, 10, 10)
    ep = torch.export.export(net, (x,), dynamic_shapes=({0: torch.export.Dim("batch", max=4)},))
    count = arm64_graph.graph_count(ep.run_decompositions(), (x[:1],), [], "Conv2d")
    assert count.iterations[GEMM] == 2 * 13 * 36 and count.macs == 12 * 100 * 72


def test_a_moved_estimate_is_one_line_naming_the_model_and_kernel():
    old = {"kernels": {GEMM: {"iterations": 100, "cycles": {"cortex-a55": 2700}}}}
    new = {"kernels": {GEMM: {"iterations": 100, "cycles": {"cortex-a55": 2900}}}}
    (line,) = arm64_cost.compare("resnet18", old, new, 0.005)
    assert line.startswith("resnet18: gemm 6x8 tile on cortex-a55: 2,700 -> 2,900 cycles (+7.4%")
    assert "\n" not in line
    assert arm64_cost.compare("resnet18", old, old, 0.005) == []
    assert "--record --only resnet18" in arm64_cost.compare("resnet18", None, new, 0.005)[0]


def test_a_missing_llvm_mca_is_a_one_line_reason(monkeypatch, capsys):
    require_tool("clang++-16", package="clang-16")
    require_tool("llvm-cxxfilt-16", package="llvm-16")
    monkeypatch.setattr(arm64_mca, "LLVM_MCA", "llvm-mca-16-not-installed")
    monkeypatch.setattr(arm64_cost, "_MCA", {})
    assert arm64_cost.main(["--only", "squeezenet1_1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot run llvm-mca-16-not-installed") and "install llvm-16" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("model", arm64_cost.CHECKED_MODELS)
def test_recorded_estimate_is_current(model):
    """The CI check: a kernel whose loop got slower on arm64, or a plan that
    runs more iterations, moves the estimate past the tolerance."""
    require_tool("clang++-16", package="clang-16")
    require_tool("llvm-mca-16", package="llvm-16")
    require_tool("llvm-cxxfilt-16", package="llvm-16")
    recorded = arm64_cost.load_record()["models"][model].get("arm64")
    fresh = arm64_cost.estimate(*arm64_graph.model_count(model))
    problems = arm64_cost.compare(model, recorded, fresh, arm64_cost.DEFAULT_TOLERANCE)
    assert not problems, problems[0]
    assert fresh["uncosted"] == recorded["uncosted"] and fresh["coverage"] == recorded["coverage"]


def test_the_doc_shows_the_record():
    record = arm64_cost.load_record()
    assert arm64_cost.table(record) in (REPO_ROOT / arm64_cost.DOC).read_text()
