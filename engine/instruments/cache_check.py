"""Cached logits against full-sequence logits.

Seed 000, section 6, "Test equivalence, not just plausible text": feed the
same tokens through a KV cache in chunks (one token at a time, or chunks of
3, 1, 3) and compare the concatenated logits with one full forward pass.
"""

from __future__ import annotations

import torch


def cached_vs_full(model, idx: torch.Tensor, chunks: list[int], tol: float = 1e-5) -> dict:
    """Compare chunked cached decoding of idx with one full forward.

    Runs in eval mode under no_grad with a fresh cache; the caller's mode is
    restored.

    Args:
        model: a ``GPT``.
        idx: (B, T) int64 token ids, T <= block_size.
        chunks: positive chunk lengths summing to T, e.g. [1] * T or [3, 1, 3].
        tol: largest logit difference still counted as equal.

    Returns:
        {"chunks", "per_chunk_max_delta", "max_delta", "tolerance", "equal"}:
        deltas are max |delta logits| per chunk and overall; equal is
        max_delta <= tol.

    Raises:
        ValueError: if a chunk is not positive or the chunks do not sum to T.
    """
    B, T = idx.shape
    chunks = [int(c) for c in chunks]
    if any(c < 1 for c in chunks) or sum(chunks) != T:
        raise ValueError(f"chunks must be positive and sum to T={T}, got {chunks}.")

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            full, _ = model(idx)  # (B, T, V)
            cache = model.new_cache(B)
            deltas = []
            start = 0
            for n in chunks:
                part, _ = model(idx[:, start:start + n], cache=cache)  # (B, n, V)
                deltas.append((part - full[:, start:start + n]).abs().max().item())
                start += n
    finally:
        model.train(was_training)

    max_delta = max(deltas)
    return {
        "chunks": chunks,
        "per_chunk_max_delta": deltas,
        "max_delta": max_delta,
        "tolerance": tol,
        "equal": max_delta <= tol,
    }
