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


def masked_nll(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-weighted mean of -log(probs) where ``mask`` is True.

    A padded position may hold any probability, 0 included, so the log must
    never see it: the padding is replaced by 1 (log 1 = 0) *before* the log,
    and the result is selected again. Masking only the log's output would
    keep the forward finite but not the backward: the unselected branch's
    gradient 0 meets log's derivative 1/0 = inf, and 0 * inf is NaN (seed
    000 §7, prevent invalid operations rather than masking their outputs).

    Args:
        probs: (B, T) probabilities of each position's target.
        mask: (B, T) bool, True for a real target (at least one).

    Returns:
        A 0-dim tensor in nats.
    """
    safe = torch.where(mask, probs, torch.ones_like(probs))  # the log never sees a padded value
    nll = -torch.log(safe)  # (B, T)
    return torch.where(mask, nll, torch.zeros_like(nll)).sum() / mask.sum()
