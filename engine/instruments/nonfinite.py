"""The non-finite ledger: which module's output first held an inf or a NaN.

Seed 000, section 7: "inspect the first operation that produces a
non-finite value". One NaN spreads: attention mixes it into every later
position, the next block into every channel, and by the loss everything is
NaN, so the loss says nothing about where it began. A forward hook on every
module records, in the order the modules finish, whether each output is
finite; the first row that is not names the place to read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass(frozen=True)
class FiniteRow:
    """One module's output in one forward pass.

    Attributes:
        module: the module's name in ``named_modules()`` (``blocks.2.attn.proj``).
        shape: the output's shape.
        nonfinite: how many of its values are inf or NaN.
    """

    module: str
    shape: tuple[int, ...]
    nonfinite: int


@dataclass(frozen=True)
class FiniteLedger:
    """Every module's output, in the order the modules finished.

    Hooks fire when a module returns, so a submodule's row comes before its
    parent's (``blocks.0.attn.proj`` before ``blocks.0.attn``).

    Attributes:
        rows: one ``FiniteRow`` per module call.
        first: the first row with a non-finite value, or None.
    """

    rows: tuple[FiniteRow, ...]
    first: FiniteRow | None


def nonfinite_ledger(model: nn.Module, *inputs, **kwargs) -> FiniteLedger:
    """Run one forward under no_grad and record which outputs hold inf or NaN.

    The root module is left out (its output is the model's answer, not a
    place inside it); a module that returns a tuple is read by its first
    tensor. Hooks are removed afterwards, even on error.

    Args:
        model: any ``nn.Module``; ``inputs`` and ``kwargs`` go to its forward.

    Returns:
        A ``FiniteLedger``.
    """
    rows: list[FiniteRow] = []

    def record(name: str):
        def hook(module, args, output):
            if isinstance(output, (tuple, list)):
                output = next((o for o in output if isinstance(o, torch.Tensor)), None)
            if isinstance(output, torch.Tensor) and output.is_floating_point():
                bad = int((~torch.isfinite(output)).sum())
                rows.append(FiniteRow(name, tuple(output.shape), bad))
        return hook

    handles = [module.register_forward_hook(record(name))
               for name, module in model.named_modules() if name]
    try:
        with torch.no_grad():
            model(*inputs, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    first = next((row for row in rows if row.nonfinite), None)
    return FiniteLedger(rows=tuple(rows), first=first)
