"""The LOOP link: the learner's own training step (seed 001, the training loop;
seed 004, "The LLM wrote my training loop, and it looks right").

The factory hands over ``train_step(model, optimizer, batch)`` — ``batch``
is ``(x, y)``, two (B, T) int64 tensors, y the inputs shifted by one — and
optionally ``evaluate(model)``, a ``scheduler`` and a ``scaler``
(``torch.amp.GradScaler``). The audit watches one step from outside: it
wraps ``optimizer.step``, ``scaler.unscale_`` and ``clip_grad_norm_`` to see
the order of events and the gradients at each, then replays the step from
the same state.
"""

from __future__ import annotations

import contextlib
import copy
import math
import warnings
from typing import Any, Iterator

import torch
import torch.nn as nn

from exercises.audit.measure import clear_grads, mode, seeded, trainable
from exercises.audit.report import Link
from exercises.audit.subject import Subject

#: Two identical steps from one state see the same gradients up to float rounding
#: (measured: 0.0 with the RNG reseeded); a missing zero_grad doubles them
#: (relative difference 1.0). REPEAT_TOL sits between, far from both.
REPEAT_TOL = 1e-4
#: The step's gradient (before clipping and unscaled) over the full-batch gradient of
#: the mean loss: 1.000 for a correct step (microbatched or not, without dropout);
#: k for k microbatches summed without dividing by k, 1/k when divided twice.
#: The band admits dropout's noise and autocast's rounding, and no k >= 2.
NORM_RATIO_BAND = (0.75, 1.33)


class Watch:
    """Records what a training step does: the order of events, the gradients and learning rate at each.

    Attributes:
        events: "unscale", "clip", "step" in the order they happened.
        raw: the gradients (unscaled) at the first of those events, by parameter id.
        at_step: the gradients optimizer.step() saw, by parameter id.
        lr_at_step: the first param group's learning rate when optimizer.step() ran.
    """

    def __init__(self, model: nn.Module, optimizer, scaler) -> None:
        self.params, self.optimizer, self.scaler = trainable(model), optimizer, scaler
        self.events: list[str] = []
        self.raw: dict[int, torch.Tensor] | None = None
        self.at_step: dict[int, torch.Tensor] | None = None
        self.lr_at_step: float | None = None
        self.unscaled = False

    def _grads(self, divide: float = 1.0) -> dict[int, torch.Tensor]:
        return {id(p): p.grad.detach().clone() / divide for p in self.params if p.grad is not None}

    def _scale(self) -> float:
        scaler = self.scaler
        if scaler is None or self.unscaled or not getattr(scaler, "is_enabled", lambda: False)():
            return 1.0
        return float(scaler.get_scale())

    def saw(self, event: str) -> None:
        if self.raw is None:
            self.raw = self._grads(self._scale())
        self.events.append(event)
        if event == "unscale":
            self.unscaled = True
        if event == "step" and self.at_step is None:
            self.at_step = self._grads()
            self.lr_at_step = float(self.optimizer.param_groups[0]["lr"])

    @contextlib.contextmanager
    def watching(self, train_step) -> Iterator[None]:
        """Wrap optimizer.step, scaler.unscale_ and clip_grad_norm_ (wherever train_step reaches it) for the block."""
        patches: list[tuple[Any, str, Any, bool]] = []

        def patch(owner, attr, wrapper):
            had = attr in vars(owner) if hasattr(owner, "__dict__") else False
            patches.append((owner, attr, getattr(owner, attr), had))
            setattr(owner, attr, wrapper)

        for optimizer in getattr(self.optimizer, "members", [self.optimizer]):  # each of several, in any order
            def watched_step(*args, _step=optimizer.step, **kwargs):
                self.saw("step")
                return _step(*args, **kwargs)

            patch(optimizer, "step", watched_step)
        if self.scaler is not None and hasattr(self.scaler, "unscale_"):
            unscale = self.scaler.unscale_

            def watched_unscale(optimizer):
                if not self.unscaled:
                    self.saw("unscale")
                return unscale(optimizer)

            patch(self.scaler, "unscale_", watched_unscale)
        clip = torch.nn.utils.clip_grad_norm_

        def watched_clip(*args, **kwargs):
            self.saw("clip")
            return clip(*args, **kwargs)

        patch(torch.nn.utils, "clip_grad_norm_", watched_clip)
        patch(torch.nn.utils.clip_grad, "clip_grad_norm_", watched_clip)
        for name, value in list(getattr(train_step, "__globals__", {}).items()):
            if value is clip:  # ``from torch.nn.utils import clip_grad_norm_`` in the learner's file
                patches.append((train_step.__globals__, name, value, True))
                train_step.__globals__[name] = watched_clip
        try:
            yield
        finally:
            for owner, attr, original, had in reversed(patches):
                if isinstance(owner, dict):
                    owner[attr] = original
                elif had:
                    setattr(owner, attr, original)
                else:
                    delattr(owner, attr)


