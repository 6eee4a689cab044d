"""Counts turned into next-token probabilities (seed 000 §1, "Shape is part of
the algorithm").

Dividing a (B, T, V) tensor of counts by its sum over V must divide each
row by *its own* total. ``keepdim=True`` keeps the reduced axis as size 1,
(B, T, 1), so broadcasting lines the totals up with their rows. Without it
the totals are (B, T), and broadcasting aligns them with the *last* axes.
"""

import torch


def counts_to_probs(counts: torch.Tensor) -> torch.Tensor:
    """(B, T, V) nonnegative counts -> (B, T, V) rows that sum to 1."""
    totals = counts.sum(dim=-1, keepdim=True)  # (B, T, 1): one total per row
    return counts / totals
