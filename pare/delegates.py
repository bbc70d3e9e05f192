"""Backend delegates, the ahead-of-time side (docs/delegates.md).

A backend runs parts of a model's graph on something other than Pare's CPU
kernels (a GPU through Vulkan, an NPU). Its ahead-of-time side is a
:class:`Backend`: it says which graph nodes it can run (`supports`), and
compiles each part the partitioner (tools/tracer/delegation.py) gives it
into a blob (`preprocess`), which the program stores with the backend's
name and compile specs (docs/program_format.md, "Delegate calls"). Its
run-time side is a `pare::Backend` in the runtime (runtime/registry/
backend.h), selected by the operator `pare::delegate_init.<name>` like any
operator, so a runtime whose manifest does not name it carries none of it.

Backends are found by name (`tools.tracer export --delegate NAME`) in this
module's registry: :func:`register` adds one, :func:`get` finds one.
:class:`ExampleBackend` (`example`) is the smallest complete backend, for
the tests and as a model to copy.
"""

from __future__ import annotations

import abc
import importlib
import struct
from dataclasses import dataclass, field
from typing import Any, ClassVar


class DelegateError(ValueError):
    """A backend cannot be used as asked; str() is one line naming the fix."""


@dataclass(frozen=True)
class Subgraph:
    """One part of a method's graph that the partitioner gave a backend.

    `nodes`: its torch.fx call_function nodes, in graph (topological)
    order. `inputs`: the nodes outside it that it reads, in the order the
    runtime passes them to the backend's execute. `outputs`: its nodes that
    something outside it reads, in the order execute must return them.
    `constants`: the inputs that are constant tensors (parameters, buffers),
    with their values; a backend with `embeds_constants` gets these here and
    not as run-time inputs, and must put them in its blob."""

    nodes: tuple[Any, ...]
    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]
    constants: dict[Any, Any] = field(default_factory=dict)


class Backend(abc.ABC):
    """The AOT side of a backend. Subclasses set `name` (as the program,
    the manifest and --delegate spell it: lower case, digits and `_`) and
    `spec_keys` (the compile specs it takes), and implement `supports` and
    `preprocess`."""

    name: ClassVar[str]
    spec_keys: ClassVar[frozenset[str]] = frozenset()
    # True: constant inputs go into the blob (Subgraph.constants), not to execute.
    embeds_constants: ClassVar[bool] = False

    @abc.abstractmethod
    def supports(self, node) -> bool:
        """Whether this backend can run `node` (a torch.fx call_function
        node of a core-ATen graph): its operator, and the dtypes and shapes
        of its arguments and result (`node.meta["val"]`)."""

    @abc.abstractmethod
    def preprocess(self, subgraph: Subgraph, compile_specs: dict[str, str]) -> bytes:
        """Compiles `subgraph` into the blob the runtime side's init reads."""

    def check_specs(self, compile_specs: dict[str, str]) -> None:
        unknown = sorted(set(compile_specs) - self.spec_keys)
        if unknown:
            takes = ", ".join(sorted(self.spec_keys)) or "none"
            raise DelegateError(
                f"--delegate-spec {unknown[0]}: backend {self.name} takes no compile spec of that name "
                f"(its specs: {takes})"
            )


_REGISTRY: dict[str, Backend] = {}
# The backends that ship with Pare besides the example: each module registers
# itself when imported. They are imported the first time a backend is looked
# up, not with this module, which they import (pare.vulkan and its blob
# writer raise DelegateError).
_BUILTIN_MODULES = ("pare.vulkan",)
_builtins_imported = False


def _import_builtins() -> None:
    global _builtins_imported
    if not _builtins_imported:
        _builtins_imported = True
        for module in _BUILTIN_MODULES:
            importlib.import_module(module)


def register(backend: Backend) -> Backend:
    """Makes `backend` available to --delegate under its name."""
    if not backend.name.replace("_", "a").isalnum() or backend.name != backend.name.lower():
        raise DelegateError(f"backend name {backend.name!r}: use lower-case letters, digits and '_'")
    _REGISTRY[backend.name] = backend
    return backend


