"""How a graph node's arguments and results become program values: schema
order, dropped and coded arguments (device/layout/pin_memory, dtypes,
memory formats), and the kinds of its results (tools/tracer/lowering.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.fx import Node

from pare import dtypes as pare_dtypes
from pare.program import TensorListOf
from tools.tracer.errors import TracerError
from tools.tracer.sources import source_of


def op_name(op: torch._ops.OpOverload) -> str:
    """PyTorch's full operator name, the default overload without a dot."""
    schema = op._schema
    return schema.name + (f".{schema.overload_name}" if schema.overload_name else "")


# Arguments Pare drops: the CPU and strided tensors are all it has.
DROPPED_ARGUMENTS = frozenset({"device", "layout", "pin_memory"})
# c10::MemoryFormat, as the program passes memory_format arguments.
MEMORY_FORMAT_CODES = {
    torch.contiguous_format: 0,
    torch.preserve_format: 1,
    torch.channels_last: 2,
    torch.channels_last_3d: 3,
}


@dataclass(frozen=True)
class UnsupportedValue:
    """The value of a node already reported as unsupported: the export fails
    before anything runs, so lowering goes on to report the others."""

    what: str


def value_kind(val: Any) -> str:
    if isinstance(val, (torch.SymBool, bool)):
        return "bool"
    if isinstance(val, (torch.SymInt, int)):
        return "int"
    if isinstance(val, (torch.SymFloat, float)):
        return "float"
    return "tensor"


def tensors_in(x: Any):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for item in x:
            yield from tensors_in(item)


def pare_dtype(dtype: torch.dtype, what: str):
    try:
        return pare_dtypes.get(dtype)
    except (ValueError, TypeError):
        supported = ", ".join(d.torch_name for d in pare_dtypes.ALL)
        raise TracerError(
            f"{what} has dtype {str(dtype).removeprefix('torch.')}, which Pare does not support; use one of {supported}"
        ) from None


def encode_arguments(
    node: Node, op, args: tuple, kwargs: dict, value_of: Callable[[Node], Any], model_file: Path | None
) -> list:
    """The program values of `node`'s arguments, positionally in schema order
    (keyword-only ones included, trailing defaults left out)."""
    schema_args = op._schema.arguments
    values: list = []
    last_given = -1
    for i, arg in enumerate(schema_args):
        if i < len(args) and not arg.kwarg_only:
            given, value = True, args[i]
        elif arg.name in kwargs:
            given, value = True, kwargs[arg.name]
        elif arg.has_default_value():
            given, value = False, arg.default_value
        else:
            raise TracerError(
                f"{op_name(op)} ({node.name}): required argument {arg.name!r} is missing from the exported graph"
            )
        if arg.name in DROPPED_ARGUMENTS:
            value = None
        values.append(
            encode_argument(
                value,
                node,
                arg.name,
                value_of,
                model_file,
                optional_items=str(arg.type) == "List[Optional[Tensor]]",
            )
        )
        if (given and value is not None) or not arg.has_default_value():
            last_given = i
    # Trailing defaults are left to the kernel, so programs do not depend
    # on how many optional arguments a given PyTorch version spells out.
    # An argument without a default is always written, None included:
    # `float[]? scale_factors` of upsample_*.vec is required though
    # optional, and the kernel counts on it.
    return values[: last_given + 1]


def encode_argument(
    value: Any,
    node: Node,
    name: str,
    value_of: Callable[[Node], Any],
    model_file: Path | None,
    optional_items: bool = False,
) -> Any:
    """One argument as a program value (`value_of` resolves a node to its value)."""
    if isinstance(value, Node):
        resolved = value_of(value)
        if isinstance(resolved, UnsupportedValue):
            return 0  # already reported; the export fails before anything runs
        if isinstance(resolved, (list, tuple)):
            raise TracerError(
                f"{node.name}: argument {name!r} is a whole multi-output value; Pare passes single values"
            )
        return resolved
    if isinstance(value, (list, tuple)):
        items = [encode_argument(v, node, name, value_of, model_file) for v in value]
        # A Tensor?[] (index_put's indices) may hold None: program format 1.1.
        if any(v is None for v in items) and not optional_items:
            raise TracerError(
                f"{op_name(node.target)} ({source_of(node, model_file).location or node.name})"
                f": argument {name!r} is a list with None entries, which the Pare program "
                "format cannot express"
            )
        return items
    if isinstance(value, torch.dtype):
        return pare_dtype(value, f"argument {name!r} of {node.name}")
    if isinstance(value, torch.memory_format):
        return MEMORY_FORMAT_CODES[value]
    if isinstance(value, (torch.device, torch.layout)):
        return None
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise TracerError(
        f"{op_name(node.target)} ({node.name}): argument {name!r} is a {type(value).__name__}, "
        "which the Pare program format cannot express"
    )


def returns_of(node: Node, op) -> Any:
    """What `node` returns, as MethodBuilder.op's `returns` takes it."""
    returns = op._schema.returns
    val = node.meta.get("val")
    if len(returns) == 1:
        if str(returns[0].type).startswith("List["):
            return TensorListOf(len(val))
        return value_kind(val)
    if not isinstance(val, (list, tuple)) or len(val) != len(returns):
        raise TracerError(f"{op_name(op)} ({node.name}): cannot tell its {len(returns)} outputs apart")
    return tuple(value_kind(v) for v in val)
