"""Scoring candidate answers with one shared scorer (seed 000 §1, "Shape is
part of the algorithm").

Each example offers C candidates, each a D-dimensional feature vector. A
shared ``nn.Linear(D, 1)`` scores every candidate, which leaves a trailing
axis of size 1: (B, C, 1). Only that axis should go. Naming it keeps the
batch axis alive even when a batch holds a single example.
"""

import torch
from torch import nn


def candidate_scores(scorer: nn.Linear,
                     candidates: torch.Tensor) -> torch.Tensor:
    """One score per candidate per example.

    Args:
        scorer: ``nn.Linear(D, 1)`` applied to every candidate.
        candidates: (B, C, D) candidate features.

    Returns:
        (B, C) scores, ready for ``F.cross_entropy`` with (B,) targets.
    """
    scores = scorer(candidates)  # (B, C, 1)
    return scores.squeeze(-1)  # (B, C, 1) -> (B, C): only the named axis
