"""Nearest exemplars found chunk by chunk (seed 000 §8, "Vectorization can
reveal a simpler model").

The affine score 2 q·x - ||x||² needs an (M, N) score matrix for M queries
and N exemplars. Walking over the exemplars in chunks of ``CHUNK`` and
keeping each query's best so far gives the same winners while holding only
an (M, CHUNK) block at a time.
"""

import torch

CHUNK = 256  # exemplars scored at a time


def nearest(queries: torch.Tensor, exemplars: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(M, D) queries, (N, D) exemplars -> (best score (M,), nearest exemplar index (M,))."""
    best = torch.full((queries.shape[0],), float("-inf"), dtype=queries.dtype, device=queries.device)
    where = torch.zeros(queries.shape[0], dtype=torch.long, device=queries.device)
    for start in range(0, exemplars.shape[0], CHUNK):
        block = exemplars[start:start + CHUNK]  # (c, D)
        scores = 2 * queries @ block.T - (block * block).sum(dim=-1)  # (M, c)
        top, at = scores.max(dim=-1)  # (M,), (M,)
        better = top > best
        best = torch.where(better, top, best)
        where = torch.where(better, at + start, where)
    return best, where
