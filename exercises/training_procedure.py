"""Checks for the set ``training``: what counts as one update, and what does
not (seed 001, "Backward and update are different operations", "Common
mistakes and misconceptions"; seed 000 §7).

An update is ``optimizer.step()`` and nothing else: not ``backward()``, not
``model.train()``, not an epoch. These checks count updates with a step
pre-hook and compare weights, so the claim is measured rather than read.
"""

import math

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, series, table


def _flat(model: torch.nn.Module) -> torch.Tensor:
    """Every parameter of ``model`` as one 1-D float64 vector (a tied matrix once)."""
    return torch.cat([p.detach().double().flatten() for p in model.parameters()])


def _batch(ctx: Context, V: int, B: int, T: int):
    """A random (B, T) batch and its next-token targets, from a generator seeded with ctx.seed."""
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, V, (B, T + 1), generator=g)
    return data[:, :-1].contiguous().to(ctx.device), data[:, 1:].contiguous().to(ctx.device)


def step_per_microbatch(ctx: Context) -> Measurement:
    """``engine.train.accumulated_step`` on 4 microbatches against one full-batch ``train_step``.

    Two copies of the small engine GPT (one layer, same seed, float64),
    AdamW lr 1e-3 without decay. The full batch (8, 32) takes one ``train_step``; the other
    copy takes one ``accumulated_step`` over the same batch cut into 4
    microbatches of 2 rows. A step pre-hook counts the optimizer's updates.
    Observed: ``[updates the accumulated route took, its weights equal the
    full batch's within 1e-6]``. Seed 001, "Backward and update are
    different operations" (stepping after each piece is a different
    procedure).
    """
    from engine.train import accumulated_step, make_optimizer, train_step

    full = ctx.gpt("small", n_layer=1).double()  # float64: the routes' rounding stays far below 1e-6
    pieces = ctx.gpt("small", n_layer=1).double()
    x, y = _batch(ctx, full.config.vocab_size, 8, 32)
    microbatches = [(x[i:i + 2], y[i:i + 2]) for i in range(0, 8, 2)]
    start = _flat(pieces)
    train_step(full, make_optimizer(full, lr=1e-3, weight_decay=0.0), x, y)
    optimizer = make_optimizer(pieces, lr=1e-3, weight_decay=0.0)
    updates: list[int] = []
    optimizer.register_step_pre_hook(lambda opt, args, kwargs: updates.append(1))
    mean = accumulated_step(pieces, optimizer, microbatches)
    gap = (_flat(pieces) - _flat(full)).abs().max().item()
    same = gap <= 1e-6
    evidence = [
        table("One full batch (8, 32) against 4 microbatches (2, 32)", ["quantity", "value"], [
            ["optimizer updates, full batch", 1], ["optimizer updates, microbatch route", len(updates)],
            ["max |Δ weights| between the routes", gap], ["same weights (1e-6)", same],
            ["max |change| of the microbatch route's weights", (_flat(pieces) - start).abs().max().item()],
            ["loss it reported", f"{mean:.5f}"]]),
    ]
    if len(updates) > 1:
        evidence.append(note(f"{len(updates)} updates instead of one: each microbatch's gradient was taken at "
                             "weights the previous update had already moved, and AdamW took a full-size "
                             "step each time. That is a different procedure, not a bigger batch."))
    return Measurement(observed=[len(updates), same], evidence=evidence)
