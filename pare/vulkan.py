"""The Vulkan compute backend, the ahead-of-time side (docs/delegates.md,
"The Vulkan backend").

`vulkan` runs float32 partitions as GLSL compute shaders (pare/
vulkan_shaders/, compiled to SPIR-V by glslc here, ahead of time) over one
storage buffer per tensor. Its blob (laid out as runtime/kernels/delegate/
vulkan_backend.cc reads it) holds the SPIR-V of the shaders the partition
uses, the partition's constants (weights) in the layout the shaders read
(torch's contiguous layout), and a list of dispatches: a shader, its work
groups, the tensors it binds (binding 0 the one it writes) and its push
constants. Every operator here is a few dispatches of five general shaders
(matmul, elementwise, rows, conv2d, pool2d); view ops alias their input.

Dynamic dims: a size may be one of torch.export's symbols (a dynamic batch)
where a tensor has at most one such dim. Every size and push-constant word
is then affine in the symbols: preprocess lowers the partition at a few
values of them, fits each word (base + coefficient x symbol) and checks the
fit at another value. The blob records each symbol (the input dim it is
read from, and its bounds) and the words that depend on it; the runtime
evaluates them when an execute brings a new shape.

Which nodes it takes is pare/vulkan_support.py; the blob's layout, the
shaders' codes and their SPIR-V are pare/vulkan_blob.py.
"""

from __future__ import annotations

import math
import operator
import struct

from pare.delegates import Backend, DelegateError, Subgraph, register
from pare.vulkan_blob import (
    ACT_CLAMP,
    ACT_GELU,
    ACT_GELU_TANH,
    ACT_HARDSWISH,
    ACT_NONE,
    ACT_RELU,
    ACT_SIGMOID,
    ACT_SILU,
    DISPATCH_WORDS,
    KIND_INPUT,
    KIND_INTERMEDIATE,
    KIND_OUTPUT,
    KIND_WEIGHT,
    MAX_BINDINGS,
    MAX_NUMEL,
    MAX_PUSH_WORDS,
    MAX_SYMBOLS,
    MAX_TENSORS,
    MAX_TERMS,
    OP_ADD,
    OP_COPY,
    OP_DIV,
    OP_MUL,
    OP_SUB,
    POOL_ADAPTIVE_AVG,
    POOL_AVG,
    POOL_MAX,
    ROWS_LAYER_NORM,
    ROWS_LOG_SOFTMAX,
    ROWS_MEAN,
    ROWS_SOFTMAX,
    SHADERS,
    TENSOR_WORDS,
    pack_blob,
)
from pare.vulkan_support import (
    aten as _aten,
)
from pare.vulkan_support import (
    checks as _checks,
)
from pare.vulkan_support import (
    dim_run as _dim_run,
)
from pare.vulkan_support import (
    symbol as _symbol,
)
from pare.vulkan_support import (
    val as _val,
)

# --- the blob ----------------------------------------------------------------


def _contiguous_strides(sizes):
    strides, step = [], 1
    for s in reversed(sizes):
        strides.append(step)
        step *= s
    return strides[::-1]


def _pad4(sizes, strides):
    pad = 4 - len(sizes)
    return [1] * pad + list(sizes), [0] * pad + list(strides)


def _broadcast_strides(shape, out_shape):
    """Strides reading a contiguous `shape` at each index of `out_shape`."""
    shape = [1] * (len(out_shape) - len(shape)) + list(shape)
    strides = _contiguous_strides(shape)
    return [0 if s == 1 and o != 1 else st for s, o, st in zip(shape, out_shape, strides)]


# --- lowering a partition ----------------------------------------------------


class _Sized:
    """A node's value with its symbolic sizes evaluated at `env` (symbol ->
    number); indexing gives a tuple value's item."""

    def __init__(self, val, env):
        self.val, self.env = val, env

    @property
    def shape(self):
        return tuple(int(s) if isinstance(s, int) else int(s.node.expr.xreplace(self.env)) for s in self.val.shape)

    def __getitem__(self, i):
        return _Sized(self.val[i], self.env)


