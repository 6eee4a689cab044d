"""The learning ledger: is this model actually learning, link by link?

Seed 004, "Training: prove it is happening" (after seed 004 ch. 11). "The
loss went down" is one observation; the ledger replaces it with a chain of
consequences checked on one fixed batch, in order, and names the first link
that does not hold:

TASK        the targets are the inputs shifted by one; every id is in [0, V)
OBJECTIVE   the initial loss sits near ln V (a uniform guess); the loss the
            model reports equals cross entropy worked out by hand
GRADIENT    after one backward every trainable parameter holds a gradient,
            not None, not all zero, and finite
OWNERSHIP   the optimizer holds exactly the model's trainable parameters
UPDATE      one optimizer step moves every trainable parameter
CAPABILITY  the same optimizer drives the batch's loss below a threshold
            within a stated number of steps

The model and the optimizer come from the caller, so an optimizer built
before a submodule was replaced is caught at OWNERSHIP. The model only has
to map (B, T) ids to (B, T, V) logits: ``model(x, y)`` may return
``(logits, loss)`` or ``logits``, and a model whose forward takes no targets
is called as ``model(x)``.

The ledger trains the model it is given (UPDATE takes one step, CAPABILITY
several): pass a fresh model and optimizer, not ones you still need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F

LINKS = ("TASK", "OBJECTIVE", "GRADIENT", "OWNERSHIP", "UPDATE", "CAPABILITY")


class LinkRow(NamedTuple):
    """One check of one link: (link, check, value, ok). ``value`` is short text."""

    link: str
    check: str
    value: str
    ok: bool


@dataclass
class LearningLedger:
    """The rows of a learning ledger, in chain order, and the overfit curve.

    Attributes:
        rows: one LinkRow per check.
        curve: CAPABILITY's loss (nats per token) before each overfit step and
            after the last one; empty when CAPABILITY was skipped.
    """

    rows: list[LinkRow] = field(default_factory=list)
    curve: list[float] = field(default_factory=list)

    @property
    def first_divergence(self) -> str | None:
        """``"LINK/check"`` of the first row that does not hold, or None."""
        for row in self.rows:
            if not row.ok:
                return f"{row.link}/{row.check}"
        return None

    @property
    def first_failing_link(self) -> str | None:
        """The link name of the first divergence (e.g. ``"GRADIENT"``), or None."""
        first = self.first_divergence
        return None if first is None else first.split("/", 1)[0]

    def link_ok(self, link: str) -> bool:
        """Whether every row of ``link`` holds (True for a link with no rows)."""
        return all(r.ok for r in self.rows if r.link == link)

    def to_dict(self) -> dict:
        """JSON-able form: {"rows": [...], "first_divergence": ..., "curve": [...]}."""
        return {
            "rows": [{"link": r.link, "check": r.check, "value": r.value, "ok": r.ok} for r in self.rows],
            "first_divergence": self.first_divergence,
            "curve": list(self.curve),
        }


def _some(names: list[str], shown: int = 3) -> str:
    """The first few parameter names and how many more: "a, b, c and 19 more"."""
    head = ", ".join(names[:shown])
    rest = len(names) - shown
    return f"{head} and {rest} more" if rest > 0 else head


def _forward(model, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Run the model; return (logits (B, T, V), the loss it reports or None)."""
    try:
        out = model(x, y)
    except TypeError:
        out = model(x)  # a forward that takes no targets
    if isinstance(out, (tuple, list)):
        logits = out[0]
        loss = out[1] if len(out) > 1 and isinstance(out[1], torch.Tensor) else None
    else:
        logits, loss = out, None
    return logits, loss


