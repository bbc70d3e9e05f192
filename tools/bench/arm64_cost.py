"""An estimated arm64 cycle count per zoo model: each costed hot loop's llvm-mca cycles per iteration times the iterations the model runs.

    .venv/bin/python -m tools.bench.arm64_cost [--only NAME,...] [--record | --check] [--tolerance 0.005]

There is no arm64 phone here. tools/bench/arm64_mca.py estimates each float
hot loop's cycles per iteration on a little core (Cortex-A55) and a big one
(Neoverse-N2); this module counts how many times one run of a model runs
each of those loops on arm64 (tools/bench/arm64_graph.py walks the
model's exported graph) and multiplies. The record (models/zoo/
results.json, each model's "arm64") and the table in docs/performance.md
are what CI compares a fresh estimate with (--check): a change to a kernel
that makes its loop slower, or to the plan that makes a model run a slower
loop or more iterations, fails with the model, the kernel and the change.

The counts are computed from each convolution's plan and geometry, not
counted by the instrumentation runtime: on this host that runtime runs the
x86-64 copies of the loops (a 6x16 or 6x32 GEMM tile, one-vector depthwise
rows), not the arm64 ones the estimates measure, and a loop's trip count on
arm64 follows exactly from the layer's geometry, the weight layout the
exporter chose (read from the model's program) and the arm64 build's
constants (read from the runtime's headers below, so a changed constant is
a failing test, not a wrong count). The layers' shapes are torch.export's,
for the model's first representative input (what the zoo times); one
thread (the split over threads changes the tile counts).

The costed loops, in arm64_mca's units (its KERNELS):

- "gemm 6x8 tile": per two depths of a 6x8 register tile: for a product
  C [m, n] = A [m, k] B [k, n], ceil(m / 6) x ceil(n / 8) tiles per depth
  block of kKC, each floor(kc / 2) iterations (an odd depth's last step is
  a one-depth tail, not costed). A convolution through the blocked GEMM
  (layout gemm_a: pointwise, or im2col panels) is one product per (image,
  group): m = out channels per group, n = output pixels, k = cg x kh x kw;
  a Winograd layer is, per block of tiles, one product per position (36
  for F(4x4, 3x3), 16 for F(2x2, 3x3)): m = out channels, n = the block's
  tiles, k = in channels; pixel rows (layout pixel_rows) the product
  transposed: m = pixels, n = out channels. The last 1 or 2 rows of a
  product (3 or 4 too in a runtime with a pixel-rows layer) run
  few_rows_kernel instead: not costed.
- "depthwise 3x3 stride 1" / "stride 2": per 16 outputs of a row (4
  vectors): floor(out_w / 16) per output row of each output plane; the
  row's rest runs one vector at a time (not costed).
- "winograd 4x4 output": per 4 tiles (a vector) of one output channel:
  ceil(n / 4) per output channel of each block of n >= 4 tiles. (The input
  transform is not costed: the loop arm64_mca cuts out of it is 30 of the
  step's ~150 vector operations, one pass of its transform, not a step.)

The int8 layers' loops (PT2E dequantize -> conv / linear -> quantize, as
the quantize pass lowers them), in tools/bench/int8_mca.py's units:

- "int8 columns sdot 8x12": an int8 convolution (pare::qconv2d_prepacked)
  that is no depthwise runs gemm_columns, qgemm_arm64_columns.inc's tile
  (SDOT on ARMv8.2, which both cores here have): per 8 output channels
  (a last partial block runs the whole tile) and 12 pixels one iteration
  per quad of the depth (384 multiply-adds), int8_mca.COLUMNS. Per (image,
  group): ceil(og / 8) x tiles x ceil(k / 4), tiles of 12 pixels per chunk
  of output rows (all of them, or at most 64 KB of im2col matrix when the
  layer has under 4 input channels per group), a last tile of 9-11 pixels
  counted (the same loop), one of 1-8 not (a narrower one).
- "int8 depthwise neon 3x3 s1" (s2, 5x5): an int8 depthwise convolution
  runs qgemm_arm64_depthwise.inc's rows (NEON, every arm64 CPU): per
  output plane and row of 16 or more outputs, ceil(out_w / 16) blocks of
  16 outputs, one iteration per filter row (16 x taps multiply-adds).
- "int8 sdot 4x4 tile": an int8 linear layer (pare::qlinear_prepacked)
  runs gemm_rows on qgemm_arm64_tile.inc's tile, SDOT on ARMv8.2 (both
  cores here have it): per 16 bytes of depth of 4 output channels x 4
  rows, floor(out / 4) x floor(rows / 4) x floor(in / 16) (int8_mca's
  "dotprod (sdot)"). A batch-1 classifier's single row runs the 1-row
  tail only: nothing costed.
- "int8 dynamic linear sdot 16x4": a dynamically quantized linear layer
  (pare::qlinear_dynamic) runs qgemm_arm64_dynamic.inc's SDOT block: per
  16 output channels (a partial last block whole) and 4 rows, one
  iteration per 4 quads of depth, ceil(out / 16) x floor(rows / 4) x
  floor(ceil(in / 4) / 4).

Not costed (listed in the record's "uncosted", never dropped): the packing
loops (im2col panels and rows, pack_b, the int8 im2col), the Winograd
input transform (and F(2x2, 3x3)'s both), pixel
rows' transpose, the GEMM's one-depth and few-rows tails, the depthwise
rows' tails, 5x5 and 7x7 depthwise, the channels-last depthwise, the narrow
GEMM, float linear layers and matmuls, the int8 depthwise rows under 16
outputs, 7x7 and the portable plane, the int8 tiles' channel, pixel (row) and depth
tails, the dynamic linear's row and depth tails, transposed, 1-d and 3-d
convolutions, and every other op. "coverage" is the share
of the model's multiply-adds (convolutions, linear layers, matmuls, counted
as a direct convolution would) that the costed loops perform.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pare import _format_table as fmt
from tools import REPO_ROOT
from tools.bench import arm64_mca, int8_mca
from tools.bench.arm64_mca import DEFAULT_CPUS, McaError
from tools.cli_parser import one_line_errors
from tools.doc_tables import replace_between

# The arm64 build's constants. The packing ones are the program format's
# (runtime/core/program_format.def); HEADER_CONSTANTS are read back from
# the headers by the tests.
KC = fmt.PACK_KC
MR = fmt.PACK_MR
NARROW_MAX_PIXELS = fmt.PACK_NARROW_MAX_PIXELS
PIXEL_ROWS_MAX = fmt.PACK_PIXEL_ROWS_MAX_PIXELS
PANEL_COLS = fmt.PACK_PANEL_COLS
PAD_COLS = fmt.PACK_PAD_COLS
LANES = 4  # NEON: 4 floats a vector
TILE_COLS = 2 * LANES  # gemm.h's kTileCols off x86-64: one 6x8 register tile
MC = 72
NC = 256
ROW_VECTORS = 4  # depthwise_kernels.inc's kRowVectors on arm64
WINOGRAD_BLOCK_BYTES = 1 << 18
# The int8 layers' (runtime/kernels/quantized/): the arm64 SDOT / NEON tile
# of gemm_rows, the gemm_columns tile, and the most bytes of an
# im2col matrix qconv.cc writes at a time for fewer than 4 input channels.
INT8_TILE_CHANNELS = 4
INT8_TILE_PIXELS = 4
INT8_STEP = 16
INT8_COLUMNS_CHANNELS = 8
INT8_COLUMNS_PIXELS = 12
INT8_CHUNK_BYTES = 64 << 10
# pare::qlinear_dynamic's SDOT block (qgemm_arm64_dynamic.inc): 16 channels
# x 4 rows, 4 quads of depth an iteration.
INT8_DYNAMIC_CHANNELS = 16
INT8_DYNAMIC_ROWS = 4
INT8_DYNAMIC_STEP = 16
HEADER_CONSTANTS = {
    ("runtime/kernels/common/gemm.h", "kMC"): MC,
    ("runtime/kernels/common/gemm.h", "kNC"): NC,
    ("runtime/kernels/common/depthwise_kernels.inc", "kRowVectors"): ROW_VECTORS,
    ("runtime/kernels/prepacked/winograd.h", "kBlockBytes"): WINOGRAD_BLOCK_BYTES,
    ("runtime/kernels/quantized/qgemm_arm64.inc", "kTileChannels"): INT8_TILE_CHANNELS,
    ("runtime/kernels/quantized/qgemm_arm64.inc", "kTilePixels"): INT8_TILE_PIXELS,
    ("runtime/kernels/quantized/qgemm_arm64.inc", "kStep"): INT8_STEP,
    ("runtime/kernels/quantized/qgemm_arm64.inc", "kMR"): INT8_COLUMNS_CHANNELS,
    ("runtime/kernels/quantized/qgemm_arm64.inc", "kColumnsPixels"): INT8_COLUMNS_PIXELS,
    ("runtime/kernels/quantized/qgemm.h", "kDynamicBlock"): INT8_DYNAMIC_CHANNELS,
}

GEMM = "gemm 6x8 tile"
DEPTHWISE = {1: "depthwise 3x3 stride 1", 2: "depthwise 3x3 stride 2"}
WINOGRAD4_OUTPUT = "winograd 4x4 output"
INT8_COLUMNS = int8_mca.COLUMNS
INT8_TILE = "int8 sdot 4x4 tile"
# Each int8 loop's llvm-mca estimate: int8_mca's kernel of that name.
INT8_DYNAMIC = int8_mca.DYNAMIC
INT8_MCA = {INT8_COLUMNS: int8_mca.COLUMNS, INT8_TILE: "dotprod (sdot)", INT8_DYNAMIC: int8_mca.DYNAMIC}
# The int8 depthwise rows (qgemm_arm64_depthwise.inc), by (taps across, stride across).
INT8_DEPTHWISE = {
    (3, 1): int8_mca.DEPTHWISE_3X3,
    (3, 2): int8_mca.DEPTHWISE_3X3_S2,
    (5, 1): int8_mca.DEPTHWISE_5X5,
    (5, 2): int8_mca.DEPTHWISE_5X5_S2,
}
INT8_DEPTHWISE_BLOCK = 16  # outputs of a row per block
INT8_MCA.update({name: name for name in INT8_DEPTHWISE.values()})
FLOAT_COSTED = (GEMM, *DEPTHWISE.values(), WINOGRAD4_OUTPUT)
COSTED = (*FLOAT_COSTED, *INT8_MCA)

# The zoo models the table covers: the CNNs whose work is float convolutions.
DEFAULT_MODELS = (
    "mobilenet_v2",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "resnet18",
    "resnet50",
    "efficientnet_b0",
    "squeezenet1_1",
    "shufflenet_v2_x1_0",
    "mnasnet1_0",
    "regnet_x_400mf",
    "googlenet",
    "mobilenet_v2_int8",
    "mobilenet_v3_small_int8",
    "resnet18_int8",
    "resnet50_int8",
    "efficientnet_b0_int8",
    "shufflenet_v2_x1_0_int8",
)
# What CI recomputes (tests/bench/test_arm64_cost.py): small inputs, every costed loop.
CHECKED_MODELS = ("squeezenet1_1", "mobilenet_v2")
# The relative change of a model's estimate or of one kernel's cycles that
# fails --check. The counts are exact and llvm-mca is deterministic for one
# llvm-16; the slack is for another llvm-16 build's scheduling model.
DEFAULT_TOLERANCE = 0.005

RECORD = Path("models") / "zoo" / "results.json"
DOC = Path("docs") / "performance.md"
BEGIN = "<!-- arm64-cost:begin (written by python -m tools.bench.arm64_cost --record) -->"
END = "<!-- arm64-cost:end -->"


class CostError(Exception):
    """A model the counter cannot follow, or a bad record: one line."""


@dataclass(frozen=True)
class Conv:
    """A 2-d float convolution as the plan sees it (conv_plan.h's Geometry)."""

    batch: int
    in_channels: int
    out_channels: int
    groups: int
    height: int
    width: int
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    layout: int | None = None  # the program's pare::conv2d_prepack layout; None: aten::convolution

    @property
    def cg(self) -> int:
        return self.in_channels // self.groups

    @property
    def og(self) -> int:
        return self.out_channels // self.groups

    def _extent(self, i: int) -> int:
        size = (self.height, self.width)[i]
        return (size + 2 * self.padding[i] - self.dilation[i] * (self.kernel[i] - 1) - 1) // self.stride[i] + 1

    @property
    def out_h(self) -> int:
        return self._extent(0)

    @property
    def out_w(self) -> int:
        return self._extent(1)

    @property
    def pixels(self) -> int:
        return self.out_h * self.out_w

    @property
    def depth(self) -> int:
        return self.cg * self.kernel[0] * self.kernel[1]

    @property
    def macs(self) -> int:
        return self.batch * self.out_channels * self.pixels * self.depth

    @property
    def pointwise(self) -> bool:
        return self.kernel == (1, 1) and self.stride == (1, 1) and self.padding == (0, 0)


def algorithm(c: Conv) -> str:
    """The algorithm conv_plan.h's choose() / choose_packed() names for
    `c` on arm64 (a build that selects the layer's fast paths, as a zoo
    model's runtime does)."""
    if c.layout is None:
        if c.cg == 1:
            return "depthwise"
        if c.pointwise and NARROW_MAX_PIXELS < c.pixels <= PIXEL_ROWS_MAX and c.pixels % PANEL_COLS:
            return "pixel_rows"
    else:
        named = {
            fmt.LAYOUT_AS_GIVEN: "depthwise",
            fmt.LAYOUT_DEPTHWISE_HWIO: "depthwise_channels_last",
            fmt.LAYOUT_WINOGRAD2: "winograd2",
            fmt.LAYOUT_WINOGRAD4: "winograd4",
            fmt.LAYOUT_PIXEL_ROWS: "pixel_rows",
        }
        if c.layout in named:
            return named[c.layout]
    if c.pointwise and c.pixels <= NARROW_MAX_PIXELS:
        return "narrow_gemm"
    return "gemm"


def _depth_blocks(k: int) -> list[int]:
    return [min(KC, k - p0) for p0 in range(0, k, KC)] or [0]


def gemm_tile_iterations(m: int, n: int, k: int, few_rows: tuple[int, ...] = (1, 2)) -> tuple[int, int]:
    """(two-depth steps of the 6x8 tile, the multiply-adds they do) of one
    sgemm_blocks(m, n, k): per depth block of kKC, ceil(n / 8) column tiles
    (kNC is a multiple of 8) times the row panels the 6x8 tile takes,
    floor(kc / 2) steps each. The row panels are every whole one (kMC is a
    multiple of kMR) and a last one of m % 6 rows unless `few_rows` has
    that count (gemm_kernels.inc's micro_kernel: 1 and 2 rows always, 3
    and 4 too in a runtime that selects pixel_rows_kernel, run few_rows_kernel)."""
    if m == 0 or n == 0:
        return 0, 0
    steps = sum(kc // 2 for kc in _depth_blocks(k))
    panels, rest = divmod(m, MR)
    rows = panels * MR
    if rest and rest not in few_rows:
        panels, rows = panels + 1, m
    return panels * math.ceil(n / TILE_COLS) * steps, rows * n * 2 * steps


def winograd_block(tile: int, tiles: int, in_channels: int, out_channels: int) -> int:
    """Tiles per block, as winograd::allocate chooses it."""
    positions = (tile + 2) ** 2
    block = (4 if tile == 4 else 1) * WINOGRAD_BLOCK_BYTES // (positions * 4 * (in_channels + out_channels))
    block = max(block // PAD_COLS * PAD_COLS, PAD_COLS)
    return min(block, tiles)


@dataclass
class Count:
    """One run's iterations of each costed loop, the multiply-adds (all,
    and those the costed loops do), and what was not costed."""

    iterations: Counter = field(default_factory=Counter)
    macs: int = 0
    costed_macs: int = 0
    uncosted: Counter = field(default_factory=Counter)

    def add(self, other: Count) -> None:
        self.iterations.update(other.iterations)
        self.macs += other.macs
        self.costed_macs += other.costed_macs
        self.uncosted.update(other.uncosted)


def conv_count(c: Conv, few_rows: tuple[int, ...] = (1, 2)) -> Count:
    """The iterations one run of convolution `c` takes of each costed loop
    on arm64; `few_rows`: the last row panels the GEMM runs with
    few_rows_kernel (gemm_tile_iterations)."""
    out = Count(macs=c.macs)
    alg = algorithm(c)
    per_group = c.batch * c.groups
    if alg in ("gemm", "pixel_rows"):
        # Pixel rows: C^T [p, og] = X^T W^T, the pixels as the rows.
        m, n = (c.og, c.pixels) if alg == "gemm" else (c.pixels, c.og)
        steps, macs = gemm_tile_iterations(m, n, c.depth, few_rows)
        out.iterations[GEMM] += per_group * steps
        out.costed_macs += per_group * macs
        if alg == "pixel_rows":
            out.uncosted["pixel rows transpose"] += 1
            if not c.pointwise:
                out.uncosted["im2col rows (packing)"] += 1
        elif not c.pointwise:
            out.uncosted["im2col panels (packing)"] += 1
        if c.depth % 2:
            out.uncosted["gemm one-depth tail"] += 1
        if m % MR in few_rows:
            out.uncosted["gemm few-rows tail"] += 1
    elif alg in ("winograd2", "winograd4"):
        t = 4 if alg == "winograd4" else 2
        tiles = math.ceil(c.out_h / t) * math.ceil(c.out_w / t)
        block = winograd_block(t, tiles, c.cg, c.og)
        for t0 in range(0, tiles, block):
            n = min(block, tiles - t0)
            steps, _ = gemm_tile_iterations(c.og, n, c.cg, few_rows)
            out.iterations[GEMM] += per_group * (t + 2) ** 2 * steps
            if t == 4 and n >= LANES:
                # output_transform: per output channel, LANES tiles a step (the last
                # step overlapping the one before); a block under LANES tiles goes
                # one tile at a time (not costed).
                out.iterations[WINOGRAD4_OUTPUT] += per_group * c.og * math.ceil(n / LANES)
            elif t == 4:
                out.uncosted["winograd 4x4 output, one tile at a time"] += 1
        # The products do the layer's multiply-adds (fewer of them): its share is costed.
        out.costed_macs += c.macs * 2 * sum(kc // 2 for kc in _depth_blocks(c.cg)) // max(c.cg, 1)
        out.uncosted["winograd 4x4 input transform" if t == 4 else "winograd 2x2 transforms"] += 1
    elif alg == "depthwise" and c.kernel in ((3, 3),) and c.stride[0] == c.stride[1] in (1, 2) and c.dilation == (1, 1):
        step = ROW_VECTORS * LANES
        tiny = c.out_channels == c.in_channels and c.pixels <= 4 and c.height * c.width <= 64
        full = 0 if tiny else c.out_w // step
        planes = c.batch * c.out_channels
        if full:
            out.iterations[DEPTHWISE[c.stride[0]]] += planes * c.out_h * full
        out.costed_macs += planes * c.out_h * full * step * 9
        if full * step < c.out_w:
            out.uncosted["depthwise row tails"] += 1
    else:
        kh, kw = c.kernel
        name = {
            "depthwise": f"depthwise {kh}x{kw} stride {c.stride[0]}",
            "depthwise_channels_last": "depthwise channels-last",
            "narrow_gemm": "narrow gemm",
        }.get(alg, alg)
        out.uncosted[name] += 1
    return out


def int8_conv_count(c: Conv) -> Count:
    """The iterations one run of int8 convolution `c`
    (pare::qconv2d_prepacked, qconv.cc) takes on arm64. One input channel
    per group: qgemm_arm64_depthwise.inc's rows for 3 or 5 taps across at
    stride 1 or 2 (dilation 1 across), per output plane and row
    ceil(out_w / 16) blocks of 16 outputs (the last one overlapping), one
    iteration per filter row; rows under 16 outputs (8-output blocks), 7
    taps and the portable plane not costed. Else per (image,
    group) gemm_columns(og, pixels, k) over the image (1x1, stride 1,
    unpadded) or its im2col matrix, in chunks of output rows of at most
    64 KB when cg < 4: qgemm_arm64_columns.inc's SDOT tile, per 8 output
    channels (the last block whole) and 12 pixels, one iteration per quad
    of k. A chunk's last pixels % 12 when 8 or fewer (a narrower loop) are
    not costed; a partial channel block's padding is costed, not counted
    in costed_macs."""
    out = Count(macs=c.macs)
    if c.cg == 1:
        kh, kw = c.kernel
        loop = INT8_DEPTHWISE.get((kw, c.stride[1])) if c.dilation[1] == 1 else None
        if loop is None:
            out.uncosted["int8 depthwise"] += 1
        elif c.out_w < INT8_DEPTHWISE_BLOCK:
            out.uncosted["int8 depthwise rows under 16"] += 1
        else:
            blocks = -(-c.out_w // INT8_DEPTHWISE_BLOCK)
            out.iterations[loop] += c.batch * c.groups * c.og * c.out_h * blocks * kh
            out.costed_macs += c.macs
        return out
    k = c.depth
    quads = -(-k // 4)
    chunk = c.out_h
    if not c.pointwise:
        out.uncosted["int8 im2col (packing)"] += 1
        if c.cg < 4:
            chunk = min(max(INT8_CHUNK_BYTES // (k * c.out_w), 1), c.out_h)
    blocks = -(-c.og // INT8_COLUMNS_CHANNELS)
    for oy0 in range(0, c.out_h, chunk):
        pixels = min(chunk, c.out_h - oy0) * c.out_w
        tiles, tail = divmod(pixels, INT8_COLUMNS_PIXELS)
        if tail > 8:
            tiles, tail = tiles + 1, 0
        if blocks * tiles * quads:
            out.iterations[INT8_COLUMNS] += c.batch * c.groups * blocks * tiles * quads
        out.costed_macs += c.batch * c.groups * c.og * min(tiles * INT8_COLUMNS_PIXELS, pixels) * k
        if tail:
            out.uncosted["int8 columns pixel tail"] += 1
    return out


def int8_linear_count(rows: int, in_features: int, out_features: int) -> Count:
    """The iterations one run of an int8 linear layer
    (pare::qlinear_prepacked, qlinear.cc) takes on arm64: gemm_rows(out,
    rows, in) on qgemm_arm64_tile.inc's tile (SDOT on ARMv8.2), per 4
    output channels and 4 rows floor(in / 16) steps of 16 bytes. The last
    rows % 4 rows (dot_tile<4, 1>) and out % 4 channels (dot_tile<1, 4>)
    and a depth's last in % 16 bytes (one zero-padded step) are not costed."""
    out = Count(macs=rows * in_features * out_features)
    blocks, tiles, steps = out_features // INT8_TILE_CHANNELS, rows // INT8_TILE_PIXELS, in_features // INT8_STEP
    if blocks * tiles * steps:
        out.iterations[INT8_TILE] += blocks * tiles * steps
    out.costed_macs += blocks * tiles * steps * INT8_TILE_CHANNELS * INT8_TILE_PIXELS * INT8_STEP
    if rows % INT8_TILE_PIXELS:
        out.uncosted["int8 tile row tail"] += 1
    if out_features % INT8_TILE_CHANNELS:
        out.uncosted["int8 tile channel tail"] += 1
    if in_features % INT8_STEP:
        out.uncosted["int8 tile depth tail"] += 1
    return out


def int8_dynamic_linear_count(rows: int, in_features: int, out_features: int) -> Count:
    """The iterations one run of a dynamically quantized linear layer
    (pare::qlinear_dynamic, qlinear_dynamic.cc) takes on arm64:
    gemm_dynamic on qgemm_arm64_dynamic.inc's SDOT blocks, per 16 output
    channels (a last partial block runs whole) and 4 rows floor(ceil(in /
    4) / 4) steps of 4 quads. The last rows % 4 rows (the 1-row block) and
    the depth's last ceil(in / 4) % 4 quads (by broadcast) are not costed."""
    out = Count(macs=rows * in_features * out_features)
    blocks = -(-out_features // INT8_DYNAMIC_CHANNELS)
    tiles, steps = rows // INT8_DYNAMIC_ROWS, -(-in_features // 4) // 4
    if blocks * tiles * steps:
        out.iterations[INT8_DYNAMIC] += blocks * tiles * steps
    out.costed_macs += out_features * tiles * INT8_DYNAMIC_ROWS * min(steps * INT8_DYNAMIC_STEP, in_features)
    if rows % INT8_DYNAMIC_ROWS:
        out.uncosted["int8 dynamic row tail"] += 1
    if -(-in_features // 4) % 4:
        out.uncosted["int8 dynamic depth tail"] += 1
    return out


# llvm-mca's cycles per iteration, once per process (never across machines or commits).
_MCA: dict[tuple[str, str], float] = {}


def cycles_per_iteration(kernels, cpus) -> dict[tuple[str, str], float]:
    missing = [k for k in kernels if k in FLOAT_COSTED and any((k, c) not in _MCA for c in cpus)]
    if missing:
        for e in arm64_mca.estimates(tuple(cpus), tuple(missing)):
            _MCA[(e.kernel, e.cpu)] = e.cycles_per_iteration
    for k in kernels:
        for c in cpus:
            if k in INT8_MCA and (k, c) not in _MCA:
                _MCA[(k, c)] = int8_mca.loop_cycles_per_iteration(INT8_MCA[k], c)
    return {(k, c): _MCA[(k, c)] for k in kernels for c in cpus}


def estimate(count: Count, shape: str, cpus=DEFAULT_CPUS) -> dict:
    """The record's "arm64" entry for one model."""
    per_iteration = cycles_per_iteration(COSTED, cpus)
    kernels = {
        k: {
            "iterations": count.iterations[k],
            "cycles": {c: round(count.iterations[k] * per_iteration[(k, c)]) for c in cpus},
        }
        for k in COSTED
        if count.iterations[k]
    }
    return {
        "input": shape,
        "cycles": {c: sum(v["cycles"][c] for v in kernels.values()) for c in cpus},
        "kernels": kernels,
        "macs": count.macs,
        "costed_macs": count.costed_macs,
        "coverage": round(count.costed_macs / count.macs, 4) if count.macs else 0.0,
        "uncosted": dict(sorted(count.uncosted.items())),
    }


def compare(model: str, recorded: dict | None, fresh: dict, tolerance: float) -> list[str]:
    """One line per kernel (and per model total) whose cycles moved by more than `tolerance`."""
    if not recorded:
        return [
            f"{model}: no arm64 estimate in {RECORD}; run `python -m tools.bench.arm64_cost --record --only {model}`"
        ]
    lines = []
    for kernel in sorted(set(recorded.get("kernels", {})) | set(fresh["kernels"])):
        old = recorded.get("kernels", {}).get(kernel, {}).get("cycles", {})
        new = fresh["kernels"].get(kernel, {}).get("cycles", {})
        for cpu in sorted(set(old) | set(new)):
            a, b = old.get(cpu, 0), new.get(cpu, 0)
            if abs(b - a) > tolerance * max(a, 1):
                change = f"{(b - a) / a:+.1%}" if a else "new"
                its = recorded.get("kernels", {}).get(kernel, {}).get("iterations", 0)
                lines.append(
                    f"{model}: {kernel} on {cpu}: {a:,} -> {b:,} cycles ({change}; iterations {its:,} -> "
                    f"{fresh['kernels'].get(kernel, {}).get('iterations', 0):,}); tolerance {tolerance:.1%}: "
                    f"if intended, run `python -m tools.bench.arm64_cost --record --only {model}`"
                )
    return lines


def load_record(root: Path = REPO_ROOT) -> dict:
    try:
        return json.loads((root / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise CostError(f"{RECORD}: cannot read ({e}); restore it from git") from None


def table(record: dict, cpus=DEFAULT_CPUS) -> str:
    rows = [(m, r["arm64"]) for m, r in sorted(record["models"].items()) if r.get("arm64")]
    head = "| model | input | " + " | ".join(f"{c} Mcycles" for c in cpus) + " | coverage | not costed |"
    lines = [head, "|---|---|" + "---:|" * len(cpus) + "---:|---|"]
    for model, a in rows:
        cycles = " | ".join(f"{a['cycles'].get(c, 0) / 1e6:,.1f}" for c in cpus)
        # Loops and layers (names with spaces) by name; other ops (aten names) counted.
        uncosted = ", ".join(f"{k} ({v})" for k, v in a["uncosted"].items() if " " in k)
        others = sum(v for k, v in a["uncosted"].items() if " " not in k)
        uncosted += f"{'; ' if uncosted else ''}{others} other ops" if others else ""
        lines.append(f"| {model} | {a['input']} | {cycles} | {a['coverage']:.1%} | {uncosted or '-'} |")
    return "\n".join(lines)


def update_doc(doc: Path, record: dict) -> None:
    replace_between(doc, BEGIN, END, table(record), CostError)


@one_line_errors(McaError, CostError)
def main(argv: list[str] | None = None) -> int:
    from tools.bench import arm64_graph  # it imports this module: not at the top

    parser = argparse.ArgumentParser(prog="python -m tools.bench.arm64_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--only", help=f"zoo models, comma-separated (default: {','.join(DEFAULT_MODELS)})")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--record", action="store_true", help=f"write the estimates into {RECORD} and {DOC}")
    mode.add_argument("--check", action="store_true", help=f"compare with {RECORD}; exit 1 naming what moved")
    parser.add_argument(
        "--tolerance", type=float, default=DEFAULT_TOLERANCE, help="relative change --check allows (default 0.005)"
    )
    args = parser.parse_args(argv)
    models = [m for m in (args.only or ",".join(DEFAULT_MODELS)).split(",") if m]
    # llvm-mca first: a missing llvm-16 is a one-line reason before minutes of exports.
    cycles_per_iteration(COSTED, DEFAULT_CPUS)
    record = load_record()
    unknown = [m for m in models if m not in record["models"]]
    if unknown:
        raise CostError(f"--only: {unknown[0]!r} is no zoo model in {RECORD}; the zoo: {', '.join(record['models'])}")
    failures = []
    for model in models:
        fresh = estimate(*arm64_graph.model_count(model))
        cycles = ", ".join(f"{c} {v / 1e6:,.1f} M" for c, v in fresh["cycles"].items())
        print(f"{model} ({fresh['input']}): {cycles} cycles; coverage {fresh['coverage']:.1%}")
        if args.check:
            failures += compare(model, record["models"][model].get("arm64"), fresh, args.tolerance)
        record["models"][model]["arm64"] = fresh
    if args.record:
        (REPO_ROOT / RECORD).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        update_doc(REPO_ROOT / DOC, record)
        print(f"recorded in {RECORD} and {DOC}")
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
