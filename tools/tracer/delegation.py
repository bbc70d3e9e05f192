"""The partitioner: which parts of a method's graph run on which backend
(docs/delegates.md, "How partitioning decides").

Given backends in order of preference (`--delegate a,b`), each in turn
takes the nodes it `supports` that no earlier backend took, and groups them
into partitions: a node joins the partitions of the supported nodes it
reads (all of them if the union stays free of cycles, else the largest one
it can join, else a new one). A partition is *convex*: no path leaves it
and comes back through a node outside it (a node on the CPU, or another
backend's), so the graph with each partition contracted to one node still
has a topological order, and the program can run each partition as one
call. Nodes that only compute constants are left to the exporter, which
folds them.

Each partition is compiled by its backend's `preprocess` and replaced in
the graph by one `delegate_call` node (lowered to pare::delegate_init.<name>
and pare::delegate_call, tools/tracer/lowering.py) with a `getitem` per
output. What went where is counted in a DelegationReport.
"""

from __future__ import annotations

import heapq
import operator
from collections import Counter
from dataclasses import dataclass, field

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import Node

from pare import delegates as pare_delegates
from tools.tracer.errors import TracerError

# node.meta key of a delegate_call node: its DelegatedPart.
META_KEY = "pare_delegate"
# With --delegate-fallback, method M's CPU copy is method M + this; the
# runtime's pare_method_create runs it where a backend of M is unavailable.
FALLBACK_SUFFIX = "__cpu"


def delegate_call(*inputs):
    """The target of a partition's node in a rewritten graph; lowering
    turns it into a delegate call, and nothing ever calls it."""
    raise RuntimeError("a delegate_call node is lowered into the program, not run in Python")


@dataclass(frozen=True)
class DelegateOptions:
    """The CLI's --delegate, --delegate-spec and --delegate-fallback."""

    backends: tuple[str, ...] = ()
    specs: tuple[tuple[str, str], ...] = ()
    fallback: bool = False

    def resolve(self) -> list[tuple[pare_delegates.Backend, dict[str, str]]]:
        """The backends with the compile specs each takes (a spec goes to every
        backend whose spec_keys name it); DelegateError -> TracerError."""
        try:
            if self.fallback and not self.backends:
                raise pare_delegates.DelegateError(
                    "--delegate-fallback: give --delegate NAME too (nothing to fall back from)"
                )
            backends = [pare_delegates.get(name) for name in self.backends]
            if len(set(self.backends)) != len(self.backends):
                raise pare_delegates.DelegateError(f"--delegate {','.join(self.backends)}: a backend is named twice")
            result = []
            for backend in backends:
                specs = {k: v for k, v in self.specs if k in backend.spec_keys}
                backend.check_specs(specs)
                result.append((backend, specs))
            for key, _ in self.specs:
                if not any(key in b.spec_keys for b in backends):
                    if not backends:
                        raise pare_delegates.DelegateError(f"--delegate-spec {key}: give --delegate NAME first")
                    backends[0].check_specs({key: ""})
        except pare_delegates.DelegateError as e:
            raise TracerError(str(e)) from None
        return result


def parse_spec(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"a compile spec is KEY=VALUE, got {text!r}")
    return key.strip(), value


@dataclass(frozen=True)
class DelegatedPart:
    backend: str
    blob: bytes
    specs: tuple[tuple[str, str], ...]
    num_outputs: int
    ops: tuple[str, ...]  # the operator of each node it replaced


@dataclass
class DelegationReport:
    """What went where, over every method: per backend its partitions and
    the operators in them, and the operators left on the CPU."""

    partitions: dict[str, int] = field(default_factory=Counter)
    delegated: dict[str, Counter] = field(default_factory=dict)  # backend -> operator -> nodes
    cpu: Counter = field(default_factory=Counter)  # operator -> nodes

    def delegated_ops(self, backend: str | None = None) -> int:
        if backend is not None:
            return sum(self.delegated.get(backend, Counter()).values())
        return sum(sum(c.values()) for c in self.delegated.values())

    def describe(self) -> str:
        parts = []
        for backend, ops in self.delegated.items():
            listed = ", ".join(f"{op} {n}" for op, n in sorted(ops.items()))
            parts.append(
                f"{backend}: {sum(ops.values())} ops in {self.partitions[backend]} "
                f"partition{'s' if self.partitions[backend] != 1 else ''} ({listed})"
            )
        if not parts:
            parts.append("no operator delegated")
        parts.append(f"CPU: {sum(self.cpu.values())} ops")
        return "; ".join(parts)

    def delegated_operators(self) -> set[str]:
        return {op for ops in self.delegated.values() for op in ops}


