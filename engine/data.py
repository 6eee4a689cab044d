"""Batches of shifted (input, target) windows.

Seed 004, "Data: batching and the alignment contract": every position of x
predicts the next token, so y is x shifted left by one, and
torch.equal(x[:, 1:], y[:, :-1]) must hold on every batch.
"""

from __future__ import annotations

import torch


def split(data: torch.Tensor, val_fraction: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """Split a 1-D token tensor into (train, val) by position, val at the end.

    A contiguous tail is a real holdout: windows drawn from the train half
    never contain a validation token.

    Raises:
        ValueError: if val_fraction is not strictly between 0 and 1.
    """
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be strictly between 0 and 1, got {val_fraction}.")
    n_train = int(len(data) * (1.0 - val_fraction))
    return data[:n_train], data[n_train:]


def get_batch(data: torch.Tensor, batch_size: int, block_size: int,
              generator: torch.Generator | None = None, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw batch_size random windows of block_size tokens and their targets.

    Args:
        data: 1-D int64 tensor of token ids.
        batch_size: B.
        block_size: T, the window length.
        generator: optional CPU torch.Generator for reproducible starts.
        device: where to put x and y (default: data's device).

    Returns:
        (x, y), each (B, T) int64, with y[b, t] == data[start_b + t + 1].

    The starts are the seed's draw, ``torch.randint(0, len(data) -
    block_size - 1)``: uniform over 0 .. len(data) - block_size - 2, since
    randint's upper bound is exclusive. That leaves out the last valid
    start, len(data) - block_size - 1, whose target ends on the last token;
    drawing it too (``high = len(data) - block_size``) would change every
    seeded batch, and with it what the checks built on those batches
    measure, so the engine keeps the seed's draws.

    Raises:
        ValueError: if data is too short for one window plus its target.
    """
    if len(data) < block_size + 2:
        raise ValueError(
            f"data has {len(data)} tokens; a window of block_size {block_size} "
            f"and its shifted target need at least {block_size + 2}."
        )
    starts = torch.randint(0, len(data) - block_size - 1, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts])
    y = torch.stack([data[i + 1 : i + block_size + 1] for i in starts])
    if device is not None:
        x, y = x.to(device), y.to(device)
    return x, y  # (B, T), (B, T)


def check_alignment(x: torch.Tensor, y: torch.Tensor) -> bool:
    """True when y is x shifted left by one: torch.equal(x[:, 1:], y[:, :-1]).

    Seed 004: the one line that catches a misaligned target before training.
    """
    return torch.equal(x[:, 1:], y[:, :-1])


#: The target id that ``F.cross_entropy`` (and so the engine's loss) skips:
#: its default ``ignore_index``.
IGNORE_INDEX = -100


def pad_batch(sequences: list[list[int]], pad_id: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Shifted (input, target) pairs for sequences of different lengths, padded to one T.

    Seed 000, section 7 ("Masking chooses which examples count"). Each
    sequence s gives x = s[:-1] and y = s[1:]; shorter rows are filled up to
    T = (longest length - 1). Inputs are filled with ``pad_id``, a real id
    the embedding can look up; targets are filled with ``IGNORE_INDEX``, so
    the loss averages over real next tokens only. A padded input position
    still runs through the model; causality keeps it from changing the real
    positions before it.

    Args:
        sequences: B lists of token ids, each of length >= 2.
        pad_id: the id written into padded input positions.
        device: where to put x and y.

    Returns:
        (x, y), each (B, T) int64.

    Raises:
        ValueError: if there are no sequences or one is shorter than 2 ids.
    """
    if not sequences or min(len(s) for s in sequences) < 2:
        raise ValueError("pad_batch needs at least one sequence, each of 2 or more ids (an input and its target).")
    T = max(len(s) for s in sequences) - 1
    x = torch.full((len(sequences), T), pad_id, dtype=torch.long)  # (B, T)
    y = torch.full((len(sequences), T), IGNORE_INDEX, dtype=torch.long)  # (B, T)
    for b, s in enumerate(sequences):
        ids = torch.tensor(s, dtype=torch.long)
        x[b, : len(s) - 1] = ids[:-1]
        y[b, : len(s) - 1] = ids[1:]
    if device is not None:
        x, y = x.to(device), y.to(device)
    return x, y  # (B, T), (B, T)
