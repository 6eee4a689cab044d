"""Nearest-neighbour classification written as an affine score (seed 000, §8).

Expanding ||q - x||² = ||q||² - 2 q·x + ||x||² shows that, for a fixed query,
the L2-nearest exemplar is the one with the largest affine score
2 q·x - ||x||² (||q||² is the same for every exemplar). The score matrix is
one matrix product, (M, D) @ (D, N), with no (M, N, D) difference tensor.
"""

import torch


def affine_scores(queries: torch.Tensor, exemplars: torch.Tensor) -> torch.Tensor:
    """2 q·x - ||x||² for every pair: (M, D), (N, D) -> (M, N)."""
    return 2 * queries @ exemplars.T - (exemplars * exemplars).sum(dim=-1)  # (M, N)


def classify(queries: torch.Tensor, exemplars: torch.Tensor, labels: torch.Tensor,
             n_classes: int) -> torch.Tensor:
    """Label each query with its classifier's class: (M, D) -> (M,) class ids.

    Args:
        exemplars: (N, D) reference points; labels: (N,) their class ids in
            [0, n_classes).
    """
    scores = affine_scores(queries, exemplars)  # (M, N)
    return labels[scores.argmax(dim=-1)]  # the nearest exemplar's label
