"""Gradients of matrix products, written by hand (seed 000 §5, "Backward is
another computation worth understanding").

For Y = A @ B and an upstream gradient G = dL/dY, start from
dY = dA B + A dB and the inner product dL = <G, dY>:

    dL/dA = G @ B.T        dL/dB = A.T @ G

The same regrouping for Y = A @ B @ C gives the middle factor's gradient
A.T @ G @ C.T. Matching shapes is necessary, not sufficient: with square
matrices every misplaced transpose still has the right shape.
"""

import torch


def matmul_grads(A: torch.Tensor, B: torch.Tensor, G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of L through Y = A @ B.

    Args:
        A: (M, N). B: (N, P). G: (M, P), dL/dY.

    Returns:
        (dA, dB), shapes (M, N) and (N, P).
    """
    dA = G @ B.T  # (M, P) @ (P, N) -> (M, N)
    dB = A.T @ G  # (N, M) @ (M, P) -> (N, P)
    return dA, dB


def middle_grad(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """Gradient of L with respect to B through Y = A @ B @ C.

    Args:
        A: (M, N). B: (N, P). C: (P, Q). G: (M, Q), dL/dY.

    Returns:
        dB, shape (N, P).
    """
    return A.T @ G @ C.T  # (N, M) @ (M, Q) @ (Q, P) -> (N, P)
