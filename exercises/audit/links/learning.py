"""The learning links: INIT, GRADIENTS, OWNERSHIP, UPDATE and CAPABILITY (seed 004,
"Training: prove it is happening", and links 5, 7-10 of "Using AI on a
generated language model").

Each is its own measurement on the real batch, so an exception or a NaN is
named at the link where it happens: a loss that is NaN at INIT, a NaN
gradient under a finite loss at GRADIENTS, an optimizer whose state no
longer matches its parameters at UPDATE. The model is called through its
interface (``Subject.forward``): targets by keyword, Hugging Face labels
shifted inside, the model's own loss where it reports one.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from exercises.audit.constants import OVERFIT_BELOW
from exercises.audit.measure import (ROUNDING_UNITS, ROUNDOFF, clear_grads, close, cross_entropy_by_hand,
                                     invalid_logits, mode, names_of, seeded, some, trainable)
from exercises.audit.report import Link
from exercises.audit.subject import Subject
from exercises.outcome import first_line

#: INIT holds when initial loss / ln V lies within [MIN_RATIO, MAX_RATIO]. ln V is
#: the loss of a uniform guess: a reference for a small-logit initialisation, not a law.
MIN_RATIO, MAX_RATIO = 1 / 3, 3.0


def _link(name: str, rows: list[tuple[str, str, bool]], quiet: tuple[str, ...] = (),
          advice: dict[str, str] | None = None) -> Link:
    """A link from its checks (check, value, ok): FAIL names the first that does not hold, and its advice is
    ``advice[check]`` for that check (built by the caller from what it measured).

    Checks named in ``quiet`` join the evidence but not a passing verdict.
    """
    bad = [r for r in rows if not r[2]]
    verdict = (f"{bad[0][0]}: {bad[0][1]}" if bad else
               "; ".join(f"{check} {value}" for check, value, _ in rows if check not in quiet))
    return Link(name, "FAIL" if bad else "ok", verdict,
                [[check, f"{value} {'ok' if ok else 'X'}"] for check, value, ok in rows],
                advice=(advice or {}).get(bad[0][0], "") if bad else "")


def init(s: Subject) -> Link:
    """INIT: the first loss, in eval mode, against ln V and against cross entropy by hand.

    Checks: the logits hold no NaN or +inf (−inf is how a model bans a
    token); initial loss / ln V within [1/3, 3] (seed 004: ln V is the
    uniform-guess reference); one example's cross entropy by hand equals
    ``F.cross_entropy``; the loss the model reports equals the mean by hand
    over the positions its convention scores (rel. 1e-4); and with a quarter
    of two rows' targets set to −100 (PyTorch's ``ignore_index``), it equals
    the mean over the real tokens only. A model whose loss rejects −100
    targets gets a warning, or a failure when the factory named a ``pad_id``.
    """
    x, y, V = s.xs, s.ys, s.V
    with mode(s.model, False), torch.no_grad(), seeded(0):
        logits, reported, labels = s.forward.logits_and_loss(x, y)
    nan, pos_inf = invalid_logits(logits)
    rows = [("logits", f"{nan} NaN, {pos_inf} +inf among {logits.numel():,}" if nan or pos_inf else
             f"no NaN or +inf among {logits.numel():,}", not (nan or pos_inf))]
    z, t = s.forward.aligned(logits, labels)
    per_token = cross_entropy_by_hand(z, t)
    by_hand = float(per_token.mean())
    initial = float(reported) if reported is not None else by_hand
    ratio = initial / math.log(V)
    if math.isfinite(initial):
        rows.append(("initial loss", f"{initial:.3f} / ln {V} = {math.log(V):.3f}: ratio {ratio:.2f}",
                     MIN_RATIO <= ratio <= MAX_RATIO))
    else:
        rows.append(("initial loss", f"{initial} reported, {by_hand:.3f} by hand from the same logits", False))
    one, library = float(per_token[0]), float(F.cross_entropy(z[:1].double(), t[:1]))
    rows.append(("one-example CE", f"by hand {one:.5f} vs F {library:.5f}", close(one, library, 1e-6, 1e-6)))
    link_warnings = []
    if reported is not None:
        rel = s.tol(1e-4)
        same = close(initial, by_hand, rel=rel)
        said = f"model {initial:.5f} vs mean by hand {by_hand:.5f}" + \
            ("" if s.dtype == torch.float32 else f" (rel. tolerance {rel:.1e}, {s.precision})")
        why = "" if same else _reported_loss_explained(s, z, t, initial, rel)
        if why:
            link_warnings.append(f"reported loss {initial:.5f} is not the mean cross entropy by hand "
                                 f"{by_hand:.5f}: {why}")
        elif not same and not s.extras.get("label_smoothing"):
            said += ("; a model that smooths its labels on purpose names its ε with the factory's "
                     "'label_smoothing' key")
        rows.append(("reported loss", said, same or bool(why)))
        padded, warning = _padded(s, x, y)
        if padded is not None:
            rows.append(padded)
        if warning:
            link_warnings.append(warning)
    link = _link("INIT", rows, quiet=("logits",), advice={
        "logits": "a NaN or +inf logit at init: look for a mask filled with +inf or NaN, a division by a norm "
                  "that can be zero, a log of zero, or an initialisation that overflows",
        "initial loss": (f"at init every token should be about equally likely (loss near ln {V} = {math.log(V):.2f}); "
                         + ("a loss this far above it means confident wrong logits: initialise the head and "
                            "embeddings small (std 0.02), scale residual projections by 1/sqrt(2 x layers)"
                            if ratio > MAX_RATIO else
                            "a loss this far below it means the model sees its targets: check that the "
                            "targets are not fed in as inputs and the mask hides the future")
                         if math.isfinite(ratio) else "the loss is not finite: fix the first NaN the logits hold"),
        "one-example CE": "F.cross_entropy disagrees with -log softmax by hand on the same logits: the logits "
                          "are not what the loss is given (a reshape that mixes B and T, or targets of another row)",
        "reported loss": "the loss the model reports is not the mean cross entropy of its own logits: check the "
                         "shift (targets = inputs moved by one), the reduction (mean over real tokens), and that "
                         "logits and targets are flattened the same way",
        "padded loss": "a loss that counts positions whose target is −100: pass ignore_index=-100 to "
                          "F.cross_entropy (its default) and do not average over the padded positions yourself"})
    link.warnings += link_warnings
    if link.status == "ok" and link_warnings:  # a warning: the verdict names the convention departed from
        link.verdict += f"; {link_warnings[0].split(': ')[0]}"
    return link


def _reported_loss_explained(s: Subject, z: torch.Tensor, t: torch.Tensor, reported: float, rel: float) -> str:
    """Why a reported loss that is not the mean cross entropy by hand is still a correct one, or ''.

    Two conventions, each checked against a recomputation rather than
    assumed: label smoothing at the ε the factory declares
    (``label_smoothing``), and cross entropy computed in a lower precision —
    the reported loss is then a number of that dtype, within a few of its
    units (``ROUNDING_UNITS``) of the float64 value.
    """
    eps = s.extras.get("label_smoothing")
    if eps:
        smoothed = float(F.cross_entropy(z.double(), t, label_smoothing=float(eps)))
        if close(reported, smoothed, rel=rel):
            return f"it is cross entropy with label smoothing ε = {float(eps):g} (by hand {smoothed:.5f}), as declared"
    exact = float(cross_entropy_by_hand(z, t).mean())
    for dtype in (torch.bfloat16, torch.float16):
        representable = float(torch.tensor(reported).to(dtype).float()) == reported
        if representable and close(reported, exact, rel=ROUNDING_UNITS * ROUNDOFF[dtype]):
            return (f"it is a {str(dtype).removeprefix('torch.')} number within 8 of its units of the float64 "
                    f"mean ({abs(reported - exact) / abs(exact):.1e} relative): the loss is computed in "
                    f"{str(dtype).removeprefix('torch.')}")
    return ""


def _padded(s: Subject, x: torch.Tensor, y: torch.Tensor) -> tuple[tuple[str, str, bool] | None, str | None]:
    """The padded-loss check: (row or None, warning or None). See ``init``."""
    if s.forward.interface.logits_from:  # a loss wrapper scores its ids itself: no targets to pad
        return None, None
    labels, inputs = s.forward.labels(x, y).clone(), x.clone()
    k = max(1, x.size(1) // 4)
    labels[::2, -k:] = -100  # rows 0 and 2 end in k padding positions
    pad_id = s.extras.get("pad_id")
    if pad_id is not None:
        inputs[::2, -k:] = int(pad_id)
    try:
        with mode(s.model, False), torch.no_grad(), seeded(0):
            logits, loss = s.forward.logits_and_loss_with(inputs, labels)
    except Exception as exc:
        said = f"the loss rejects targets padded with -100 (ignore_index): {first_line(exc)[:120]}"
        return ((("padded loss", said, False), None) if pad_id is not None else (None, said))
    if loss is None:
        return None, None
    z, t = s.forward.aligned(logits, labels)
    want, got = float(cross_entropy_by_hand(z, t).mean()), float(loss)
    rel = s.tol(1e-4)
    same = close(got, want, rel=rel)
    why = "" if same else _reported_loss_explained(s, z, t, got, rel)
    return (("padded loss", f"model {got:.5f} vs mean over the {t.numel()} real tokens {want:.5f} "
                            f"({labels.eq(-100).sum()} targets -100)" + (f": {why}" if why else ""),
             same or bool(why)), None)


def gradients(s: Subject) -> Link:
    """GRADIENTS: after one backward (train mode) every trainable parameter holds a
    gradient that is present, not all zero, and finite.

    A NaN gradient under a finite loss (``torch.where`` over a NaN branch, a
    sqrt at 0) is named here, with the parameters that hold it.
    """
    if s.untrainable:
        return Link("GRADIENTS", "skip", s.untrainable)
    model = s.model
    params, names = trainable(model), names_of(model)
    clear_grads(model, s.optimizer)
    with mode(model, True), seeded(0):
        loss = s.forward.loss(s.xs, s.ys)
        loss.backward()
    value = float(loss.detach())
    present = {id(p) for p in params if p.grad is not None and bool(p.grad.ne(0).any())}
    missing = [names.get(id(p), "?") for p in params if id(p) not in present]
    late = _reached_a_step_later(s, missing) if missing and math.isfinite(value) else []
    s.memo["gradient a step later"] = set(late)
    missing = [n for n in missing if n not in late]
    grads = [(names.get(id(p), "?"), p.grad) for p in params if p.grad is not None]
    broken = [name for name, g in grads if not bool(torch.isfinite(g).all())]
    # A NaN flows backwards from where it starts into everything before it: the last
    # broken parameter in module order is the nearest to its source.
    where = (f" (NaN or inf in {len(broken)}, the last in module order {broken[-1]}, nearest where it starts; "
             f"the loss was {value:.4g})" if broken else "")
    rows = [("loss", f"{value:.4g} in train mode", math.isfinite(value)),
            ("present", f"{len(present)}/{len(params)}" + (f" (no gradient: {some(missing)})" if missing else ""),
             not missing),
            *([("a step later", f"{len(late)} start with a zero gradient and get one within a few steps, as a "
                                f"zero-initialised projection feeds them ({some(late)})", True)] if late else []),
            ("finite", f"{len(grads) - len(broken)}/{len(grads)} gradients{where}", not broken)]
    return _link("GRADIENTS", rows, quiet=("loss",), advice={
        "loss": "the training-mode loss is not finite: fix the first NaN or inf (INIT reads the same forward)",
        "present": f"no gradient reaches {some(missing)}: the path from it to the loss is cut (a .detach(), "
                   "torch.no_grad(), .item() or .data in the forward, a module built but never called, or a "
                   "parameter used only under a branch the forward does not take)",
        "finite": (f"a NaN or inf gradient under a finite loss, nearest its start at {broken[-1]}: look there for "
                   "a sqrt or log at 0, a division by a norm that can be 0, or torch.where over a NaN branch "
                   "(the gradient of the branch not taken still flows)") if broken else ""})


#: How many steps a zero-initialised chain may take to pass gradients to all it feeds: a zero head, then
#: zero output projections, then the q, k, v and MLP input projections behind them (nanochat: 2 steps).
LATE_STEPS = 3


def _reached_a_step_later(s: Subject, missing: list[str]) -> list[str]:
    """Which of the parameters with no gradient at init get one within ``LATE_STEPS`` AdamW steps (lr 3e-3)
    on a copy.

    A projection initialised to zero on purpose (nanochat zeroes its output projections and its head)
    passes no gradient back to what feeds it until it has moved once; a parameter cut off from the loss
    (a detached path, an unused module) gets none ever. The step is taken on a copy: the model under
    audit is not changed. Empty when the model can be neither copied nor built again (``Subject.twin``).
    """
    twin, _ = s.twin()
    if twin is None:
        return []
    forward = type(s.forward)(twin, s.forward.interface)
    optimizer = torch.optim.AdamW([p for p in twin.parameters() if p.requires_grad], lr=3e-3, weight_decay=0.0)
    got: set[str] = set()
    with mode(twin, True), seeded(0):
        forward.loss(s.xs, s.ys).backward()
        for _ in range(LATE_STEPS):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            forward.loss(s.xs, s.ys).backward()
            got |= {name for name, p in twin.named_parameters() if p.grad is not None and bool(p.grad.ne(0).any())}
            if all(n in got for n in missing):
                break
    return [n for n in missing if n in got]


def ownership(s: Subject) -> Link:
    """OWNERSHIP: the optimizer holds exactly the model's trainable parameters.

    Warns (does not fail) when weight decay reaches 1-D tensors (LayerNorm
    gains, biases: nanoGPT decays only 2-D weights) or the embedding tables.
    """
    model, optimizer = s.model, s.optimizer
    params, names = trainable(model), names_of(model)
    owned_ids = {id(p) for group in optimizer.param_groups for p in group["params"]}
    model_ids = {id(p) for p in params}
    orphans = sorted(names.get(i, "?") for i in model_ids - owned_ids)
    foreign = len(owned_ids - model_ids)
    link = _link("OWNERSHIP", [
        ("owned", f"{len(model_ids & owned_ids)}/{len(params)}" + (f" (not owned: {some(orphans)})" if orphans else ""),
         not orphans),
        ("foreign", f"{foreign} optimizer tensors not in the model", foreign == 0)], advice={
        "owned": f"the optimizer never steps {some(orphans)}: build it after the model is complete, from "
                 "model.parameters() (or every param group's union of them), not from a list made before a "
                 "module was added or replaced",
        "foreign": f"the optimizer holds {foreign} tensor(s) the model no longer has: a module was replaced (or "
                   "the model copied or rebuilt) after the optimizer was made; make the optimizer last"})
    link.warnings += decay_warnings(model, optimizer)
    reached = [what for what, key in (("1-D tensors", "1-D tensors"), ("the embedding table", "embedding table"))
               if any(key in w for w in link.warnings)]
    if link.status == "ok" and reached:  # a warning: the verdict names the convention departed from
        link.verdict += f"; weight decay on {' and '.join(reached)}"
    return link


def decay_warnings(model: nn.Module, optimizer) -> list[str]:
    """Warnings for weight decay on 1-D tensors and on embedding tables (empty when there is none)."""
    names = names_of(model)
    tables = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    one_d, embeddings, decay = [], [], 0.0
    for group in optimizer.param_groups:
        wd = float(group.get("weight_decay", 0.0) or 0.0)
        if wd <= 0:
            continue
        for p in group["params"]:
            if id(p) not in names:
                continue
            if p.dim() < 2:
                one_d.append(names[id(p)])
                decay = max(decay, wd)
            elif id(p) in tables:
                embeddings.append(names[id(p)])
                decay = max(decay, wd)
    warnings = []
    if one_d:
        warnings.append(f"weight decay {decay:g} on {len(one_d)} 1-D tensors ({some(one_d)}): LayerNorm gains and "
                        "biases are usually left undecayed (nanoGPT decays only 2-D weights)")
    if embeddings:
        warnings.append(f"weight decay on the embedding table {some(embeddings)} (minGPT leaves embeddings "
                        "undecayed; nanoGPT decays them)")
    return warnings


def update(s: Subject) -> Link:
    """UPDATE: the optimizer's state matches its parameters, and one step moves every trainable parameter.

    State made for float32 parameters that were later moved with
    ``.double()`` (or to another device) is named here: PyTorch's AdamW
    raises on it, other optimizers mix dtypes silently. A step that raises
    fails this link, and CAPABILITY is then skipped.
    """
    if s.untrainable:
        return Link("UPDATE", "skip", s.untrainable)
    model, optimizer = s.model, s.optimizer
    params, names = trainable(model), names_of(model)
    rows, checked, mismatched = [], 0, []
    for p in params:
        for key, value in optimizer.state.get(p, {}).items():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                checked += 1
                if value.dtype != p.dtype or value.device != p.device:
                    mismatched.append(f"{names.get(id(p), '?')} {key} {value.dtype} on {value.device}, the "
                                      f"parameter {p.dtype} on {p.device}".replace("torch.", ""))
    if checked:
        rows.append(("state", f"{len(mismatched)} of {checked} state tensors differ from their parameters: "
                              f"{mismatched[0]}" if mismatched else
                     f"{checked} state tensors match their parameters' dtype and device", not mismatched))
    clear_grads(model, optimizer)
    with mode(model, True), seeded(0):
        s.forward.loss(s.xs, s.ys).backward()
    before = [p.detach().clone() for p in params]
    try:
        optimizer.step()
    except Exception as exc:
        s.memo["step raised"] = first_line(exc)[:160]
        rows.append(("step", f"optimizer.step() raised {s.memo['step raised']}", False))
        return _link("UPDATE", rows, advice=_update_advice(mismatched, []))
    unmoved = [names.get(id(p), "?") for b, p in zip(before, params) if torch.equal(b, p.detach())]
    later = [n for n in unmoved if n in s.memo.get("gradient a step later", ())]
    moved = len(params) - len(unmoved)
    rows.append(("moved", f"{moved}/{len(params)}" + (f" ({len(later)} more have no gradient yet and get one a "
                                                      f"step later: {some(later)})" if later else "")
                 + (f" (not moved: {some([n for n in unmoved if n not in later])})" if len(unmoved) > len(later)
                    else ""), len(unmoved) == len(later)))
    return _link("UPDATE", rows, quiet=("state",),
                 advice=_update_advice(mismatched, [n for n in unmoved if n not in later]))


def _update_advice(mismatched: list[str], unmoved: list[str]) -> dict[str, str]:
    """UPDATE's advice for each check, from the state tensors that differ and the parameters that stayed."""
    state = ("make the optimizer after the model's last .to() / .double() / .cuda() (its state was made for "
             f"the parameters as they were: {mismatched[0]})") if mismatched else ""
    return {"state": state,
            "step": state or "the step raised on this model's parameters: read the exception; a parameter "
                             "whose dtype or device changed after the optimizer was made is the usual cause",
            "moved": f"the step left {some(unmoved)} where they were: a learning rate of 0 in their param group, "
                     "their gradient zeroed or cleared between backward() and step(), or the optimizer holding "
                     "copies of them rather than the parameters themselves"}


