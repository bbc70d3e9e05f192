"""Channel maps: how each op of a torch.export graph moves and ties channels.

Every tensor in the graph gets a *channel map*: an int64 array broadcastable
to the tensor's shape whose entries are *atoms*, ids of channels (-1: no
channel). Dims along which the map has size 1 carry no channel information
(spatial dims, the batch); a convolution's output carries fresh atoms along
dim 1, a linear's along its last dim. Ops move maps the way they move data (a
view reshapes the map, a transpose transposes it, a concat concatenates
maps), and ops that tie channels together unify atoms in a union-find: an
elementwise add of two branches (residual connections), a multiply by a
squeeze-and-excitation scale, a depthwise convolution (its output channel c
is its input channel c).

A view that splits a channel dim ((N, C, H, W) -> (N, g, C/g, H, W), as a
channel shuffle does) ties channel j of each of the g blocks into one logical
channel: the pruned model splits its new count the same way, so they go or
stay together (a shuffle of two branches' concat ties the branches). Chunks
along the channel dim and grouped convolutions record their blocks, which
must lose the same number of channels each.

An op without a rule here pins the channels it touches, with the reason.
tools/prune/graph.py turns what the tracker records into dependency groups.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
import torch
from torch.export import ExportedProgram

NO_CHANNEL = -1
MAX_MAP_ELEMENTS = 1 << 26  # a view's map is materialised: more than this many elements pins the channels instead

# Ops that keep every element where it is: the output's map is the input's.
_UNARY = {
    "abs",
    "alias",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clone",
    "contiguous",
    "detach",
    "dropout",
    "dropout_",
    "elu",
    "elu_",
    "exp",
    "gelu",
    "gelu_",
    "hardsigmoid",
    "hardsigmoid_",
    "hardswish",
    "hardswish_",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "log",
    "mish",
    "mish_",
    "neg",
    "relu",
    "relu6",
    "relu_",
    "rsqrt",
    "sigmoid",
    "sigmoid_",
    "silu",
    "silu_",
    "sqrt",
    "square",
    "tanh",
    "tanh_",
    "_to_copy",
    "to",
    "type_as",
}
# Elementwise ops over their tensor arguments, with broadcasting: their atoms unify.
_ELEMENTWISE = {"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "maximum", "minimum", "where", "pow"}
# Ops that keep the channel dim (dim 1) and pool over the others.
_POOL = {
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "max_pool1d",
    "max_pool2d",
    "upsample_nearest2d",
    "upsample_bilinear2d",
    "pad",
    "constant_pad_nd",
}
_VIEW = {"view", "reshape", "flatten", "_unsafe_view", "unflatten", "squeeze", "unsqueeze"}
_CONV = {"conv1d", "conv2d", "conv3d"}


class UnionFind:
    def __init__(self) -> None:
        self.parent: list[int] = []
        self.pinned: dict[int, str] = {}  # root -> why its channel cannot be pruned

    def new(self, count: int, pinned: str | None = None) -> np.ndarray:
        first = len(self.parent)
        self.parent.extend(range(first, first + count))
        if pinned is not None:
            for atom in range(first, first + count):
                self.pinned[atom] = pinned
        return np.arange(first, first + count, dtype=np.int64)

    def find(self, atom: int) -> int:
        root = atom
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[atom] != root:  # path compression
            self.parent[atom], atom = root, self.parent[atom]
        return root

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if ra > rb:
            ra, rb = rb, ra
        self.parent[rb] = ra
        if rb in self.pinned and ra not in self.pinned:
            self.pinned[ra] = self.pinned[rb]
        self.pinned.pop(rb, None)
        return ra

    def pin(self, atoms, reason: str) -> None:
        for atom in np.unique(np.asarray(atoms)):
            if atom >= 0:
                self.pinned.setdefault(self.find(int(atom)), reason)

    def roots(self, atoms: np.ndarray) -> np.ndarray:
        return np.array([self.find(int(a)) if a >= 0 else NO_CHANNEL for a in atoms.ravel()], dtype=np.int64).reshape(
            atoms.shape
        )


@dataclass(frozen=True)
class ParamSlice:
    """Dim `dim` of parameter or buffer `name` is indexed by channel: entry i belongs to atoms[i]."""

    name: str  # fully qualified, as in module.state_dict()
    dim: int
    atoms: np.ndarray  # 1-D, len == the parameter's size along dim
    role: str  # "out": the layer produces these channels; "in": it consumes them; "norm": per-channel statistics


@dataclass(frozen=True)
class GroupedInput:
    """A grouped convolution's weight dim 1: row block j reads input atoms[j] (a (groups, in/groups) array)."""

    name: str
    atoms: np.ndarray