class _Lowering:
    """A partition's shaders, tensors, dispatches and weights with every
    symbol at its value in `env`."""

    def __init__(self, subgraph: Subgraph, env: dict):
        import torch

        self.torch = torch
        self.env = env
        self.subgraph = subgraph
        self.tensors: list[tuple[int, int, list[int]]] = []
        self.dispatches: list[tuple[int, tuple, list[int], list]] = []
        self.shaders: list[str] = []
        self.weights = bytearray()
        self.value: dict = {}
        self.outputs = {node: i for i, node in enumerate(subgraph.outputs)}
        run_inputs = [n for n in subgraph.inputs if n not in subgraph.constants]
        self.num_inputs = len(run_inputs)
        for i, node in enumerate(run_inputs):
            if not isinstance(_val(node), torch.Tensor):
                raise DelegateError(f"backend vulkan: the partition reads {node.name}, not a tensor, from the CPU")
            self.value[node] = self._tensor(KIND_INPUT, i, self._v(node).shape)
        for node, tensor in subgraph.constants.items():
            if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.float32:
                raise DelegateError(f"backend vulkan: constant {node.name} is not a float32 tensor")
            data = tensor.detach().contiguous().numpy().tobytes()
            self.value[node] = self._tensor(KIND_WEIGHT, len(self.weights), tensor.shape)
            self.weights += data

    def _v(self, node):
        return _Sized(_val(node), self.env)

    def _tensor(self, kind, index, shape) -> int:
        self.tensors.append((kind, index, [int(s) for s in shape] or []))
        if len(self.tensors) > MAX_TENSORS:
            raise DelegateError(f"backend vulkan: a partition needs more than {MAX_TENSORS} tensors")
        return len(self.tensors) - 1

    def _result(self, node, shape=None) -> int:
        """The tensor `node` writes: an output of the partition, or an
        intermediate."""
        shape = self._v(node).shape if shape is None else shape
        if node in self.outputs:
            return self._tensor(KIND_OUTPUT, self.outputs[node], shape)
        return self._tensor(KIND_INTERMEDIATE, 0, shape)

    def _dispatch(self, shader, threads, bindings, push):
        if shader not in self.shaders:
            self.shaders.append(shader)
        assert len(bindings) == SHADERS[shader] and len(push) <= MAX_PUSH_WORDS
        self.dispatches.append((self.shaders.index(shader), threads, bindings, push))

    def _copy(self, out, source, sizes, a_strides, out_strides, offset=0, act=(ACT_NONE, 0.0, 0.0)):
        sizes4, a4 = _pad4(sizes, a_strides)
        _, o4 = _pad4(sizes, out_strides)
        total = math.prod(sizes)
        push = [total, *sizes4, *a4, *[0] * 4, *o4, offset, OP_COPY, 0, 0.0, 1.0, act[0], float(act[1]), float(act[2])]
        self._dispatch("elementwise", total, [out, source, source], push)

    def _fusable(self, node):
        """The activation node that can be fused into `node`'s result, and
        its (act, lo, hi)."""
        if node in self.outputs or len(node.users) != 1:
            return None, None
        (user,) = node.users
        if user not in self.members:
            return None, None
        act = _activation(user)
        return (user, act) if act is not None else (None, None)

    def lower(self) -> bytes:
        a = _aten()
        self.members = set(self.subgraph.nodes)
        fused = set()
        for node in self.subgraph.nodes:
            if node in fused:
                continue
            t = node.target
            if t is operator.getitem:  # the first result of a tuple op, which wrote it
                continue
            if t is a.sym_size.int:  # a size, read from the symbol by the runtime
                if node in self.outputs:
                    raise DelegateError(f"backend vulkan: {node.name}, a size, cannot be a partition's output")
                continue
            if t in (a.mm.default, a.bmm.default, a.addmm.default, a.convolution.default):
                user, act = self._fusable(node)
                if user is not None:
                    fused.add(user)
                    target = user
                else:
                    act, target = (ACT_NONE, 0.0, 0.0), node
                out = self._result(target, self._v(node).shape)
                if t is a.convolution.default:
                    self._conv(node, out, act)
                else:
                    self._matmul(node, out, act)
                self.value[node] = out
                self.value[target] = out
            elif _activation(node) is not None:
                act = _activation(node)
                shape = list(self._v(node).shape)
                out = self._result(node)
                st = _contiguous_strides(shape)
                self._copy(out, self.value[node.args[0]], shape, st, st, act=act)
                self.value[node] = out
            elif t in (a.add.Tensor, a.sub.Tensor, a.mul.Tensor, a.div.Tensor):
                self._binary(node)
            elif t in (a.view.default, a._unsafe_view.default, a.clone.default, a.alias.default) or t in (
                a.squeeze.dim,
                a.squeeze.dims,
                a.unsqueeze.default,
            ):
                self.value[node] = self.value[node.args[0]]
                if node in self.outputs:
                    self._alias_output(node)
            elif t in (a.permute.default, a.transpose.int, a.t.default):
                src = node.args[0]
                shape = list(self._v(src).shape)
                perm = list(range(len(shape)))
                if t is a.permute.default:
                    perm = [d % len(shape) for d in node.args[1]]
                elif len(shape) == 2 or t is a.transpose.int:
                    d0, d1 = (node.args[1] % len(shape), node.args[2] % len(shape)) if t is a.transpose.int else (0, 1)
                    perm[d0], perm[d1] = perm[d1], perm[d0]
                strides = _contiguous_strides(shape)
                out_shape = [shape[d] for d in perm]
                out = self._result(node)
                self._copy(out, self.value[src], out_shape, [strides[d] for d in perm], _contiguous_strides(out_shape))
                self.value[node] = out
            elif t is a.expand.default:
                out_shape = list(self._v(node).shape)
                out = self._result(node)
                st = _broadcast_strides(self._v(node.args[0]).shape, out_shape)
                self._copy(out, self.value[node.args[0]], out_shape, st, _contiguous_strides(out_shape))
                self.value[node] = out
            elif t is a.cat.default:
                self._cat(node)
            elif t in (
                a.avg_pool2d.default,
                a.max_pool2d_with_indices.default,
                a.max_pool2d.default,
                a._adaptive_avg_pool2d.default,
            ):
                self._pool(node)
            elif t in (a.mean.dim, a._softmax.default, a._log_softmax.default, a.native_layer_norm.default):
                self._rows(node)
            else:
                raise DelegateError(f"backend vulkan: internal: no lowering for {t}")
        return self

    def _alias_output(self, node):
        """A view node that the partition returns: copied into an output of
        its own (an alias cannot be an output)."""
        shape = list(self._v(node).shape)
        src = self.value[node]
        out = self._tensor(KIND_OUTPUT, self.outputs[node], shape)
        flat = [math.prod(shape)]
        self._copy(out, src, flat, [1], [1])
        self.value[node] = out

    def _binary(self, node):
        a = _aten()
        x, y = node.args
        op = {a.add.Tensor: OP_ADD, a.sub.Tensor: OP_SUB, a.mul.Tensor: OP_MUL, a.div.Tensor: OP_DIV}[node.target]
        out_shape = list(self._v(node).shape)
        out = self._result(node)
        ax = _broadcast_strides(self._v(x).shape, out_shape)
        sizes4, a4 = _pad4(out_shape, ax)
        if hasattr(y, "meta"):
            b4 = _pad4(out_shape, _broadcast_strides(self._v(y).shape, out_shape))[1]
            ybuf, scalar, number = self.value[y], 0, 0.0
        else:
            b4, ybuf, scalar, number = [0] * 4, self.value[x], 1, float(y)
        _, o4 = _pad4(out_shape, _contiguous_strides(out_shape))
        alpha = float(node.kwargs.get("alpha", 1))
        total = math.prod(out_shape)
        push = [total, *sizes4, *a4, *b4, *o4, 0, op, scalar, number, alpha, ACT_NONE, 0.0, 0.0]
        self._dispatch("elementwise", total, [out, self.value[x], ybuf], push)
        self.value[node] = out

    def _matmul(self, node, out, act):
        a = _aten()
        alpha, beta, bias = 1.0, 0.0, None
        if node.target is a.addmm.default:
            bias, x, w = node.args
            alpha = float(node.kwargs.get("alpha", 1))
            beta = float(node.kwargs.get("beta", 1))
        else:
            x, w = node.args
        xs, ws = list(self._v(x).shape), list(self._v(w).shape)
        if len(xs) == 2:
            batch, (m, k), n = 1, xs, ws[1]
            a_st, b_st = [0, k, 1], [0, n, 1]
        else:
            batch, m, k, n = xs[0], xs[1], xs[2], ws[2]
            a_st, b_st = [m * k, k, 1], [k * n, n, 1]
        bias_st, has_bias, bias_buf = [0, 0, 0], 0, self.value[x]
        if bias is not None:
            bs = _broadcast_strides(self._v(bias).shape, [m, n])
            bias_st, has_bias, bias_buf = [0, *bs], 1, self.value[bias]
        total = batch * m * n
        push = [total, m, n, k, *a_st, *b_st, *bias_st, has_bias, alpha, beta, act[0], float(act[1]), float(act[2])]
        self._dispatch("matmul", total, [out, self.value[x], self.value[w], bias_buf], push)

    def _conv(self, node, out, act):
        x, w, b, stride, padding, dilation, _t, _op, groups = node.args
        n, c, h, wd = self._v(x).shape
        oc, _, kh, kw = self._v(w).shape
        _, _, oh, ow = self._v(node).shape
        total = n * oc * oh * ow
        bias_buf = self.value[b] if b is not None else self.value[w]
        push = [total, c, h, wd, oc, oh, ow, kh, kw, *stride, *padding, *dilation, groups]
        push += [1 if b is not None else 0, act[0], float(act[1]), float(act[2])]
        self._dispatch("conv2d", total, [out, self.value[x], self.value[w], bias_buf], push)

    def _pool(self, node):
        a = _aten()
        x = node.args[0]
        n, c, h, w = self._v(x).shape
        out_val = self._v(node)[0] if node.target is a.max_pool2d_with_indices.default else self._v(node)
        oh, ow = out_val.shape[2:]
        kernel, stride, padding, dilation = [1, 1], [1, 1], [0, 0], [1, 1]
        include_pad, divisor = 1, 0
        if node.target is a._adaptive_avg_pool2d.default:
            op = POOL_ADAPTIVE_AVG
        else:
            args = list(node.args)
            kernel = _pair(args[1])
            stride = _pair(args[2]) if len(args) > 2 and args[2] else kernel
            padding = _pair(args[3]) if len(args) > 3 else [0, 0]
            if node.target in (a.max_pool2d_with_indices.default, a.max_pool2d.default):
                op = POOL_MAX
                dilation = _pair(args[4]) if len(args) > 4 else [1, 1]
            else:
                op = POOL_AVG
                include_pad = 1 if len(args) <= 5 or args[5] else 0
                divisor = int(args[6]) if len(args) > 6 and args[6] is not None else 0
        out = self._result(node, out_val.shape) if node.target is not a.max_pool2d_with_indices.default else None
        if out is None:
            getitem = next(iter(node.users))
            out = self._result(getitem, out_val.shape)
            self.value[getitem] = out
        total = n * c * oh * ow
        push = [total, h, w, oh, ow, *kernel, *stride, *padding, *dilation, op, include_pad, divisor]
        self._dispatch("pool2d", total, [out, self.value[x]], push)
        self.value[node] = out

    def _rows(self, node):
        a = _aten()
        x = node.args[0]
        shape = list(self._v(x).shape)
        rank = len(shape)
        weight_buf = bias_buf = self.value[x]
        has_w = has_b = 0
        eps = 0.0
        if node.target is a.mean.dim:
            first, last = _dim_run(node.args[1], rank)
            op = ROWS_MEAN
            out_shape = self._v(node).shape
            target = node
        elif node.target is a.native_layer_norm.default:
            _, normalized, weight, bias, eps = node.args
            first, last = rank - len(normalized), rank - 1
            op = ROWS_LAYER_NORM
            if weight is not None:
                weight_buf, has_w = self.value[weight], 1
            if bias is not None:
                bias_buf, has_b = self.value[bias], 1
            target = next(iter(node.users))
            out_shape = shape
        else:
            d = node.args[1] % rank
            first = last = d
            op = ROWS_SOFTMAX if node.target is a._softmax.default else ROWS_LOG_SOFTMAX
            target = node
            out_shape = shape
        reduced = math.prod(shape[first : last + 1])
        inner = math.prod(shape[last + 1 :])
        rows = math.prod(shape) // reduced
        out = self._result(target, out_shape)
        push = [rows, reduced, inner, op, float(eps), has_w, has_b]
        self._dispatch("rows", rows, [out, self.value[x], weight_buf, bias_buf], push)
        self.value[node] = out
        self.value[target] = out

    def _cat(self, node):
        tensors = node.args[0]
        out_shape = list(self._v(node).shape)
        dim = (node.args[1] if len(node.args) > 1 else 0) % len(out_shape)
        out = self._result(node)
        out_strides = _contiguous_strides(out_shape)
        offset = 0
        for t in tensors:
            shape = list(self._v(t).shape)
            if shape[dim] > 0:
                self._copy(
                    out, self.value[t], shape, _contiguous_strides(shape), out_strides, offset * out_strides[dim]
                )
            offset += shape[dim]
        self.value[node] = out


