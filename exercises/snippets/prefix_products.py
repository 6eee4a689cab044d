"""All prefix products and their backward pass, by hand (seed 000 §5,
"Prefix products: direct gradients versus total gradients").

P[i] = x[0] * x[1] * ... * x[i]. A loss that reads every P[i] sends a direct
gradient G[i] into each of them. P[i] also feeds P[i+1] = P[i] * x[i+1], so
the total gradient A[i] at P[i] is the direct part plus what flows back
from the later prefixes:

    A[n-1] = G[n-1]
    A[i]   = G[i] + A[i+1] * x[i+1]
    dL/dx[i] = A[i] * P[i-1]      (with P[-1] = 1)
"""

import torch


def prefix_products(x: torch.Tensor) -> torch.Tensor:
    """P[i] = x[0] * ... * x[i] for a 1-D x of length n; returns (n,)."""
    running = torch.ones((), dtype=x.dtype, device=x.device)
    prefixes = []
    for value in x:
        running = running * value
        prefixes.append(running)
    return torch.stack(prefixes)  # (n,)


def prefix_products_backward(x: torch.Tensor, P: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """dL/dx for P = prefix_products(x), given the direct gradients G = dL/dP.

    Args:
        x: (n,) inputs. P: (n,) their prefix products. G: (n,) direct
            upstream gradient at each P[i].

    Returns:
        (n,) gradient with respect to x.
    """
    n = x.numel()
    A = torch.empty_like(x)  # total gradient at each prefix
    A[n - 1] = G[n - 1]
    for i in range(n - 2, -1, -1):
        A[i] = G[i] + A[i + 1] * x[i + 1]  # direct part + what flows back from P[i+1]
    before = torch.cat([torch.ones_like(x[:1]), P[:-1]])  # P[i-1], with 1 before the first
    return A * before  # (n,)
