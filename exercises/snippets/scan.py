"""Prefix products by a parallel scan (seed 000 §5, "Prefix products: direct
gradients versus total gradients").

The serial recurrence P[i] = P[i-1] @ M[i] takes n - 1 dependent products.
Matrix multiplication is associative, so a Hillis–Steele scan reaches every
prefix in ceil(log2 n) stages: at stage d each P[i] with i >= 2^d becomes
P[i - 2^d] @ P[i], all of them independent of one another. It does more
multiplications in total; what it saves is the chain of dependencies. The
order of the operands must be kept: the earlier prefix stays on the left.
"""

import torch


def serial_prefix(mats: torch.Tensor) -> torch.Tensor:
    """(n, k, k) -> (n, k, k): P[i] = M[0] @ M[1] @ ... @ M[i], one product at a time."""
    out = [mats[0]]
    for m in mats[1:]:
        out.append(out[-1] @ m)
    return torch.stack(out)


def scan_prefix(mats: torch.Tensor) -> tuple[torch.Tensor, int, int]:
    """Hillis–Steele prefix products of (n, k, k) matrices.

    Returns:
        (prefixes (n, k, k), stages, matrix products computed in all).
    """
    P = mats
    n, step, stages, products = mats.size(0), 1, 0, 0
    while step < n:
        left, right = P[:-step], P[step:]  # P[i - step] and P[i] for every i >= step
        combined = left @ right  # earlier prefix on the left
        P = torch.cat([P[:step], combined])
        stages, products, step = stages + 1, products + (n - step), step * 2
    return P, stages, products