def _symbols(subgraph: Subgraph):
    """The symbols of the partition's sizes, each with the (input, dim) it
    is read from and torch.export's upper bound (None: unbounded)."""
    import torch

    run_inputs = [n for n in subgraph.inputs if n not in subgraph.constants]
    found = {}
    for i, node in enumerate(run_inputs):
        val = _val(node)
        for d, size in enumerate(val.shape if isinstance(val, torch.Tensor) else ()):
            symbol = _symbol(size)
            if symbol is not None and symbol not in found:
                upper = size.node.shape_env.var_to_range[symbol].upper
                found[symbol] = (i, d, int(upper) if upper.is_Integer else None)
    for node in subgraph.nodes:
        val = _val(node)
        for v in val if isinstance(val, tuple) else (val,):
            for size in v.shape if isinstance(v, torch.Tensor) else ():
                symbol = _symbol(size)
                if symbol is not None and symbol not in found:
                    raise DelegateError(f"backend vulkan: {node.name}'s size {symbol} is no input's size")
    if len(found) > MAX_SYMBOLS:
        raise DelegateError(f"backend vulkan: a partition with more than {MAX_SYMBOLS} dynamic sizes")
    return found


def _words(lowering: _Lowering):
    """The lowering's words that may depend on the symbols (each tensor's
    element count and sizes, each dispatch's threads and push words), by
    their place in the tables, and everything else, which must not."""
    words, fixed = {}, [lowering.shaders, lowering.num_inputs, len(lowering.outputs), bytes(lowering.weights)]
    for t, (kind, index, sizes) in enumerate(lowering.tensors):
        fixed.append((kind, index, len(sizes)))
        words[t * TENSOR_WORDS + 2] = math.prod(sizes)
        for d, size in enumerate(sizes):
            words[t * TENSOR_WORDS + 4 + d] = size
    base = len(lowering.tensors) * TENSOR_WORDS
    for k, (shader, threads, bindings, push) in enumerate(lowering.dispatches):
        fixed.append((shader, tuple(bindings), len(push)))
        words[base + k * DISPATCH_WORDS + 1] = threads
        for w, value in enumerate(push):
            if isinstance(value, float):
                fixed.append((k, w, struct.pack("<f", value)))
            else:
                words[base + k * DISPATCH_WORDS + 4 + MAX_BINDINGS + w] = value
    return words, fixed