def _op_name(node: Node) -> str:
    from tools.tracer.lowering import op_name

    return op_name(node.target) if isinstance(node.target, torch._ops.OpOverload) else str(node.target)


def _constant_nodes(ep: ExportedProgram) -> set[Node]:
    """Parameters, buffers and constants, and what only they compute."""
    kinds = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
    names = {s.arg.name for s in ep.graph_signature.input_specs if s.kind in kinds}
    constant: set[Node] = set()
    for node in ep.graph.nodes:
        if node.op == "placeholder" and node.name in names:
            constant.add(node)
        elif node.op == "call_function":
            inputs = node.all_input_nodes
            if inputs and all(i in constant for i in inputs):
                constant.add(node)
    return constant


def _is_convex(members: set[Node], order: dict[Node, int]) -> bool:
    """No path from a member back to a member through a non-member."""
    last = max(order[n] for n in members)
    stack = [u for n in members for u in n.users if u not in members]
    seen: set[Node] = set()
    while stack:
        node = stack.pop()
        if node in seen or order.get(node, last + 1) > last:
            continue
        seen.add(node)
        for user in node.users:
            if user in members:
                return False
            stack.append(user)
    return True


def _partitions(candidates: list[Node], order: dict[Node, int]) -> list[list[Node]]:
    part_of: dict[Node, int] = {}
    parts: dict[int, set[Node]] = {}
    next_id = 0
    for node in candidates:
        joined = sorted({part_of[i] for i in node.all_input_nodes if i in part_of}, key=lambda p: -len(parts[p]))
        choices = [joined] if len(joined) > 1 else []
        choices += [[p] for p in joined]
        chosen = None
        for ids in choices:
            members = set().union(*(parts[p] for p in ids)) | {node}
            if _is_convex(members, order):
                chosen = ids
                break
        if chosen is None:
            parts[next_id] = {node}
            part_of[node] = next_id
            next_id += 1
            continue
        target = chosen[0]
        for p in chosen[1:]:
            for m in parts.pop(p):
                part_of[m] = target
                parts[target].add(m)
        parts[target].add(node)
        part_of[node] = target
    return [sorted(members, key=order.__getitem__) for members in parts.values()]


def partition(
    ep: ExportedProgram,
    backends: list[tuple[pare_delegates.Backend, dict[str, str]]],
    report: DelegationReport,
    *,
    where: str = "",
) -> None:
    """Rewrites `ep`'s graph in place: each partition becomes a
    delegate_call node (see the module doc); counts into `report`."""
    graph = ep.graph_module.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    constant = _constant_nodes(ep)
    constant_values = _constant_values(ep)
    taken: set[Node] = set()
    plan: list[tuple[pare_delegates.Backend, dict[str, str], list[Node]]] = []
    for backend, specs in backends:
        candidates = []
        chosen: set[Node] = set()
        for node in graph.nodes:
            if node.op != "call_function" or node in taken or node in constant:
                continue
            if node.target is operator.getitem and node.args[0] in chosen:
                # A result of a tuple op the backend took (native_layer_norm's
                # output, max_pool2d_with_indices's values) goes with it.
                candidates.append(node)
                continue
            if not isinstance(node.target, torch._ops.OpOverload):
                continue
            try:
                ok = backend.supports(node)
            except Exception as e:  # the backend's own bug: say whose
                raise TracerError(
                    f"backend {backend.name}: supports() failed on {node.name} ({_op_name(node)}): "
                    f"{type(e).__name__}: {e}"
                ) from None
            if ok:
                candidates.append(node)
                chosen.add(node)
        for members in _partitions(candidates, order):
            taken.update(members)
            plan.append((backend, specs, members))
    for backend, specs, members in plan:
        _replace(graph, backend, specs, members, constant, constant_values, report, where)
    for node in graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            report.cpu[_op_name(node)] += 1
    _topological_sort(graph, order)
    graph.lint()
    ep.graph_module.recompile()