#: CAPABILITY's reference: the audit's own optimizer, run on a copy of the model as built.
REFERENCE_LR = 3e-3
#: The recipe passes when its loss falls by at least RECIPE_SHARE of the reference's fall.
RECIPE_SHARE = 0.5
#: How often the curve in the evidence is sampled (steps); every sample is an eval-mode loss.
CURVE_EVERY = 25


def _eval_loss(s: Subject, model: nn.Module) -> float:
    """The cross entropy of ``model``'s logits on the batch, in eval mode: what it predicts, not the objective
    it reports (a smoothed or auxiliary loss has a floor of its own)."""
    forward = s.forward if model is s.model else type(s.forward)(model, s.forward.interface)
    with mode(model, False), torch.no_grad(), seeded(0):
        return float(forward.cross_entropy(s.xs, s.ys))


def _overfit(s: Subject, model: nn.Module, optimizer, scheduler, steps: int, within: tuple[float, float],
             what: str, own_objective: bool = True) -> list[float]:
    """Train ``model`` on the batch for ``steps`` (train mode, the audit's loop: zero_grad, backward,
    step, then the scheduler) on its own loss, or on the cross entropy of its logits when not
    ``own_objective``; return the eval-mode cross entropy at step 0 and every CURVE_EVERY steps, and at the end."""
    forward = s.forward if model is s.model else type(s.forward)(model, s.forward.interface)
    objective = forward.loss if own_objective else forward.cross_entropy
    curve = [_eval_loss(s, model)]
    with mode(model, True):
        for step in range(steps):
            loss = objective(s.xs, s.ys)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            if (step + 1) % CURVE_EVERY == 0 or step + 1 == steps:
                curve.append(_eval_loss(s, model))
            if (step + 1) % 10 == 0:
                s.tick(within[0] + (within[1] - within[0]) * (step + 1) / steps, f"CAPABILITY: {what} {step + 1}/{steps}")
    return curve


