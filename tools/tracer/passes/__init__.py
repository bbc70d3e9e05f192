"""AOT graph passes: named rewrites of the core-ATen graph, run by `export`
after torch.export's decompositions and before lowering (docs/tracer.md,
"Graph passes"). They do for torch.export graphs the job PyTorch's
`optimize_for_mobile` does for TorchScript.

One module per pass (fold_conv_bn.py, ..., channels_last.py), each a
GraphPass (base.py: the one interface) with a name, a one-line description
and the hooks it acts through; manager.py lists them in the order they run
(PASSES, the canonical order) and runs a selection of them. A selection is
`default` (every pass in PASSES), `none`, or a comma list of names, minus a
blocklist (like optimize_for_mobile's optimization_blocklist); whatever
order a list names them in, they run in the canonical order. A pass
rewrites one method's ExportedProgram in place, or plans at lowering time
what only lowering can decide (prepacked weights, their layouts, fused
epilogues: base.GraphPass says why), and reports what it changed (e.g.
`{"folded": 2}`), which the manifest's debug_info records. A pass that
finds nothing to do leaves the method as it was, so the program is the
same bytes as without it.

New constants (folded weights) are added to the ExportedProgram as lifted
tensor constants; the originals are never modified, since another node may
still read them (lowering stores a constant only if something uses it).

This package imports torch on first use, not at import: the tracer CLI's
parser lists the passes, and its merge and diff commands never import torch.
"""

from tools.tracer.passes.base import GraphPass, LoweringState, PassContext, PassRun
from tools.tracer.passes.channels_last import NAME as CHANNELS_LAST
from tools.tracer.passes.fuse_activation import NAME as FUSE_ACTIVATION
from tools.tracer.passes.fuse_add import NAME as FUSE_ADD
from tools.tracer.passes.fuse_attention import NAME as FUSE_ATTENTION
from tools.tracer.passes.fuse_clamp import NAME as FUSE_CLAMP
from tools.tracer.passes.fuse_norms import NAME as FUSE_NORMS
from tools.tracer.passes.manager import (
    DEFAULT,
    NONE,
    PASSES,
    MethodPasses,
    UnknownPassError,
    add_arguments,
    combine,
    epilog,
    from_arguments,
    names,
    parse_list,
    resolve,
    run_passes,
)
from tools.tracer.passes.prepack_weights import NAME as PREPACK
from tools.tracer.passes.quantize import NAME as QUANTIZE
from tools.tracer.passes.winograd import NAME as WINOGRAD

FUSIONS = (FUSE_ADD, FUSE_CLAMP, FUSE_ACTIVATION)

__all__ = [
    "CHANNELS_LAST",
    "DEFAULT",
    "FUSE_ACTIVATION",
    "FUSE_ADD",
    "FUSE_ATTENTION",
    "FUSE_CLAMP",
    "FUSE_NORMS",
    "FUSIONS",
    "NONE",
    "PASSES",
    "PREPACK",
    "QUANTIZE",
    "WINOGRAD",
    "GraphPass",
    "LoweringState",
    "MethodPasses",
    "PassContext",
    "PassRun",
    "UnknownPassError",
    "add_arguments",
    "combine",
    "epilog",
    "from_arguments",
    "names",
    "parse_list",
    "resolve",
    "run_passes",
]