def _state(s: Subject) -> dict:
    """Everything a step changes: parameter values, the optimizer's, scheduler's and scaler's state."""
    saved = {"params": [p.detach().clone() for p in s.model.parameters()],
             "optimizer": copy.deepcopy(s.optimizer.state_dict())}
    for key in ("scheduler", "scaler"):
        if s.extras.get(key) is not None:
            saved[key] = copy.deepcopy(s.extras[key].state_dict())
    return saved


def _restore(s: Subject, saved: dict) -> None:
    with torch.no_grad():
        for p, value in zip(s.model.parameters(), saved["params"]):
            p.copy_(value)
    s.optimizer.load_state_dict(copy.deepcopy(saved["optimizer"]))
    for key in ("scheduler", "scaler"):
        if key in saved:
            s.extras[key].load_state_dict(copy.deepcopy(saved[key]))


def _run(s: Subject, train_step, watch: Watch) -> None:
    with watch.watching(train_step), mode(s.model, True), seeded(0), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's own scheduler-order warning; the link says it better
        train_step(s.model, s.optimizer, (s.xs, s.ys))


def _flat(grads: dict[int, torch.Tensor] | None, params) -> torch.Tensor:
    """Every parameter's gradient in one float64 vector on the CPU (zeros where there is none)."""
    grads = grads or {}
    return torch.cat([grads[id(p)].reshape(-1).double().cpu() if id(p) in grads else
                      torch.zeros(p.numel(), dtype=torch.float64) for p in params])


def _full_gradient(s: Subject, params) -> torch.Tensor:
    """The full-batch gradient of the mean loss at the model's present state, as one vector (``_flat``);
    the gradients are cleared before and after."""
    clear_grads(s.model, s.optimizer)
    with mode(s.model, True), seeded(0):
        s.forward.loss(s.xs, s.ys).backward()
    full = _flat({id(p): p.grad.detach().clone() for p in params if p.grad is not None}, params)
    clear_grads(s.model, s.optimizer)
    return full


