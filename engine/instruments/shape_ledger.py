"""The shape ledger: one row per stage of the forward pass.

Seed 004, "The model: MLP, block, assembly" (and Seed 004's Level 2 check).
Each row carries the stage, the shape observed in a real forward pass, the
invariant the stage owes, and whether it held. Shapes alone cannot see a
wrong head split (the broken split has the right shape), so the head-split
row checks the data: merge(split(q)) == q on block 0's real queries.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import torch


class LedgerRow(NamedTuple):
    """One ledger row: (stage, shape, invariant, ok)."""

    stage: str
    shape: tuple[int, ...]
    invariant: str
    ok: bool


@dataclass
class Ledger:
    """The rows of a shape ledger, in forward order."""

    rows: list[LedgerRow] = field(default_factory=list)

    @property
    def first_divergence(self) -> str | None:
        """Stage name of the first row that is not ok, or None if all hold."""
        for row in self.rows:
            if not row.ok:
                return row.stage
        return None

    def to_dict(self) -> dict:
        """JSON-able form: {"rows": [...], "first_divergence": str | None}."""
        return {
            "rows": [
                {"stage": r.stage, "shape": list(r.shape), "invariant": r.invariant, "ok": r.ok}
                for r in self.rows
            ],
            "first_divergence": self.first_divergence,
        }


def _dims(names: str, values: tuple[int, ...]) -> str:
    return f"({names})=({','.join(str(v) for v in values)})"


def shape_ledger(model, idx: torch.Tensor,
                 split_heads_fn: Callable | None = None,
                 merge_heads_fn: Callable | None = None) -> Ledger:
    """Run one forward pass of ``model`` on idx and ledger every stage.

    The pass runs in eval mode under no_grad (the caller's mode is restored);
    stage outputs are captured with forward hooks, so the rows describe the
    model's real forward, not a re-implementation.

    Args:
        model: a ``GPT``.
        idx: (B, T) int64 token ids.
        split_heads_fn, merge_heads_fn: the head split to audit. By default
            they are looked up at call time in the module the model's class
            was defined in, so an edited copy of the model is audited with its
            own functions.

    Returns:
        A Ledger with rows token_embedding (B,T,C), position_embedding (T,C),
        tok + pos (B,T,C), head split (B,H,T,D) with the round trip, block[i]
        (B,T,C) for each block, ln_f (B,T,C), lm_head (B,T,V), flatten for CE
        (B*T,V). A model with rotary positions has no position table: its
        position_embedding row is replaced by a "rotary q" row, block 0's
        split queries turned by the module's own ``rope_rotate``, which must
        keep the shape and every head vector's length.
    """
    module = sys.modules[type(model).__module__]
    split = split_heads_fn if split_heads_fn is not None else module.split_heads
    merge = merge_heads_fn if merge_heads_fn is not None else module.merge_heads

    cfg = model.config
    B, T = idx.shape
    C, H, V = cfg.n_embd, cfg.n_head, cfg.vocab_size
    D = C // H

    captured: dict[str, torch.Tensor] = {}

    def keep(name: str):
        def hook(_module, _inputs, output):
            captured[name] = output
        return hook

    rotary = getattr(model, "wpe", None) is None
    watched = [("token_embedding", model.wte), ("tok + pos", model.drop), ("qkv", model.blocks[0].attn.qkv),
               ("ln_f", model.ln_f), ("lm_head", model.lm_head)]
    if not rotary:
        watched.append(("position_embedding", model.wpe))
    watched += [(f"block[{i}]", block) for i, block in enumerate(model.blocks)]

    was_training = model.training
    model.eval()
    handles = [m.register_forward_hook(keep(name)) for name, m in watched]
    try:
        with torch.no_grad():
            logits, _ = model(idx)
            q = captured["qkv"].split(C, dim=2)[0]  # (B, T, C), block 0's real queries
            q_heads = split(q, H)  # (B, H, T, D)
            round_trip = torch.equal(merge(q_heads), q)
            if rotary:
                turned = module.rope_rotate(q_heads, torch.arange(T, device=idx.device),
                                            cfg.rope_theta)  # (B, H, T, D)
                lengths_kept = torch.allclose(turned.norm(dim=-1), q_heads.norm(dim=-1), rtol=1e-5, atol=1e-6)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)

    ledger = Ledger()

    def shape_row(stage: str, names: str, expected: tuple[int, ...], invariant: str | None = None):
        shape = tuple(captured[stage].shape)
        text = invariant if invariant is not None else _dims(names, expected)
        ledger.rows.append(LedgerRow(stage, shape, text, shape == expected))

    shape_row("token_embedding", "B,T,C", (B, T, C))
    if rotary:
        ledger.rows.append(LedgerRow("rotary q", tuple(turned.shape), "(B,H,T,D), |rope(q)| == |q|",
                                     tuple(turned.shape) == (B, H, T, D) and lengths_kept))
    else:
        shape_row("position_embedding", "T,C", (T, C))
    shape_row("tok + pos", "B,T,C", (B, T, C), "(B,T,C) by broadcast")
    ledger.rows.append(LedgerRow(
        "head split", tuple(q_heads.shape), "merge(split(q)) == q (round trip)",
        tuple(q_heads.shape) == (B, H, T, D) and round_trip,
    ))
    for i in range(len(model.blocks)):
        shape_row(f"block[{i}]", "B,T,C", (B, T, C), "(B,T,C) preserved")
    shape_row("ln_f", "B,T,C", (B, T, C))
    shape_row("lm_head", "B,T,V", (B, T, V))
    flat = tuple(logits.reshape(-1, logits.size(-1)).shape)
    ledger.rows.append(LedgerRow("flatten for CE", flat, _dims("B*T,V", (B * T, V)), flat == (B * T, V)))
    return ledger
