"""How the audit calls a model it did not write.

Seed 004, "The final checklist": every instrument relies on one contract,
(B, T) int64 ids in, (B, T, V) logits out. Models in the wild meet it in a
few ways; this module finds which, and wraps the model so the links (and the
learning ledger) can call it one way.
"""

from __future__ import annotations

import reprlib
import sys
from typing import Any

import torch
import torch.nn as nn
from engine.instruments.forward import logits_of


class Forward:
    """Calls a model by the convention that yields (B, T, V) logits.

    ``plain``: ``model(idx)``. ``targets``: ``model(idx, targets)``, for a
    forward that returns only the last position without targets.
    """

    def __init__(self, model: nn.Module, convention: str) -> None:
        self.model, self.convention = model, convention

    def __call__(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T) int64 ids (and targets) -> logits (B, T, V)."""
        if self.convention == "targets":
            return logits_of(self.model(idx, targets if targets is not None else torch.zeros_like(idx)))
        return logits_of(self.model(idx))


def probe(model: nn.Module, idx: torch.Tensor, targets: torch.Tensor) -> tuple[Forward, str]:
    """Find the calling convention; return (forward, one-line description).

    Args:
        idx, targets: (B, T) int64 ids within the model's vocabulary.

    Raises:
        whatever the model's forward raises on ``model(idx)``.
    """
    B, T = idx.shape
    with torch.no_grad():
        logits = logits_of(model(idx))
        if logits.dim() == 3 and logits.shape[:2] == (B, T):
            return Forward(model, "plain"), f"model(idx) -> logits {tuple(logits.shape)}"
        try:
            with_targets = logits_of(model(idx, targets))
        except Exception:
            with_targets = None
        if with_targets is not None and with_targets.dim() == 3 and with_targets.shape[:2] == (B, T):
            return Forward(model, "targets"), (f"model(idx) -> {tuple(logits.shape)} (last position only); "
                                               f"called as model(idx, targets) -> {tuple(with_targets.shape)}")
    return Forward(model, "plain"), f"model(idx) -> {tuple(logits.shape)}, not (B, T, V)"


def engine_like(model: nn.Module) -> bool:
    """Whether the model is built like ``engine.model.GPT`` (the shape ledger can trace it)."""
    module = sys.modules.get(type(model).__module__)
    cfg = getattr(model, "config", None)
    return (module is not None and hasattr(module, "split_heads") and hasattr(module, "merge_heads")
            and all(hasattr(model, a) for a in ("wte", "wpe", "drop", "blocks", "ln_f", "lm_head"))
            and all(hasattr(cfg, a) for a in ("n_embd", "n_head", "vocab_size")))


def plain_attributes(model: nn.Module) -> list[tuple[str, Any]]:
    """Every public instance attribute of every submodule: ("blocks.0.attn.mask", value), in module order.

    Parameters, buffers and submodules live in nn.Module's own dictionaries,
    not here; what is here is invisible to ``parameters()``, ``state_dict()``
    and ``.to()``.
    """
    found = []
    for mod_name, module in model.named_modules():
        for attr, value in vars(module).items():
            if not attr.startswith("_"):
                found.append((f"{mod_name}.{attr}" if mod_name else attr, value))
    return found


def unpack(built: Any) -> tuple[nn.Module | None, Any, str | None]:
    """Split what a factory returned into (model, optimizer or None, problem or None).

    ``problem`` describes, for a message, a value that is neither an nn.Module
    nor a (model, optimizer) pair: "42 (an int)", "a tuple of 3 items".
    """
    if isinstance(built, (tuple, list)):
        if len(built) != 2:
            return None, None, f"a {type(built).__name__} of {len(built)} items"
        model, optimizer = built
        if not isinstance(model, nn.Module):
            return None, None, f"a pair whose first item is {described(model)}"
        return model, optimizer, None
    if not isinstance(built, nn.Module):
        return None, None, described(built)
    return built, None, None


def described(value: Any) -> str:
    """A short description of a value for a message: ``42 (an int)``, ``None``."""
    if value is None:
        return "None"
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{reprlib.repr(value)} ({article} {kind})"


class LedgerView(nn.Module):
    """What the learning ledger sees: (idx, targets) -> (logits (B, T, V), loss or None).

    Wraps the audited model without copying it: parameters, train/eval mode
    and gradients are the model's own. The model's own loss is passed
    through when it reports one, so INIT can compare it with the loss by hand.
    """

    def __init__(self, forward: Forward) -> None:
        super().__init__()
        self.inner = forward.model
        self.convention = forward.convention
        self.config = getattr(forward.model, "config", None)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        if targets is None and self.convention == "plain":
            return logits_of(self.inner(idx)), None
        try:
            out = self.inner(idx, targets)
        except TypeError:  # a forward that takes no targets
            out = self.inner(idx)
        logits = logits_of(out)
        loss = out[1] if isinstance(out, (tuple, list)) and len(out) > 1 and isinstance(out[1], torch.Tensor) \
            else getattr(out, "loss", None)
        return logits, loss
