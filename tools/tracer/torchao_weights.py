"""torchao's `quantize_` weights (IntxWeightOnlyConfig,
Int8DynamicActivationIntxWeightConfig) for the weight_only pass
(docs/llm.md, "Quantized weights").

torch.export writes such a linear's weight as a tensor subclass read by
`export::access_subclass_inner_tensor` ('qdata', 'scale', 'zero_point') and
`torchao::dequantize_affine(qdata, [1, group], scale, zero_point, int8,
quant_min, quant_max)`, which run_decompositions would decompose to float
ops folded into a float weight. Before it runs, `rewrite` replaces each
such dequantize of a weight with `quantized_decomposed::dequantize_per_channel_group`
(the same values: zero points are checked to be zero), which
the weight_only pass lowers to pare::weight_only_linear. A weight the kernel
cannot run (non-zero zero points, a group it cannot step through, another
range) is a TracerError naming it, not a float weight. The activation's
per-token choose_qparams_affine / quantize_affine / dequantize_affine
(Int8DynamicActivationIntxWeightConfig) stay torchao's ops, which
run_decompositions decomposes to the core-ATen ops that compute them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch.export import ExportedProgram

from tools.tracer.errors import TracerError
from tools.tracer.passes.weight_only import RANGES, STEP

DEQUANTIZE = "torchao::dequantize_affine"
ACCESS = "export::access_subclass_inner_tensor"


def rewrite(ep: ExportedProgram, path: Path) -> int:
    """Rewrites each torchao dequantize_affine of a weight in `ep` (before
    run_decompositions) to quantized_decomposed's; returns how many."""
    nodes = [n for n in ep.graph.nodes if _schema(n) == DEQUANTIZE]
    if not nodes:
        return 0
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed)

    owners = {**ep.graph_signature.inputs_to_parameters, **ep.graph_signature.inputs_to_buffers}
    count = 0
    for node in nodes:
        q, scale, zero_point = node.args[0], node.args[2], node.args[3]
        if not _reads(q, "qdata", owners) or not _reads(scale, "scale", owners):
            continue  # an activation's dequantize (Int8DynamicActivationIntxWeightConfig): decomposed
        name = owners[q.args[0].name]
        weight = ep.state_dict[name] if name in ep.state_dict else ep.constants[name]
        zeros = getattr(weight, zero_point.args[1]) if _reads(zero_point, "zero_point", owners) else zero_point
        if zeros is not None and not isinstance(zeros, torch.Tensor):
            continue
        _check(node, name, weight.qdata, weight.scale, zeros, path)
        with ep.graph.inserting_before(node):
            dequantize = ep.graph.call_function(
                torch.ops.quantized_decomposed.dequantize_per_channel_group.default,
                (q, scale, None, node.args[5], node.args[6], torch.int8, node.args[1][1], torch.float32),
            )
        dequantize.meta.update(node.meta)
        node.replace_all_uses_with(dequantize)
        ep.graph.erase_node(node)
        if zero_point is not None and not zero_point.users:
            ep.graph.erase_node(zero_point)
        count += 1
    if count:
        ep.graph_module.recompile()
    return count


def _reads(node: Any, inner: str, owners: dict[str, str]) -> bool:
    """Whether `node` reads inner tensor `inner` of a parameter or buffer."""
    return _schema(node) == ACCESS and node.args[1] == inner and getattr(node.args[0], "name", None) in owners


def _check(node: Any, name: str, qdata: Any, scale: Any, zero_point: Any, path: Path) -> None:
    args = list(node.args) + [None] * (8 - len(node.args))
    block, dtype, qmin, qmax = args[1], args[4], args[5], args[6]
    out_dtype = node.kwargs.get("output_dtype", args[7])

    def fail(problem: str, fix: str) -> TracerError:
        return TracerError(
            f"{path}: {name} ({node.name}): torchao's dequantize_affine {problem}, which "
            f"pare::weight_only_linear does not run; {fix}"
        )

    fix = "quantize it with IntxWeightOnlyConfig(weight_dtype=torch.int8 or torch.int4, granularity=PerAxis(0) or PerGroup(32))"
    if qdata.dim() != 2 or len(block) != 2 or block[0] != 1 or qdata.shape[1] % block[1]:
        raise fail(f"of a {list(qdata.shape)} weight in blocks of {list(block)}", fix)
    if dtype != torch.int8 or qdata.dtype != torch.int8 or (qmin, qmax) not in RANGES:
        raise fail(f"from {dtype} in [{qmin}, {qmax}]", fix + " (int8 in [-128, 127] or int4 in [-8, 7])")
    bits = RANGES[(qmin, qmax)]
    if block[1] % STEP[bits]:
        raise fail(
            f"in groups of {block[1]} ({bits}-bit values)", f"use a group size that is a multiple of {STEP[bits]}"
        )
    if out_dtype not in (None, torch.float32) or scale.dtype != torch.float32:
        raise fail(f"to {out_dtype} with {scale.dtype} scales", "quantize a float32 model")
    if zero_point is not None and bool(zero_point.ne(0).any()):
        raise fail(
            "has non-zero zero points (an asymmetric mapping_type)",
            "quantize with mapping_type=MappingType.SYMMETRIC (IntxWeightOnlyConfig's default)",
        )


def _schema(node: Any) -> str | None:
    target = getattr(node, "target", None)
    schema = getattr(target, "_schema", None)
    if schema is None or getattr(target, "_overloadname", None) != "default":
        return None
    return schema.name