def names() -> tuple[str, ...]:
    _import_builtins()
    return tuple(sorted(_REGISTRY))


def get(name: str) -> Backend:
    _import_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise DelegateError(
            f"--delegate {name}: no backend of that name; the backends are {', '.join(names())} "
            "(pare/delegates.py; a new one is registered with pare.delegates.register)"
        ) from None


# --- the example backend -----------------------------------------------------

# The blob's layout is runtime/kernels/delegate/example_backend.cc's.
EXAMPLE_MAGIC = b"PXEB"
EXAMPLE_VERSION = 1
EXAMPLE_ADD, EXAMPLE_MUL, EXAMPLE_RELU, EXAMPLE_ADD_SCALAR, EXAMPLE_MUL_SCALAR = 1, 2, 3, 4, 5
EXAMPLE_MAX_REGISTERS = 4096


class ExampleBackend(Backend):
    """`example`: float32 add, mul and relu over same-sized contiguous
    tensors (a tensor and a number for add and mul), as a straight-line
    register program. Its runtime side reports itself unavailable when the
    environment has PARE_EXAMPLE_BACKEND=unavailable."""

    name = "example"

    def supports(self, node) -> bool:
        import torch

        aten = torch.ops.aten
        if node.target not in (aten.add.Tensor, aten.mul.Tensor, aten.relu.default):
            return False
        if node.kwargs.get("alpha", 1) != 1 or len(node.args) > 2:
            return False
        out = node.meta.get("val")
        if not isinstance(out, torch.Tensor) or out.dtype != torch.float32:
            return False
        shape = tuple(map(str, out.shape))
        tensors = 0
        for arg in node.args:
            val = arg.meta.get("val") if hasattr(arg, "meta") else arg
            if isinstance(val, torch.Tensor):
                if val.dtype != torch.float32 or tuple(map(str, val.shape)) != shape or not val.is_contiguous():
                    return False
                tensors += 1
            elif isinstance(val, bool) or not isinstance(val, (int, float)):
                return False
        return tensors >= 1 and (node.target is aten.relu.default or isinstance(node.args[0], type(node)))

    def preprocess(self, subgraph: Subgraph, compile_specs: dict[str, str]) -> bytes:
        import torch

        aten = torch.ops.aten
        regs = {n: i for i, n in enumerate(subgraph.inputs)}
        code = []
        for node in subgraph.nodes:
            dst = len(regs)
            a = regs[node.args[0]]
            if node.target is aten.relu.default:
                code.append((EXAMPLE_RELU, dst, a, 0, 0.0))
            else:
                other = node.args[1]
                if other in regs:
                    op = EXAMPLE_ADD if node.target is aten.add.Tensor else EXAMPLE_MUL
                    code.append((op, dst, a, regs[other], 0.0))
                else:
                    op = EXAMPLE_ADD_SCALAR if node.target is aten.add.Tensor else EXAMPLE_MUL_SCALAR
                    code.append((op, dst, a, 0, float(other)))
            regs[node] = dst
        if len(regs) > EXAMPLE_MAX_REGISTERS:
            raise DelegateError(
                f"backend example: a part of {len(subgraph.nodes)} operators needs {len(regs)} registers, "
                f"more than its {EXAMPLE_MAX_REGISTERS}"
            )
        return example_blob(len(subgraph.inputs), len(regs), code, [regs[o] for o in subgraph.outputs])


def example_blob(num_inputs: int, num_registers: int, code, outputs) -> bytes:
    """The example backend's blob: `code` is (opcode, dst, a, b, immediate)
    tuples, `outputs` the registers execute returns."""
    blob = bytearray(
        struct.pack("<4sHHHHI", EXAMPLE_MAGIC, EXAMPLE_VERSION, num_inputs, len(outputs), num_registers, len(code))
    )
    for op, dst, a, b, immediate in code:
        blob += struct.pack("<BBHHHf", op, 0, dst, a, b, immediate)
    blob += struct.pack(f"<{len(outputs)}H", *outputs)
    return bytes(blob)


register(ExampleBackend())