def _lower(subgraph: Subgraph) -> bytes:
    """The blob: the partition lowered with its symbols at 2 (and each at 3
    in turn, to fit each word as base + coefficient x symbol, and all at
    other values to check the fit)."""
    symbols = _symbols(subgraph)
    names = list(symbols)
    at = lambda values: _Lowering(subgraph, dict(zip(names, values))).lower()  # noqa: E731
    low = at([2] * len(names))
    if not names:
        return pack_blob(
            low.shaders, [], low.tensors, low.dispatches, [], low.num_inputs, len(low.outputs), low.weights
        )
    words, fixed = _words(low)
    coefficients = {w: [] for w in words}
    for j in range(len(names)):
        bumped, bumped_fixed = _words(at([3 if i == j else 2 for i in range(len(names))]))
        if bumped_fixed != fixed:
            raise DelegateError(f"backend vulkan: the partition's structure depends on the size {names[j]}")
        for w, value in words.items():
            coefficients[w].append(bumped[w] - value)
    base = {w: value - 2 * sum(coefficients[w]) for w, value in words.items()}
    check = [5 + 2 * i for i in range(len(names))]
    checked, checked_fixed = _words(at(check))
    for w, value in checked.items():
        if checked_fixed != fixed or value != base[w] + sum(c * v for c, v in zip(coefficients[w], check)):
            raise DelegateError(
                f"backend vulkan: a size of the partition is not affine in {', '.join(map(str, names))}"
            )
    terms = [(w, j, c) for w, cs in coefficients.items() for j, c in enumerate(cs) if c != 0]
    if len(terms) > MAX_TERMS:
        raise DelegateError(f"backend vulkan: a partition with more than {MAX_TERMS} size-dependent words")
    # Each symbol from 1 up to torch.export's bound and the largest value at
    # which every tensor fits a storage buffer.
    table = []
    for j, name in enumerate(names):
        limit = symbols[name][2] or MAX_NUMEL
        for t in range(len(low.tensors)):
            w = t * TENSOR_WORDS + 2
            if coefficients[w][j] > 0:
                limit = min(limit, (MAX_NUMEL - base[w]) // coefficients[w][j])
        if limit < 1:
            raise DelegateError(f"backend vulkan: a tensor exceeds {MAX_NUMEL} elements at {name} = 1")
        table.append((symbols[name][0], symbols[name][1], 1, limit))
    tensors = [
        (kind, index, [base[t * TENSOR_WORDS + 4 + d] for d in range(len(sizes))])
        for t, (kind, index, sizes) in enumerate(low.tensors)
    ]
    offset = len(low.tensors) * TENSOR_WORDS
    dispatches = []
    for k, (shader, _threads, bindings, push) in enumerate(low.dispatches):
        first = offset + k * DISPATCH_WORDS
        push = [p if isinstance(p, float) else base[first + 4 + MAX_BINDINGS + w] for w, p in enumerate(push)]
        dispatches.append((shader, base[first + 1], bindings, push))
    # pack_blob writes each numel as the product of the base sizes (0 with a
    # dynamic dim): the terms carry the rest.
    for t, (_kind, _index, sizes) in enumerate(tensors):
        if math.prod(sizes) != base[t * TENSOR_WORDS + 2]:
            raise DelegateError("backend vulkan: internal: a tensor's element count is not its sizes' product")
    return pack_blob(
        low.shaders, table, tensors, dispatches, terms, low.num_inputs, len(low.outputs), bytes(low.weights)
    )


def _pair(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * 2 if len(v) == 1 else v


def _activation(node):
    """(code, lo, hi) when `node` is an activation the shaders apply."""
    a = _aten()
    t = node.target
    if t is a.relu.default:
        return ACT_RELU, 0.0, 0.0
    if t is a.sigmoid.default:
        return ACT_SIGMOID, 0.0, 0.0
    if t is a.silu.default:
        return ACT_SILU, 0.0, 0.0
    if t is a.hardswish.default:
        return ACT_HARDSWISH, 0.0, 0.0
    if t is a.gelu.default:
        return (ACT_GELU_TANH if node.kwargs.get("approximate", "none") == "tanh" else ACT_GELU), 0.0, 0.0
    if t in (a.hardtanh.default, a.clamp.default):
        lo = node.args[1] if len(node.args) > 1 else (-1.0 if t is a.hardtanh.default else None)
        hi = node.args[2] if len(node.args) > 2 else (1.0 if t is a.hardtanh.default else None)
        return ACT_CLAMP, float("-inf") if lo is None else float(lo), float("inf") if hi is None else float(hi)
    return None


class VulkanBackend(Backend):
    """`vulkan`: float32 partitions as Vulkan compute shaders (see the
    module doc); its runtime side is runtime/kernels/delegate/
    vulkan_backend.cc."""

    name = "vulkan"
    embeds_constants = True

    def supports(self, node) -> bool:
        check = _checks().get(node.target)
        return check is not None and bool(check(node))

    def preprocess(self, subgraph: Subgraph, compile_specs: dict[str, str]) -> bytes:
        return _lower(subgraph)

    def op_names(self) -> list[str]:
        return sorted(str(t) for t in _checks())


register(VulkanBackend())