def _constant_values(ep: ExportedProgram) -> dict[str, torch.Tensor]:
    values = {}
    for spec in ep.graph_signature.input_specs:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            value = ep.state_dict.get(spec.target)
            if value is None:
                value = ep.constants.get(spec.target)
            values[spec.arg.name] = value
    return values


def _constant_value(node: Node, constant_values: dict[str, torch.Tensor], cache: dict[Node, object]):
    """The value of a node that only computes constants (a transposed
    weight): its operator run on its inputs' values."""
    if node not in cache:
        if node.op == "placeholder":
            cache[node] = constant_values[node.name]
        else:
            args, kwargs = torch.fx.node.map_arg(
                (node.args, node.kwargs), lambda n: _constant_value(n, constant_values, cache)
            )
            with torch.no_grad():
                cache[node] = node.target(*args, **kwargs)
    return cache[node]


def _replace(graph, backend, specs, members, constant, constant_values, report, where) -> None:
    member_set = set(members)
    inputs: list[Node] = []
    for node in members:
        for i in node.all_input_nodes:
            if i not in member_set and i not in inputs:
                inputs.append(i)
    outputs = [n for n in members if any(u not in member_set for u in n.users)]
    constants = {i: constant_values[i.name] for i in inputs if i.name in constant_values}
    if backend.embeds_constants:  # and what only constants compute, evaluated
        cache: dict[Node, object] = {}
        for i in inputs:
            if i in constant and i not in constants:
                constants[i] = _constant_value(i, constant_values, cache)
    subgraph = pare_delegates.Subgraph(tuple(members), tuple(inputs), tuple(outputs), constants)
    try:
        blob = backend.preprocess(subgraph, dict(specs))
    except pare_delegates.DelegateError as e:
        raise TracerError(f"{where}{e}") from None
    if not isinstance(blob, (bytes, bytearray)):
        raise TracerError(f"backend {backend.name}: preprocess returned {type(blob).__name__}, not bytes")
    run_inputs = [i for i in inputs if not (backend.embeds_constants and i in constants)]
    ops = tuple(_op_name(n) for n in members if n.target is not operator.getitem)
    with graph.inserting_after(members[-1]):
        call = graph.call_function(delegate_call, tuple(run_inputs))
    call.meta[META_KEY] = DelegatedPart(backend.name, bytes(blob), tuple(sorted(specs.items())), len(outputs), ops)
    call.meta["val"] = tuple(o.meta.get("val") for o in outputs)
    call.meta["stack_trace"] = members[0].meta.get("stack_trace")
    for index, out in enumerate(outputs):
        with graph.inserting_after(call):
            item = graph.call_function(operator.getitem, (call, index))
        item.meta["val"] = out.meta.get("val")
        item.meta["stack_trace"] = out.meta.get("stack_trace")
        out.replace_all_uses_with(item, delete_user_cb=lambda user: user not in member_set)
    for node in reversed(members):
        graph.erase_node(node)
    report.partitions[backend.name] += 1
    report.delegated.setdefault(backend.name, Counter()).update(ops)


def _topological_sort(graph, order: dict[Node, int]) -> None:
    """Reorders the graph's nodes topologically, keeping the old order
    wherever the data flow allows (new nodes sit where their first
    replaced node was)."""
    nodes = list(graph.nodes)
    rank: dict[Node, float] = {}

    def rank_of(node: Node) -> float:
        # A node this pass added: just after its inputs' place in the old
        # order (an input may be another added node placed after it: a
        # partition's call reading one that ends later in the graph).
        if node not in rank:
            old = order.get(node)
            rank[node] = old if old is not None else max(map(rank_of, node.all_input_nodes), default=-1) + 0.5
        return rank[node]

    for node in nodes:
        rank_of(node)
    pending = {n: len(set(n.all_input_nodes)) for n in nodes}
    ready = [(rank[n], i, n) for i, n in enumerate(nodes) if pending[n] == 0]
    heapq.heapify(ready)
    index = {n: i for i, n in enumerate(nodes)}
    result = []
    while ready:
        _, _, node = heapq.heappop(ready)
        result.append(node)
        for user in node.users:
            pending[user] -= 1
            if pending[user] == 0:
                heapq.heappush(ready, (rank[user], index[user], user))
    if len(result) != len(nodes):
        raise TracerError("internal: the partitioned graph has a cycle; rerun with --traceback and report it")
    cursor = None
    for node in result:
        if cursor is not None:
            cursor.append(node)
        cursor = node
