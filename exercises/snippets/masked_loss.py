"""Averaging a loss over the positions that count (seed 001, "Turn scores
into a penalty": with padding or masked targets the averaging rule must
account for which positions really contribute).

Padded positions carry whatever the model produced there, possibly NaN.
Multiplying by a 0/1 mask does not remove a NaN (0 * NaN is NaN), so the
positions are *selected*, then averaged over the number of real tokens:
every token weighs the same, however long its sequence.
"""

import torch


def masked_mean(losses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-weighted mean of ``losses`` where ``mask`` is True.

    Args:
        losses: (B, T) per-position losses; masked-out entries may hold anything.
        mask: (B, T) bool, True for a real target.

    Returns:
        A 0-dim tensor: sum of the kept losses / number of kept positions.

    Raises:
        ValueError: if the shapes differ, or if no position is kept (a mean
            over zero tokens is undefined; the batch holds no targets).
    """
    if losses.shape != mask.shape:
        raise ValueError(f"losses {tuple(losses.shape)} and mask {tuple(mask.shape)} must have the same shape.")
    count = mask.sum()
    if count == 0:
        raise ValueError("every position is masked: there is no target to average over; "
                         "drop this batch or check the padding mask.")
    kept = torch.where(mask, losses, torch.zeros_like(losses))  # select: a masked NaN becomes 0
    return kept.sum() / count
