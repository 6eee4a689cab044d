"""Cross entropy written out: the one-hot term, label smoothing, padding, and its dtype.

Seed 004, "The pipeline" (cross entropy against the shifted targets) and
seed 000, section 7 ("Masking chooses which examples count"). The engine's
model calls ``F.cross_entropy``; this module computes the same loss step by
step, as ``attention`` in ``engine.model`` spells out what SDPA fuses, so
that each ingredient can be seen and checked against the fused call.
"""

from __future__ import annotations

import torch

from .data import IGNORE_INDEX


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, label_smoothing: float = 0.0,
                  ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """Mean cross entropy over the real targets, with optional label smoothing.

    Label smoothing trains against a mixture: 1 - eps of the one-hot target
    and eps of the uniform distribution over the V ids. Each real position's
    loss is therefore (1 - eps) * (-log p[target]) + eps * mean over ids of
    (-log p[id]). A position whose target is ``ignore_index`` (padding)
    counts in neither term: both sums run over the real positions only and
    both divide by their number. The log-softmax is taken in float32
    whatever the logits' dtype: a loss near 3.6 in bfloat16 could only move
    in steps of 1/64. Equal to ``F.cross_entropy(logits.float(), targets,
    label_smoothing=eps, ignore_index=ignore_index)`` within float rounding.

    Args:
        logits: (N, V) scores, any floating dtype (N = B * T flattened).
        targets: (N,) int64 ids in [0, V), or ``ignore_index``.
        label_smoothing: eps in [0, 1].
        ignore_index: the target value that marks padding.

    Returns:
        A 0-dim float32 tensor, nats per real target.

    Raises:
        ValueError: if no target is real, or eps is outside [0, 1].
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}.")
    real = targets != ignore_index  # (N,)
    n_real = int(real.sum())
    if n_real == 0:
        raise ValueError("every target is ignore_index: there is no real target to average over.")
    log_probs = logits.float().log_softmax(dim=-1)  # (N, V), float32 whatever the logits' dtype
    safe = targets.masked_fill(~real, 0)  # (N,): any valid id where the target is padding
    nll = -log_probs.gather(-1, safe.unsqueeze(-1)).squeeze(-1)  # (N,): -log p[target]
    uniform = -log_probs.mean(dim=-1)  # (N,): cross entropy against the uniform distribution
    one_hot_term = nll.masked_fill(~real, 0.0).sum() / n_real
    uniform_term = uniform.masked_fill(~real, 0.0).sum() / n_real
    return (1.0 - label_smoothing) * one_hot_term + label_smoothing * uniform_term