@dataclass(frozen=True)
class Layer:
    module: str  # the module's qualified name ("features.3.conv.0.0")
    kind: str  # "conv", "depthwise", "grouped conv", "linear", "batch norm"
    macs: int  # multiply-accumulates per call, from the exported shapes


class ChannelTracker:
    """Walks an exported graph once (run()), recording every parameter's channel slices, the layers, and the
    block structures (partitions) that chunks and grouped convolutions impose."""

    def __init__(self, ep: ExportedProgram):
        self.ep = ep
        self.uf = UnionFind()
        self.maps: dict[str, object] = {}
        self.slices: list[ParamSlice] = []
        self.grouped_inputs: list[GroupedInput] = []
        self.depthwise: set[str] = set()
        self.layers: dict[str, Layer] = {}
        self.partitions: list[tuple[list[np.ndarray], str]] = []  # (blocks of atoms, what made them)
        self.notes: list[str] = []
        signature = ep.graph_signature
        self.params = {**signature.inputs_to_parameters, **signature.inputs_to_buffers}
        self.params.update(getattr(signature, "inputs_to_lifted_tensor_constants", {}) or {})
        self.tensor_reads: set[str] = set()  # parameters read as plain tensors (not sliced by a channel rule)

    # --- maps ------------------------------------------------------------

    def shape(self, node) -> tuple[int, ...]:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise _Unmodelled(f"{node.name} has no tensor shape")
        return tuple(int(d) for d in val.shape)

    def pinned_map(self, rank: int, reason: str) -> np.ndarray:
        return self.uf.new(1, pinned=reason).reshape((1,) * rank)

    def map_of(self, arg) -> np.ndarray | None:
        """The channel map of a graph value; None for Python scalars."""
        if not hasattr(arg, "op"):
            return None
        if arg.name in self.params:
            self.tensor_reads.add(self.params[arg.name])
        m = self.maps.get(arg.name)
        if isinstance(m, np.ndarray):
            return m
        raise _Unmodelled(f"{arg.name} is not a tensor this analysis tracks")

    def atoms_along(self, m: np.ndarray, dim: int, length: int) -> np.ndarray:
        """One atom per index along `dim`: the atoms found there across the other dims, unified."""
        out = self.unify_rows(np.moveaxis(m, dim, 0).reshape(m.shape[dim], -1))
        if out.shape[0] == 1 and length != 1:
            out = np.repeat(out, length)
        return out

    def unify_rows(self, rows: np.ndarray) -> np.ndarray:
        """Unifies the atoms within each row of a 2-D map; returns each row's atom (NO_CHANNEL for none)."""
        out = np.full(rows.shape[0], NO_CHANNEL, dtype=np.int64)
        for i, row in enumerate(rows):
            present = np.unique(row[row >= 0])
            for other in present[1:]:
                self.uf.union(int(present[0]), int(other))
            if present.size:
                out[i] = present[0]
        return out

    def compress(self, full: np.ndarray) -> np.ndarray:
        """Size 1 along every dim the map does not vary along."""
        for d in range(full.ndim):
            if full.shape[d] > 1 and (full == full.take([0], axis=d)).all():
                full = full.take([0], axis=d)
        return full

    def unify_broadcast(self, maps: list[np.ndarray], out_rank: int) -> np.ndarray:
        ranked = [_ranked(m, out_rank) for m in maps]
        shape = np.broadcast_shapes(*(m.shape for m in ranked))
        result = np.full(shape, NO_CHANNEL, dtype=np.int64)
        for m in ranked:
            b = np.broadcast_to(m, shape)
            both = (result >= 0) & (b >= 0)
            if both.any():
                pairs = np.unique(np.stack([result[both], b[both]], axis=1), axis=0)
                for a, c in pairs:
                    self.uf.union(int(a), int(c))
            result = np.where(result >= 0, result, b)
        return result

    # --- params ----------------------------------------------------------

    def param(self, arg) -> str:
        name = self.params.get(getattr(arg, "name", None))
        if name is None:
            raise _Unmodelled(f"{getattr(arg, 'name', arg)} is not a parameter of the model")
        return name

    def module_of(self, param_name: str) -> str:
        return param_name.rpartition(".")[0]

    # --- ops -------------------------------------------------------------

    def run(self) -> None:
        for node in self.ep.graph.nodes:
            if node.op == "placeholder":
                self.placeholder(node)
            elif node.op == "call_function":
                try:
                    self.call(node)
                except _Unmodelled as e:
                    self.unknown(node, str(e))
            elif node.op == "output":
                for arg in torch.utils._pytree.tree_leaves(node.args):
                    m = self.maps.get(getattr(arg, "name", None))
                    if isinstance(m, np.ndarray):
                        self.uf.pin(m, "a model output's channels (its shape is the model's interface)")

    def placeholder(self, node) -> None:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            return
        if node.name in self.params:
            # A parameter read by an op this analysis models is sliced by it; read by
            # any other op, its channels (if any) must not change: a pinned map.
            self.maps[node.name] = self.pinned_map(val.dim(), f"used by an op that reads {self.params[node.name]}")
        else:
            self.maps[node.name] = self.pinned_map(val.dim(), "a model input's channels")

    def unknown(self, node, why: str) -> None:
        op = _op_name(node)
        reason = f"{op} (not modelled by tools/prune: {why})"
        for arg in node.all_input_nodes:
            if arg.name in self.params:
                self.tensor_reads.add(self.params[arg.name])
            m = self.maps.get(arg.name)
            if isinstance(m, np.ndarray):
                self.uf.pin(m, reason)
            elif isinstance(m, list):
                for item in m:
                    if isinstance(item, np.ndarray):
                        self.uf.pin(item, reason)
        self.maps[node.name] = self.fresh_pinned(node, reason)

    def fresh_pinned(self, node, reason: str):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            return self.pinned_map(val.dim(), reason)
        if isinstance(val, (list, tuple)):
            return [self.pinned_map(v.dim(), reason) if isinstance(v, torch.Tensor) else None for v in val]
        return None

    def call(self, node) -> None:
        target = node.target
        if target is operator.getitem:
            source, index = node.args
            items = self.maps.get(source.name)
            if not isinstance(items, list):
                raise _Unmodelled("getitem of a value this analysis does not track")
            self.maps[node.name] = items[index]
            return
        op = _op_name(node)
        args = node.args
        if op in _UNARY:
            self.maps[node.name] = self.broadcast_to_rank(self.map_of(args[0]), node)
        elif op in _ELEMENTWISE:
            maps = [m for m in (self.map_of(a) for a in args if hasattr(a, "op")) if m is not None]
            self.maps[node.name] = self.unify_broadcast(maps, len(self.shape(node)))
        elif op in _POOL:
            m = self.map_of(args[0])
            out_shape = self.shape(node)
            if m.ndim > 1 and m.shape[1] > 1 and out_shape[1] != self.shape(args[0])[1]:
                raise _Unmodelled("a pad or pool that changes the channel count")
            keep = [1] * len(out_shape)
            keep[: min(2, m.ndim)] = m.shape[: min(2, m.ndim)]  # batch and channel dims survive pooling
            self.maps[node.name] = self.compress_to(m, keep)
        elif op in _VIEW:
            self.view(node)
        elif op in ("transpose", "permute", "t", "swapaxes"):
            self.permute(node, op)
        elif op in ("mean", "sum", "amax", "amin"):
            self.reduce(node)
        elif op in ("softmax", "_softmax", "log_softmax", "_log_softmax"):
            m = self.broadcast_to_rank(self.map_of(node.args[0]), node)
            dim = node.args[1] % m.ndim
            if m.shape[dim] > 1:  # normalising over channels: their count is part of the result
                self.uf.pin(m, f"{op} over channels")
            self.maps[node.name] = m
        elif op in ("cat", "concat"):
            self.cat(node)
        elif op in ("chunk", "split", "split_with_sizes", "unbind"):
            self.split(node, op)
        elif op in _CONV or op == "convolution":
            self.conv(node, op)
        elif op == "linear":
            self.linear(node)
        elif op in ("batch_norm", "_native_batch_norm_legit_no_training", "native_batch_norm"):
            self.batch_norm(node)
        else:
            raise _Unmodelled("an op tools/prune has no channel rule for")

    def broadcast_to_rank(self, m: np.ndarray, node) -> np.ndarray:
        rank = len(self.shape(node))
        if m.ndim == rank:
            return m
        if m.ndim < rank:
            return _ranked(m, rank)
        raise _Unmodelled("an op that changes rank")

    def compress_to(self, m: np.ndarray, keep_shape: list[int]) -> np.ndarray:
        """m with every dim beyond the kept sizes reduced (unifying what it merges)."""
        out = m
        for d in range(m.ndim):
            if keep_shape[d] == 1 and out.shape[d] > 1:
                # pooling over a dim that carries channels merges them: unify along it
                moved = np.moveaxis(out, d, -1)
                self.unify_rows(moved.reshape(-1, moved.shape[-1]))
                out = out.take([0], axis=d)
        return out

    def view(self, node) -> None:
        m = self.map_of(node.args[0])
        in_shape = self.shape(node.args[0])
        out_shape = self.shape(node)
        full_size = int(np.prod(in_shape))
        if m.ndim != len(in_shape):
            m = _ranked(m, len(in_shape))
        if all(s == 1 for s in m.shape):  # no channel information: stays so
            self.maps[node.name] = m.reshape((1,) * len(out_shape))
            return
        if full_size > MAX_MAP_ELEMENTS:
            raise _Unmodelled(f"a view of {full_size} elements, too large to map")
        full = np.broadcast_to(m, in_shape).reshape(out_shape)
        out = self.compress(full)
        carrying = [d for d in range(out.ndim) if out.shape[d] > 1]
        if len(carrying) > 1:
            # The channel dim was split ((N, C, ...) -> (N, g, C/g, ...), as a channel
            # shuffle does): the pruned model splits its new count the same way, so
            # channel j of every block must go or stay together. They become one
            # logical channel.
            outer = carrying[0]
            first = out.take(0, axis=outer)
            for i in range(1, out.shape[outer]):
                other = out.take(i, axis=outer)
                pairs = np.unique(np.stack([first.ravel(), other.ravel()], axis=1), axis=0)
                for a, b in pairs:
                    if a >= 0 and b >= 0:
                        self.uf.union(int(a), int(b))
        self.maps[node.name] = out

    def permute(self, node, op: str) -> None:
        m = self.map_of(node.args[0])
        rank = len(self.shape(node))
        m = _ranked(m, rank)
        if op == "permute":
            dims = [d % rank for d in node.args[1]]
        else:
            d0, d1 = (node.args[1] % rank, node.args[2] % rank) if op != "t" else (0, 1)
            dims = list(range(rank))
            dims[d0], dims[d1] = dims[d1], dims[d0]
        self.maps[node.name] = np.transpose(m, dims)

    def reduce(self, node) -> None:
        m = self.map_of(node.args[0])
        in_rank = len(self.shape(node.args[0]))
        m = _ranked(m, in_rank)
        dims = node.args[1] if len(node.args) > 1 else None
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        if dims is None:
            dims = list(range(in_rank))
        dims = [d % in_rank for d in ([dims] if isinstance(dims, int) else dims)]
        for d in dims:
            if m.shape[d] > 1:
                self.uf.pin(m, f"{_op_name(node)} reducing over channels")
                m = m.take([0], axis=d)
        if not keepdim:
            m = m.reshape(tuple(s for d, s in enumerate(m.shape) if d not in dims))
        self.maps[node.name] = m

    def cat(self, node) -> None:
        tensors = node.args[0]
        rank = len(self.shape(node))
        dim = (node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)) % rank
        maps = []
        for t in tensors:
            m = self.map_of(t)
            m = _ranked(m, rank)
            size = self.shape(t)[dim]
            shape = list(m.shape)
            shape[dim] = size
            maps.append(np.broadcast_to(m, shape))
        other = np.broadcast_shapes(*(tuple(1 if d == dim else s for d, s in enumerate(m.shape)) for m in maps))
        expanded = [np.broadcast_to(m, tuple(m.shape[d] if d == dim else other[d] for d in range(rank))) for m in maps]
        self.maps[node.name] = self.compress(np.concatenate(expanded, axis=dim))

    def split(self, node, op: str) -> None:
        m = self.map_of(node.args[0])
        in_shape = self.shape(node.args[0])
        rank = len(in_shape)
        m = _ranked(m, rank)
        outs = node.meta.get("val")
        if op == "unbind":
            dim = (node.args[1] if len(node.args) > 1 else 0) % rank
            sizes = [1] * in_shape[dim]
        else:
            dim = (node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % rank
            sizes = [int(o.shape[dim]) for o in outs]
        if m.shape[dim] == 1:
            pieces = [m] * len(sizes)
        else:
            bounds = np.cumsum([0, *sizes])
            pieces = [m.take(range(bounds[i], bounds[i + 1]), axis=dim) for i in range(len(sizes))]
            if op == "chunk" and len(sizes) > 1 and len(set(sizes)) == 1:
                # The pruned model chunks its new count: every chunk must shrink alike.
                self.partitions.append(([np.unique(p) for p in pieces], f"chunk into {len(sizes)}"))
            else:
                self.uf.pin(m, f"{op} along channels with fixed sizes")
        if op == "unbind":
            pieces = [p.reshape(tuple(s for d, s in enumerate(p.shape) if d != dim)) for p in pieces]
        self.maps[node.name] = pieces

    def conv(self, node, op: str) -> None:
        x, weight = node.args[0], node.args[1]
        bias = node.args[2] if len(node.args) > 2 else None
        if op == "convolution":
            if node.args[6]:
                raise _Unmodelled("transposed convolution")
            groups = node.args[8]
        else:
            groups = node.args[6] if len(node.args) > 6 else 1
        weight_name = self.param(weight)
        bias_name = self.param(bias) if bias is not None else None
        out_shape = self.shape(node)
        w_shape = self.shape(weight)
        in_channels = self.shape(x)[1]
        out_channels = w_shape[0]
        module = self.module_of(weight_name)
        in_atoms = self.atoms_along(self.map_of(x), 1, in_channels)
        spatial = int(np.prod(out_shape[2:])) * out_shape[0]
        macs = spatial * out_channels * int(np.prod(w_shape[1:]))
        if groups == 1:
            kind = "conv"
            self.slices.append(ParamSlice(weight_name, 1, in_atoms, "in"))
            out_atoms = self.uf.new(out_channels)
        elif groups == in_channels and out_channels == in_channels:
            kind = "depthwise"
            self.depthwise.add(module)
            out_atoms = in_atoms
        elif groups == in_channels:
            kind = "depthwise"
            reason = f"{module}: depthwise convolution with channel multiplier {out_channels // in_channels}"
            self.uf.pin(in_atoms, reason)
            out_atoms = self.uf.new(out_channels, pinned=reason)
        else:
            kind = "grouped conv"
            out_atoms = self.uf.new(out_channels)
            self.grouped_inputs.append(GroupedInput(weight_name, in_atoms.reshape(groups, -1)))
            self.partitions.append((list(in_atoms.reshape(groups, -1)), f"{module}: grouped convolution's input"))
            self.partitions.append((list(out_atoms.reshape(groups, -1)), f"{module}: grouped convolution's output"))
        self.slices.append(ParamSlice(weight_name, 0, out_atoms, "out"))
        if bias_name:
            self.slices.append(ParamSlice(bias_name, 0, out_atoms, "bias"))
        self.layers[module] = Layer(module, kind, macs)
        shape = [1] * len(out_shape)
        shape[1] = out_channels
        self.maps[node.name] = out_atoms.reshape(shape)

    def linear(self, node) -> None:
        x, weight = node.args[0], node.args[1]
        bias = node.args[2] if len(node.args) > 2 else None
        weight_name = self.param(weight)
        x_shape = self.shape(x)
        out_shape = self.shape(node)
        m = self.map_of(x)
        m = _ranked(m, len(x_shape))
        in_atoms = self.atoms_along(m, len(x_shape) - 1, x_shape[-1])
        out_features = self.shape(weight)[0]
        out_atoms = self.uf.new(out_features)
        self.slices.append(ParamSlice(weight_name, 1, in_atoms, "in"))
        self.slices.append(ParamSlice(weight_name, 0, out_atoms, "out"))
        if bias is not None:
            self.slices.append(ParamSlice(self.param(bias), 0, out_atoms, "bias"))
        module = self.module_of(weight_name)
        self.layers[module] = Layer(module, "linear", int(np.prod(out_shape)) * x_shape[-1])
        # Rows of a batched linear keep the input's other dims' maps (none carry channels in practice).
        shape = [1] * len(out_shape)
        shape[-1] = out_features
        self.maps[node.name] = out_atoms.reshape(shape)

    def batch_norm(self, node) -> None:
        x = node.args[0]
        m = self.map_of(x)
        channels = self.shape(x)[1]
        atoms = self.atoms_along(_ranked(m, len(self.shape(x))), 1, channels)
        module = None
        for arg in node.args[1:5]:
            if arg is not None and hasattr(arg, "op"):
                name = self.param(arg)
                module = self.module_of(name)
                self.slices.append(ParamSlice(name, 0, atoms, "norm"))
        if module:
            self.layers[module] = Layer(module, "batch norm", 0)
        shape = [1] * len(self.shape(x))
        shape[1] = channels
        out = atoms.reshape(shape)
        if node.target is torch.ops.aten.batch_norm.default:
            self.maps[node.name] = out
        else:  # returns (out, save_mean, save_rstd)
            self.maps[node.name] = [out, None, None]


class _Unmodelled(Exception):
    pass


def _ranked(m: np.ndarray, rank: int) -> np.ndarray:
    """m with leading size-1 dims up to `rank` (numpy broadcasting's alignment)."""
    return m.reshape((1,) * (rank - m.ndim) + m.shape)


def _op_name(node) -> str:
    target = node.target
    if hasattr(target, "_schema"):
        return target._schema.name.split("::")[-1]
    return getattr(target, "__name__", str(target))
