"""The structure links: CAUSALITY, SHAPE and REGISTRATION (seed 004, "Using AI on
a generated language model", links 3, 4 and 6)."""

from __future__ import annotations

import torch
import torch.nn as nn

from exercises.audit.adapter import engine_like
from exercises.audit.report import Link
from exercises.audit.subject import Subject


def causality(s: Subject) -> Link:
    """CAUSALITY: change only the tokens after position i (eval mode, no gradients).

    The prefix 0..i must stay within tolerance (1e-5 times the largest logit,
    at least 1e-5) and the suffix must move, or the intervention proved
    nothing. i = T // 2 - 1; the new tokens are drawn from ``s.generator``.
    """
    idx, V = s.xs, s.V
    B, T = idx.shape
    position = T // 2 - 1
    shift = torch.randint(1, V, (B, T - position - 1), generator=s.generator).to(idx.device)
    changed = idx.clone()
    changed[:, position + 1:] = (idx[:, position + 1:] + shift) % V
    model = s.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            before = s.forward(idx)
            after = s.forward(changed)
    finally:
        model.train(was_training)
    delta = (after - before).abs()
    prefix = float(delta[:, : position + 1].max())
    suffix = float(delta[:, position + 1:].max())
    tol = 1e-5 * max(1.0, float(before.abs().max()))
    prefix_ok, informative = prefix <= tol, suffix > tol
    ok = prefix_ok and informative
    verdict = (f"prefix 0..{position} still (max |Δ| {prefix:.1e}); suffix moved ({suffix:.2e})" if ok else
               f"the past moved: prefix max |Δ logits| {prefix:.3e} > tol {tol:.1e}" if not prefix_ok else
               f"uninformative: the suffix did not move ({suffix:.1e})")
    return Link("CAUSALITY", "ok" if ok else "FAIL", verdict,
                [["changed", f"tokens after position {position} (eval mode)"],
                 ["prefix max |Δ logits|", f"{prefix:.3e}"], ["suffix max |Δ logits|", f"{suffix:.3e}"],
                 ["tolerance", f"{tol:.1e}"]])


def shape(s: Subject) -> Link:
    """SHAPE: the shape ledger with the head-split round trip where the model is
    built like the engine; otherwise the contract (B, T) -> (B, T, V), finite,
    and n_embd divisible by n_head where the config states them."""
    model, idx, V = s.model, s.xs, s.V
    B, T = idx.shape
    if engine_like(model) and s.forward.convention == "plain":
        from engine.instruments.shape_ledger import shape_ledger

        ledger = shape_ledger(model, idx)
        first = ledger.first_divergence
        rows = [[f"{r.stage}", f"{r.shape} {r.invariant} {'ok' if r.ok else 'X'}"] for r in ledger.rows
                if not r.ok or r.stage in ("head split", "lm_head")]
        verdict = (f"{len(ledger.rows)} ledger rows hold, head-split round trip included" if first is None else
                   f"first divergence: {first}")
        return Link("SHAPE", "ok" if first is None else "FAIL", verdict, rows)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits = s.forward(idx)
    finally:
        model.train(was_training)
    shape_ok = tuple(logits.shape) == (B, T, V)
    finite = bool(torch.isfinite(logits).all())
    rows = [["logits", f"{tuple(logits.shape)}, expected {(B, T, V)}"], ["finite", str(finite)]]
    cfg = getattr(model, "config", None)
    heads_ok = True
    if hasattr(cfg, "n_embd") and hasattr(cfg, "n_head"):
        heads_ok = cfg.n_embd % cfg.n_head == 0
        rows.append(["n_embd % n_head", str(cfg.n_embd % cfg.n_head)])
    ok = shape_ok and finite and heads_ok
    verdict = ("contract only (no engine-style ledger for this structure): (B, T) -> (B, T, V), finite" if ok else
               f"contract broken: logits {tuple(logits.shape)}, finite {finite}")
    return Link("SHAPE", "ok" if ok else "FAIL", verdict, rows)


def registration(s: Subject) -> Link:
    """REGISTRATION: every parameter in named_parameters(); tied tensors noted;
    no tensor that wants gradients hidden in a plain attribute, no module
    with parameters hidden in a plain list, tuple or dict.

    The attributes are those the model had when the factory returned it
    (``Subject.attributes``): what a forward pass stores on a module later
    (an attention map kept for plotting) is not part of the build.
    """
    model = s.model
    named = list(model.named_parameters(remove_duplicate=False))
    first_name: dict[int, str] = {}
    tied = []
    for name, p in named:
        if id(p) in first_name:
            tied.append(f"{name} is {first_name[id(p)]}")
        else:
            first_name[id(p)] = name
    hidden = []
    for where, value in s.attributes:
        if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter) and value.requires_grad:
            hidden.append(f"{where} (tensor wanting grad, not a Parameter)")
        elif isinstance(value, (list, tuple, dict)):
            items = value.values() if isinstance(value, dict) else value
            if any(isinstance(v, nn.Module) and any(True for _ in v.parameters()) for v in items):
                hidden.append(f"{where} (modules in a plain {type(value).__name__})")
    unique = sum(p.numel() for p in {id(p): p for _, p in named}.values())
    ok = not hidden and unique > 0
    verdict = (f"{len(first_name)} parameter tensors, {unique:,} values" + (f"; tied: {tied[0]}" if tied else "")
               if ok else f"not registered: {hidden[0]}" if hidden else "the model has no parameters")
    rows = [["named tensors (unique)", f"{len(named)} ({len(first_name)})"], ["unique values", f"{unique:,}"],
            ["tied", "; ".join(tied) or "none"]]
    if hidden:
        rows.append(["hidden from named_parameters()", "; ".join(hidden[:3])])
    return Link("REGISTRATION", "ok" if ok else "FAIL", verdict, rows)