def _loss(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The model's own loss if it reports one, else mean cross entropy of its logits."""
    logits, loss = _forward(model, x, y)
    if loss is None:
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    return loss


def _by_hand(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-token cross entropy, written out: logsumexp(z) - z[target]. (B, T) in float64."""
    z = logits.detach().double()  # (B, T, V)
    top = z.max(dim=-1, keepdim=True).values  # (B, T, 1), for a stable exp
    log_norm = top.squeeze(-1) + torch.log(torch.exp(z - top).sum(dim=-1))  # (B, T)
    return log_norm - z.gather(-1, y.unsqueeze(-1)).squeeze(-1)  # (B, T)


def learning_ledger(model, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, *,
                    vocab_size: int | None = None, max_ratio: float = 3.0, min_ratio: float = 1 / 3,
                    overfit_steps: int = 200, overfit_below: float = 0.1,
                    on_step: Callable[[int, int], None] | None = None) -> LearningLedger:
    """Check the learning chain on one fixed batch and name the first divergence.

    Seed 004, "Training: prove it is happening". The links run in order:
    TASK and OBJECTIVE in eval mode without gradients; GRADIENT, UPDATE and
    CAPABILITY in train mode; the caller's mode is restored afterwards.

    Args:
        model: maps (B, T) int64 ids to (B, T, V) logits; ``model(x, y)`` may
            return ``(logits, loss)`` or logits (see the module docstring).
        optimizer: the optimizer the caller would train with. UPDATE takes
            one step with it and CAPABILITY keeps using it.
        x, y: (B, T) int64 inputs and targets, the batch a training loop
            would see.
        vocab_size: V; by default ``model.config.vocab_size`` if the model
            has one, else the size of the logits' last axis.
        max_ratio, min_ratio: OBJECTIVE holds when initial loss / ln V lies
            within [min_ratio, max_ratio]. ln V is the loss of a uniform
            guess: a reference for a small-logit initialisation, not a law.
        overfit_steps: CAPABILITY's step budget; 0 skips CAPABILITY.
        overfit_below: CAPABILITY holds when the loss after the last step is
            below this many nats per token.
        on_step: called as ``on_step(step, overfit_steps)`` during CAPABILITY.

    Returns:
        A LearningLedger; ``first_divergence`` names the earliest row that
        does not hold (``"GRADIENT/present"``, for example) or is None. When
        an id is outside [0, V) the chain stops after TASK: the forward pass
        cannot run on such ids.
    """
    ledger = LearningLedger()

    def row(link: str, check: str, value: str, ok) -> None:
        ledger.rows.append(LinkRow(link, check, value, bool(ok)))

    params = [p for p in model.parameters() if p.requires_grad]  # tied tensors count once
    names = {id(p): n for n, p in model.named_parameters()}
    was_training = model.training

    try:
        # TASK -------------------------------------------------------------
        model.eval()
        logits = reported = None
        if vocab_size is None:
            vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
        if vocab_size is None:  # a model without a config: read V off its logits
            with torch.no_grad():
                logits, reported = _forward(model, x, y)
            vocab_size = logits.size(-1)
        V = int(vocab_size)
        aligned = x.shape == y.shape and torch.equal(x[:, 1:], y[:, :-1])
        row("TASK", "alignment", "x[:, 1:] == y[:, :-1]" if aligned else "x[:, 1:] != y[:, :-1]", aligned)
        lo, hi = int(min(x.min(), y.min())), int(max(x.max(), y.max()))
        in_range = 0 <= lo and hi < V
        row("TASK", "id range", f"[{lo}, {hi}] of V={V}", in_range)
        if not in_range:  # the forward pass cannot run on these ids; the chain stops here
            return ledger
        if logits is None:
            with torch.no_grad():
                logits, reported = _forward(model, x, y)

        # OBJECTIVE --------------------------------------------------------
        per_token = _by_hand(logits, y)  # (B, T)
        initial = float(reported) if reported is not None else float(per_token.mean())
        ratio = initial / math.log(V)
        row("OBJECTIVE", "initial loss", f"{initial:.3f} / ln {V} = {math.log(V):.3f}: ratio {ratio:.2f}",
            min_ratio <= ratio <= max_ratio)
        one = float(per_token[0, 0])
        library = float(F.cross_entropy(logits[0, :1].double(), y[0, :1]))
        row("OBJECTIVE", "one-example CE", f"by hand {one:.5f} vs F {library:.5f}",
            math.isclose(one, library, rel_tol=1e-6, abs_tol=1e-6))
        mean_by_hand = float(per_token.mean())
        row("OBJECTIVE", "reported loss", f"model {initial:.5f} vs mean by hand {mean_by_hand:.5f}",
            math.isclose(initial, mean_by_hand, rel_tol=1e-4, abs_tol=1e-5))

        # GRADIENT ---------------------------------------------------------
        model.train()
        optimizer.zero_grad(set_to_none=True)
        for p in params:  # gradients the optimizer does not own must not linger either
            p.grad = None
        _loss(model, x, y).backward()
        present = {id(p) for p in params if p.grad is not None and bool(p.grad.ne(0).any())}
        missing = [names.get(id(p), "?") for p in params if id(p) not in present]
        row("GRADIENT", "present", f"{len(present)}/{len(params)}" + (f" (no gradient: {_some(missing)})" if missing else ""),
            not missing)
        grads = [p.grad for p in params if p.grad is not None]
        finite = sum(bool(torch.isfinite(g).all()) for g in grads)
        row("GRADIENT", "finite", f"{finite}/{len(grads)} gradients", finite == len(grads))

        # OWNERSHIP --------------------------------------------------------
        owned_ids = {id(p) for group in optimizer.param_groups for p in group["params"]}
        model_ids = {id(p) for p in params}
        owned = len(model_ids & owned_ids)
        foreign = len(owned_ids - model_ids)
        orphans = [names.get(i, "?") for i in model_ids - owned_ids]
        row("OWNERSHIP", "owned", f"{owned}/{len(params)}" + (f" (not owned: {_some(sorted(orphans))})" if orphans else ""),
            not orphans)
        row("OWNERSHIP", "foreign", f"{foreign} optimizer tensors not in the model", foreign == 0)

        # UPDATE -----------------------------------------------------------
        before = [p.detach().clone() for p in params]
        optimizer.step()
        moved = sum(not torch.equal(b, p.detach()) for b, p in zip(before, params))
        row("UPDATE", "moved", f"{moved}/{len(params)}", moved == len(params))

        # CAPABILITY -------------------------------------------------------
        if overfit_steps > 0:
            curve = []
            for step in range(overfit_steps):
                loss = _loss(model, x, y)
                curve.append(loss.item())
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                if on_step is not None:
                    on_step(step + 1, overfit_steps)
            with torch.no_grad():
                final = float(_loss(model, x, y))
            curve.append(final)
            ledger.curve = curve
            ok = math.isfinite(final) and final < overfit_below
            row("CAPABILITY", "overfit", f"{curve[0]:.4f} -> {final:.4f} in {overfit_steps} steps "
                f"(need < {overfit_below:g})", ok)
    finally:
        model.train(was_training)
    return ledger