def loop(s: Subject) -> Link:
    """LOOP: the learner's ``train_step`` zeroes, normalises, clips and schedules in the right order.

    Checks, each measured on one step with the RNG reseeded:

    - it calls ``optimizer.step()`` (directly or through the scaler; each of
      several optimizers handed as a list counts);
    - zero_grad: the same step replayed from the same state, leaving the
      first step's gradients in place, sees the same gradients (``REPEAT_TOL``)
      — without zero_grad the second sees twice as much; and
      ``optimizer.step()`` sees a gradient at all — a zero_grad placed
      between backward() and the step leaves it none;
    - normalisation: the step's gradient, before clipping and unscaled,
      matches the full-batch gradient of the mean loss (``NORM_RATIO_BAND``)
      — k microbatches summed without dividing by k give k times it;
    - clipping: ``clip_grad_norm_`` runs before ``optimizer.step()`` and,
      with a GradScaler, after ``scaler.unscale_``;
    - scheduler: the first step uses the schedule's first learning rate
      (``scheduler.step()`` after ``optimizer.step()``), the schedule started
      over from where the factory left it;
    - evaluate: ``evaluate(model)`` leaves a training model training.

    "skip" when the factory gave no ``train_step``.
    """
    train_step = s.extras.get("train_step")
    if train_step is not None and s.untrainable:
        return Link("LOOP", "skip", s.untrainable)
    if train_step is None:
        return Link("LOOP", "skip", "no train_step: return {'model': ..., 'optimizer': ..., 'train_step': "
                                    "train_step} from the factory to have the training loop checked")
    model, scaler, scheduler = s.model, s.extras.get("scaler"), s.extras.get("scheduler")
    params = trainable(model)
    rows: list[tuple[str, str, bool]] = []
    fixes = dict(FIXES)
    if scheduler is not None and s.schedule_start is not None:  # CAPABILITY stepped it: start the schedule over
        state, lrs = s.schedule_start
        scheduler.load_state_dict(copy.deepcopy(state))
        for group, lr in zip(s.optimizer.param_groups, lrs):
            group["lr"] = lr
    s.restore_fresh()  # the model as built: CAPABILITY's overfit leaves gradients too small to measure by
    saved = _state(s)
    lr0 = float(s.optimizer.param_groups[0]["lr"])

    clear_grads(model, s.optimizer)
    first = Watch(model, s.optimizer, scaler)
    _run(s, train_step, first)
    steps = first.events.count("step")
    rows.append(("optimizer.step", f"{steps} call{'s' if steps != 1 else ''} in one train_step", steps >= 1))
    if steps:
        order = " -> ".join(first.events)
        if "clip" in first.events:
            clip_at, step_at = first.events.index("clip"), first.events.index("step")
            unscaled_first = "unscale" in first.events[:clip_at]
            scaled = scaler is not None and getattr(scaler, "is_enabled", lambda: False)()
            ok = clip_at < step_at and (unscaled_first or not scaled)
            why = ("" if ok else ": clip_grad_norm_ runs after optimizer.step(), so the step used unclipped "
                   "gradients" if clip_at > step_at else ": clip_grad_norm_ runs before scaler.unscale_(optimizer), "
                   "so it clips gradients still multiplied by the loss scale")
            rows.append(("clipping", f"{order}{why}", ok))
        if scheduler is not None:
            ok = first.lr_at_step is not None and math.isclose(first.lr_at_step, lr0, rel_tol=1e-9)
            rows.append(("scheduler", f"the first step used lr {first.lr_at_step:.3g}, the schedule's first is "
                                      f"{lr0:.3g}" + ("" if ok else ": scheduler.step() runs before "
                                                      "optimizer.step()"), ok))

    saw = _flat(first.at_step, params) if steps else None
    full = None
    if saw is not None and float(saw.norm()) == 0.0:
        _restore(s, saved)
        full = _full_gradient(s, params)
    if full is not None and float(full.norm()) > 0.0:
        rows.append(("zero_grad", f"optimizer.step() saw no gradient (every one zero or None), where the batch's "
                                  f"loss has one (norm {float(full.norm()):.3g}): zero_grad() runs between "
                                  "backward() and optimizer.step(), so the step never moves anything; call it "
                                  "before the forward or after the step", False))
    elif saw is not None and not bool(torch.isfinite(saw).all()):
        rows.append(("gradients", f"optimizer.step() saw gradients that are not finite "
                                  f"({int(torch.isnan(saw).sum())} NaN and {int(torch.isinf(saw).sum())} infinite of "
                                  f"{saw.numel()}), so whether they accumulate or are normalised cannot be read: "
                                  "find the first non-finite value in the forward", False))
    elif steps:
        _restore(s, saved)  # the same state again; the first step's gradients stay where it left them
        second = Watch(model, s.optimizer, scaler)
        _run(s, train_step, second)
        a, b = _flat(first.raw, params), _flat(second.raw, params)
        change = float((b - a).norm() / a.norm().clamp_min(1e-30))
        ratio = float(b.norm() / a.norm().clamp_min(1e-30))
        rows.append(("zero_grad", f"two identical steps: relative |Δ grad| {change:.2e}" +
                     ("" if change <= REPEAT_TOL else f"; the second saw {ratio:.2f}x the first: gradients "
                      "accumulate across steps (optimizer.zero_grad() missing)"), change <= REPEAT_TOL))

        _restore(s, saved)
        full = _full_gradient(s, params)
        ratio = float(a.norm() / full.norm().clamp_min(1e-30))
        cosine = float((a @ full) / (a.norm() * full.norm()).clamp_min(1e-30))
        lo, hi = NORM_RATIO_BAND
        ok = lo <= ratio <= hi
        fixes["normalisation"] = ("divide each microbatch's loss by the number of microbatches before backward()"
                                  if ratio > hi else "the loss is divided once too often (by the number of "
                                  "microbatches twice, or a sum divided again): divide it once")
        rows.append(("normalisation", f"|step gradient| / |full-batch gradient| {ratio:.3f} (cosine {cosine:.3f})",
                     ok))

    evaluate = s.extras.get("evaluate")
    if evaluate is not None:
        with mode(model, True), torch.no_grad():
            evaluate(model)
            left = [name or type(model).__name__ for name, m in model.named_modules() if not m.training]
        rows.append(("evaluate", "leaves the model training" if not left else
                     f"leaves {left[0]} in eval mode: call model.train() after evaluating", not left))

    bad = [r for r in rows if not r[2]]
    verdict = f"{bad[0][0]}: {bad[0][1]}" if bad else "; ".join(f"{check} {value}" for check, value, _ in rows)
    return Link("LOOP", "FAIL" if bad else "ok", verdict,
                [[check, f"{value} {'ok' if ok else 'X'}"] for check, value, ok in rows],
                advice=fixes.get(bad[0][0], "") if bad else "")


#: LOOP's advice for each check that fails, where the check's own words do not already say what to do.
FIXES = {
    "optimizer.step": "call optimizer.step() once per train_step, after backward() (and after any clipping)",
    "clipping": "clip between backward() and optimizer.step(); with a GradScaler, call scaler.unscale_(optimizer) "
                "first",
    "scheduler": "call scheduler.step() after optimizer.step(), so the first step uses the schedule's first lr",
    "zero_grad": "call optimizer.zero_grad() once per step, before the forward or after optimizer.step(), never "
                 "between backward() and the step",
    "gradients": "find the first NaN or inf in the forward or the loss (GRADIENTS names the parameter nearest it)",
    "evaluate": "end evaluate() with model.train(), or save model.training and restore it",
}
