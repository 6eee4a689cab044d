"""Small measurements several links share: logit differences that respect a
banned (−inf) vocabulary, cross entropy by hand, modes and seeds held fixed."""

from __future__ import annotations

import contextlib
import math
from typing import Iterator

import torch
import torch.nn as nn


def kinds(t: torch.Tensor) -> torch.Tensor:
    """Each entry's kind as an int8 tensor of t's shape: 0 finite, 1 −inf, 2 +inf, 3 NaN."""
    k = torch.zeros(t.shape, dtype=torch.int8, device=t.device)
    k[t == float("-inf")] = 1
    k[t == float("inf")] = 2
    k[torch.isnan(t)] = 3
    return k


def invalid_logits(logits: torch.Tensor) -> tuple[int, int]:
    """(how many logits are NaN, how many +inf): what no correct GPT emits. −inf is how a model bans a token."""
    return int(torch.isnan(logits).sum()), int((logits == float("inf")).sum())


def finite_delta(a: torch.Tensor, b: torch.Tensor) -> tuple[float, int]:
    """(max |a − b| over entries finite in both, number of entries whose kind differs).

    Seed 000 §6 and seed 004's intervention compare logits; a model that bans
    tokens with −inf by design has −inf in both, and −inf − (−inf) is NaN.
    So finite entries are compared by value and the rest by kind (−inf, +inf,
    NaN): a banned token must stay banned. 0.0 when no entry is finite in both.
    """
    a, b = a.detach().double(), b.detach().double()
    both = torch.isfinite(a) & torch.isfinite(b)
    delta = float((a - b).abs()[both].max()) if bool(both.any()) else 0.0
    return delta, int((kinds(a) != kinds(b)).sum())


def finite_scale(t: torch.Tensor) -> float:
    """max(1, largest |finite entry|): what a relative tolerance is relative to."""
    finite = t.detach()[torch.isfinite(t.detach())]
    return max(1.0, float(finite.abs().max())) if finite.numel() else 1.0


#: Unit roundoff of each floating dtype: half the gap between 1 and the next number.
ROUNDOFF = {torch.float64: 2.0 ** -53, torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}
#: A comparison of two computations that should agree up to rounding allows ROUNDING_UNITS unit roundoffs of
#: the model's dtype (relative), or the link's own float32 tolerance when that is larger. Measured on the
#: zoo's modern-style GPT: a correct attention module is 0.6 units from the float32 reference in bfloat16
#: (2.4e-3) and 0.7 in float16 (3.6e-4), so 8 units keeps a margin of ten; the scale bugs sit at 0.10-0.87,
#: three times past 8 units of bfloat16 (3.1e-2) and 25 times past float16's (3.9e-3).
ROUNDING_UNITS = 8.0


def dtype_of(model: nn.Module) -> torch.dtype:
    """The model's compute dtype: the floating dtype holding most of its parameter values (float32 if none)."""
    counts: dict[torch.dtype, int] = {}
    for p in model.parameters():
        if p.is_floating_point():
            counts[p.dtype] = counts.get(p.dtype, 0) + p.numel()
    return max(counts, key=counts.get) if counts else torch.float32


def rounding_tol(base: float, dtype: torch.dtype) -> float:
    """A relative tolerance for a comparison bounded by rounding: ``base`` (the link's float32 figure) or
    ``ROUNDING_UNITS`` unit roundoffs of ``dtype``, whichever is larger."""
    return max(base, ROUNDING_UNITS * ROUNDOFF.get(dtype, ROUNDOFF[torch.float32]))


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def cross_entropy_by_hand(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Per-row cross entropy, logsumexp(z) − z[t], in float64: z (N, V) logits, t (N,) ids -> (N,) nats.

    Seed 004, "Training: prove it is happening" (OBJECTIVE). −inf logits are
    allowed (exp(−inf) = 0); a target on a −inf logit costs +inf.
    """
    z = z.detach().double()
    return torch.logsumexp(z, dim=-1) - z.gather(-1, t.unsqueeze(-1)).squeeze(-1)


def some(names: list[str], shown: int = 3) -> str:
    """The first few names and how many more: "a, b, c and 19 more"."""
    head = ", ".join(names[:shown])
    rest = len(names) - shown
    return f"{head} and {rest} more" if rest > 0 else head


def close(a: float, b: float, rel: float = 1e-4, abs_: float = 1e-5) -> bool:
    """Whether two finite numbers agree within ``rel`` relative or ``abs_`` absolute."""
    return math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


@contextlib.contextmanager
def mode(model: nn.Module, training: bool) -> Iterator[None]:
    """Put the model in train or eval mode for the block; restore every module's own mode after."""
    before = [(m, m.training) for m in model.modules()]
    model.train(training)
    try:
        yield
    finally:
        for m, was in before:
            m.training = was


@contextlib.contextmanager
def seeded(seed: int = 0) -> Iterator[None]:
    """Run the block with torch's RNG seeded, and give the caller's RNG state back after."""
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() and torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def names_of(model: nn.Module) -> dict[int, str]:
    """id(parameter) -> its first name in ``named_parameters()``."""
    names: dict[int, str] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), name)
    return names


def trainable(model: nn.Module) -> list[torch.nn.Parameter]:
    """The parameters that want gradients, each once (a tied matrix counts once)."""
    return [p for p in model.parameters() if p.requires_grad]


def clear_grads(model: nn.Module, optimizer=None) -> None:
    """Drop every gradient the model's parameters (and the optimizer's) hold."""
    if optimizer is not None:
        optimizer.zero_grad(set_to_none=True)
    for p in model.parameters():
        p.grad = None