def capability(s: Subject) -> Link:
    """CAPABILITY: the model learns one batch, and its own recipe teaches it as well as a reference does.

    Seed 004, "Training: prove it is happening". Two runs of ``s.overfit_steps``
    steps in train mode, each read in eval mode (dropout off) every
    CURVE_EVERY steps as the cross entropy of the logits — what the model
    predicts, never the objective it reports, which label smoothing or an
    auxiliary loss keeps above the bar — the curves in the evidence:

    - the reference: AdamW (lr 3e-3, no weight decay) on a copy of the model
      as built, trained on that cross entropy. It must fit the batch, below
      ``OVERFIT_BELOW`` nats: else the model cannot learn (a cut residual, a
      detached path);
    - the recipe: the factory's optimizer (and scheduler) on the model. Its
      loss must fall by at least RECIPE_SHARE of the reference's fall from
      where it started: a recipe at lr 1e-3 still falling passes, one that
      does not learn fails. Without a factory optimizer the recipe is the
      reference and runs once.

    "skip" when the budget is 0 or UPDATE's step raised.
    """
    if s.untrainable:
        return Link("CAPABILITY", "skip", s.untrainable)
    if s.memo.get("step raised"):
        return Link("CAPABILITY", "skip", "not run: optimizer.step() raised at UPDATE")
    steps = s.overfit_steps
    if steps <= 0:
        return Link("CAPABILITY", "skip", "not run (no step budget)")
    own = s.setup.get("optimizer", "").endswith("from the factory")
    reference, made = None, ""
    if own and s.fresh is not None:
        twin, made = s.twin()
        if twin is not None:
            with torch.no_grad():
                for name, t in list(twin.named_parameters()) + list(twin.named_buffers()):
                    if name in s.fresh and s.fresh[name].shape == t.shape:
                        t.copy_(s.fresh[name])
            reference = _overfit(s, twin, torch.optim.AdamW(twin.parameters(), lr=REFERENCE_LR, weight_decay=0.0),
                                 None, steps, (0.0, 0.5), "reference step", own_objective=False)
    recipe = _overfit(s, s.model, s.optimizer, s.extras.get("scheduler"), steps, (0.5 if reference else 0.0, 1.0),
                      "step")
    start, final = recipe[0], recipe[-1]
    rows = []
    if reference is None:
        rows.append(("overfit", f"{start:.4f} -> {final:.4f} in {steps} steps (need < {OVERFIT_BELOW:g}, eval mode)",
                     math.isfinite(final) and final < OVERFIT_BELOW))
    else:
        ref_fall, fall = reference[0] - reference[-1], start - final
        rows.append(("reference", f"AdamW lr {REFERENCE_LR:g} on the model as built: {reference[0]:.4f} -> "
                                  f"{reference[-1]:.4f} (need < {OVERFIT_BELOW:g}: the model can learn the batch)",
                     math.isfinite(reference[-1]) and reference[-1] < OVERFIT_BELOW))
        share = fall / ref_fall if ref_fall > 0 else float("nan")
        rows.append(("recipe", f"{s.setup.get('optimizer', 'the optimizer')}: {start:.4f} -> {final:.4f}, "
                               f"{share:.0%} of the reference's fall (need {RECIPE_SHARE:.0%})",
                     math.isfinite(final) and math.isfinite(share) and share >= RECIPE_SHARE))
    link = _link("CAPABILITY", rows, advice={
        "overfit": f"the model cannot fit one batch ({start:.3g} -> {final:.3g} nats): something cuts what it can "
                   "learn (a dropped residual, a detached path, a frozen or zero-initialised layer that never "
                   "moves, a learning rate of 0); the links above name most of these",
        "reference": "even the reference AdamW cannot fit one batch on this model: the model itself cannot learn "
                     "it (a dropped residual, a detached path, a frozen layer); the links above name most of these",
        "recipe": "the reference AdamW fits the batch but your optimizer falls less than half as far: check its "
                  "learning rate (and a scheduler that starts at 0 or decays too soon), its param groups, and "
                  "weight decay that pulls against the fit"})
    if made:  # the reference is not a copy of the model: say how it was made, or why there is none
        said = made if reference is not None else f"{made}; no reference run, so the recipe is held to the " \
                                                    f"overfit bar itself"
        link.verdict += f" (reference: {said})"
        link.evidence.insert(0, ["reference model", said])
    link.evidence.append([f"eval loss every {CURVE_EVERY} steps", " ".join(f"{v:.3f}" for v in recipe)])
    if reference is not None:
        link.evidence.append([f"reference every {CURVE_EVERY} steps", " ".join(f"{v:.3f}" for v in reference)])
    return link
