"""Recovery after pruning: batch-norm statistics and distillation.

Removing channels changes what every later batch norm sees, so its running
statistics are recomputed on the representative inputs (and --data's): each
batch norm's stats are reset and accumulated as a plain average over every
input (momentum None), in train mode for the batch norms only. Fine-tuning,
when asked, distils the unpruned model into the pruned one: the pruned
model's outputs are fitted to the original's (mean squared error on the
outputs; for (batch, classes) logits, KL divergence of the softmaxes) with
Adam, cycling over the inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from tools.prune.errors import PruneError

FINETUNE_LR = 1e-4


def _batch_norms(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats]


def recalibrate_batch_norm(model: nn.Module, inputs: Sequence[tuple[torch.Tensor, ...]]) -> int:
    """Recomputes every batch norm's running statistics over `inputs`; returns how many batch norms."""
    norms = _batch_norms(model)
    if not norms or not inputs:
        return 0
    saved = [(m, m.momentum) for m in norms]
    model.eval()
    try:
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # cumulative average over every input
            m.train()
        with torch.no_grad():
            for example in inputs:
                try:
                    model(*example)
                except ValueError as e:  # batch norm in train mode over a single value per channel
                    raise PruneError(
                        f"batch-norm recalibration failed ({e}); give representative inputs with a batch "
                        "size above 1 or spatial size above 1x1, or pass --no-recalibrate"
                    ) from None
    finally:
        for m, momentum in saved:
            m.momentum = momentum
        model.eval()
    return len(norms)


def first_output(output):
    """A model's first output (the logits of a classifier returning several)."""
    return output[0] if isinstance(output, (tuple, list)) else output


def distill(
    student: nn.Module,
    teacher: nn.Module,
    inputs: Sequence[tuple[torch.Tensor, ...]],
    steps: int,
    info: Callable[[str], None],
) -> list[float]:
    """`steps` steps of Adam fitting the student's outputs to the teacher's; the losses (first, last)."""
    if steps <= 0 or not inputs:
        return []
    teacher.eval()
    with torch.no_grad():
        targets = [first_output(teacher(*x)).detach() for x in inputs]
    optimizer = torch.optim.Adam([p for p in student.parameters() if p.requires_grad], lr=FINETUNE_LR)
    student.eval()  # batch norms keep their (recalibrated) statistics; dropout off
    losses = []
    for step in range(steps):
        k = step % len(inputs)
        output = first_output(student(*inputs[k])).float()
        target = targets[k].float()
        if output.dim() == 2 and output.shape[1] > 1:
            loss = nn.functional.kl_div(
                output.log_softmax(-1), target.log_softmax(-1), log_target=True, reduction="batchmean"
            )
        else:
            loss = nn.functional.mse_loss(output, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        if (step + 1) % max(1, steps // 5) == 0 or step + 1 == steps:
            info(f"fine-tuning: step {step + 1}/{steps}, distillation loss {losses[-1]:.4g}")
    student.zero_grad(set_to_none=True)
    return [losses[0], losses[-1]]
