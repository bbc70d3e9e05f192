"""The Vulkan backend's blob format and shaders, the ahead-of-time side
(docs/delegates.md, "The Vulkan backend"): the constants
runtime/kernels/delegate/vulkan_backend.cc reads the blob with (layout,
limits, tensor kinds), the shaders' interface codes, glslc's SPIR-V of
pare/vulkan_shaders/, and pack_blob, which lays a lowered partition out
(pare/vulkan.py lowers it)."""

from __future__ import annotations

import functools
import math
import shutil
import struct
import subprocess
from pathlib import Path

from pare.delegates import DelegateError

SHADER_DIR = Path(__file__).resolve().parent / "vulkan_shaders"
MAGIC = b"PVKB"
VERSION = 2
HEADER_BYTES = 64
MAX_RANK = 6
MAX_BINDINGS = 8
MAX_PUSH_WORDS = 32
MAX_SHADERS, MAX_TENSORS, MAX_DISPATCHES = 64, 4096, 4096
MAX_SYMBOLS, MAX_TERMS = 8, 65536
TENSOR_WORDS, DISPATCH_WORDS = 4 + MAX_RANK, 4 + MAX_BINDINGS + MAX_PUSH_WORDS
MAX_GROUPS = 65535  # Vulkan's guaranteed maxComputeWorkGroupCount
MAX_NUMEL = (1 << 27) // 4  # Vulkan's guaranteed maxStorageBufferRange, in floats
LOCAL_SIZE = 64
KIND_INPUT, KIND_OUTPUT, KIND_WEIGHT, KIND_INTERMEDIATE = 0, 1, 2, 3
# The shaders' activation codes (common.glsl).
ACT_NONE, ACT_RELU, ACT_CLAMP, ACT_HARDSWISH, ACT_SIGMOID, ACT_SILU, ACT_GELU, ACT_GELU_TANH = range(8)
# elementwise.comp's operations.
OP_COPY, OP_ADD, OP_SUB, OP_MUL, OP_DIV = range(5)
# rows.comp's operations.
ROWS_MEAN, ROWS_SOFTMAX, ROWS_LAYER_NORM, ROWS_LOG_SOFTMAX = range(4)
# pool2d.comp's operations.
POOL_MAX, POOL_AVG, POOL_ADAPTIVE_AVG = range(3)
# Each shader's bindings (binding 0 is written).
SHADERS = {"matmul": 4, "elementwise": 3, "rows": 4, "conv2d": 4, "pool2d": 2}


def glslc() -> str:
    path = shutil.which("glslc")
    if path is None:
        raise DelegateError(
            "backend vulkan: glslc (the GLSL to SPIR-V compiler) is not installed: apt-get install glslc "
            "(tools/setup.sh installs it), or export without --delegate vulkan"
        )
    return path


@functools.lru_cache(maxsize=None)
def spirv(shader: str) -> bytes:
    """The SPIR-V of pare/vulkan_shaders/<shader>.comp."""
    source = SHADER_DIR / f"{shader}.comp"
    run = subprocess.run(
        [glslc(), "--target-env=vulkan1.0", "-O", f"-I{SHADER_DIR}", "-o", "-", str(source)],
        capture_output=True,
    )
    if run.returncode != 0:
        raise DelegateError(f"backend vulkan: glslc failed on {source.name}: {run.stderr.decode().strip()}")
    return run.stdout


def fnv1a(data: bytes) -> int:
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def _word(x) -> int:
    if isinstance(x, float):
        return struct.unpack("<I", struct.pack("<f", x))[0]
    return int(x) & 0xFFFFFFFF


def pack_blob(shaders, symbols, tensors, dispatches, terms, num_inputs, num_outputs, weights: bytes) -> bytes:
    """`shaders`: names; `symbols`: (input, dim, min, max); `tensors`: (kind,
    index, sizes); `dispatches`: (shader index, threads, bindings, push
    words); `terms`: (word, symbol, coefficient), the word counted in u32s
    from the start of the tensor table. Sizes and words are their values
    with every symbol at 0."""
    code = bytearray()
    shader_table = bytearray()
    for name in shaders:
        words = spirv(name)
        shader_table += struct.pack("<4I", len(code), len(words), SHADERS[name], MAX_PUSH_WORDS)
        code += words
    symbol_table = b"".join(struct.pack("<4I", *symbol) for symbol in symbols)
    tensor_table = bytearray()
    for kind, index, sizes in tensors:
        numel = math.prod(sizes)
        tensor_table += struct.pack("<4I", kind, index, numel & 0xFFFFFFFF, len(sizes))
        tensor_table += struct.pack(f"<{MAX_RANK}I", *(_word(s) for s in sizes), *[0] * (MAX_RANK - len(sizes)))
    dispatch_table = bytearray()
    for shader, threads, bindings, push in dispatches:
        dispatch_table += struct.pack("<4I", shader, _word(threads), 0, 0)
        dispatch_table += struct.pack(f"<{MAX_BINDINGS}I", *bindings, *[0] * (MAX_BINDINGS - len(bindings)))
        words = [_word(p) for p in push]
        dispatch_table += struct.pack(f"<{MAX_PUSH_WORDS}I", *words, *[0] * (MAX_PUSH_WORDS - len(words)))
    term_table = b"".join(struct.pack("<2Ii", *term) for term in terms)
    weights_at = (
        HEADER_BYTES + len(shader_table) + len(symbol_table) + len(tensor_table) + len(dispatch_table) + len(term_table)
    )
    pad = (-len(weights)) % 4
    code_at = weights_at + len(weights) + pad
    size = code_at + len(code)
    body = (
        struct.pack(
            "<9I3I",
            len(shaders),
            len(tensors),
            len(dispatches),
            num_inputs,
            num_outputs,
            weights_at,
            len(weights),
            code_at,
            len(code),
            len(symbols),
            len(terms),
            0,
        )
        + shader_table
        + symbol_table
        + tensor_table
        + dispatch_table
        + term_table
        + weights
        + b"\0" * pad
        + code
    )
    return MAGIC + struct.pack("<3I", VERSION, size, fnv1a(body)) + body
