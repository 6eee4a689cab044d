"""The audit: every link, in order, on the model a factory builds.

``PIPELINE`` is the chain as data: a list of ``(name, link)`` pairs run in
order, each link a function ``link(subject) -> Link``. A new link is one more
pair at the end. A link that raises fails with the exception's first line;
the links after it still run.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from exercises.audit.constants import EXPECTATIONS, LINKS, OVERFIT_STEPS
from exercises.audit.links import architecture, data, inference, learning, loop, structure
from exercises.audit.report import AuditReport, Link
from exercises.audit.subject import Crash, Subject, prepare
from exercises.outcome import first_line

PIPELINE: list[tuple[str, Callable[[Subject], Link]]] = [
    ("TOKENIZER", data.tokenizer),
    ("ALIGNMENT", data.alignment),
    ("CAUSALITY", structure.causality),
    ("SHAPE", structure.shape),
    ("INIT", learning.init),
    ("REGISTRATION", structure.registration),
    ("TIE", structure.tie),
    ("EVAL", inference.eval_mode),
    ("ATTENTION", architecture.attention),
    ("RESIDUAL", architecture.residual),
    ("CACHE", inference.cache),
    ("GENERATE", inference.generate),
    ("GRADIENTS", learning.gradients),
    ("OWNERSHIP", learning.ownership),
    ("UPDATE", learning.update),
    ("CAPABILITY", learning.capability),
    ("LOOP", loop.loop),
]
#: How much of the progress bar each link fills, relative to 1 for the others
#: (CAPABILITY's weight is applied when it has a step budget).
WEIGHTS = {"CAPABILITY": 20, "CACHE": 2, "GENERATE": 2, "LOOP": 2}


def run_link(name: str, link: Callable[[Subject], Link], s: Subject) -> Link:
    """One link's verdict, with its wall time (``Link.seconds``); an exception inside it is that link's
    failure, in one line."""
    started = time.perf_counter()
    try:
        result = link(s)
    except Exception as exc:
        result = Link(name, "FAIL", f"raised {first_line(exc)[:200]}",
                      advice=f"the model raised inside {name}'s measurement, not at the first forward: "
                             f"run the same call on your model ({name} in the README's table says which) and fix "
                             f"what the exception names")
    result.seconds = round(time.perf_counter() - started, 3)
    return result.settle()


def audit(factory: Callable[[], Any], vocab_size: int | None = None, block_size: int | None = None,
          device: str = "cpu", seed: int = 0, get_batch: Callable | None = None,
          overfit_steps: int = OVERFIT_STEPS, progress: Callable[[float, str], None] | None = None,
          links: Sequence[str] | None = None, expect: Sequence[str] = ()) -> AuditReport:
    """Run the links of ``PIPELINE``, in order, on the model ``factory()`` builds.

    Args:
        factory: no arguments; returns an nn.Module, (nn.Module, optimizer),
            or a dict with "model" and any of "optimizer", "tokenizer",
            "pad_id", "train_step", "evaluate", "scheduler", "scaler", "forward",
            "label_smoothing" (``adapter.FACTORY_KEYS``).
        vocab_size: the V the model claims (default: the logits' last axis).
        block_size: the longest sequence it accepts (default: ``config.block_size``
            or ``block_size`` on the model, else 64); the audit uses T = min(block_size, 32).
        device: where the model runs.
        seed: seeds the model build, the batch and the intervention.
        get_batch: the batching function under audit (default ``engine.data.get_batch``).
        overfit_steps: CAPABILITY's budget (0 skips it).
        progress: called as ``progress(fraction, what)`` as each step starts,
            ``what`` naming it ("the factory call build()", "CAUSALITY", ...).
        links: the names of the links to run (default: all of ``LINKS``); they
            run in pipeline order whatever order they are given in.
        expect: conventions the model is held to (``EXPECTATIONS``: "sdpa"),
            whose departures then fail their link instead of warning.

    Returns:
        An AuditReport. It never raises for the model's faults: a factory that
        raises or returns no model, or a first forward that raises or breaks
        the (B, T) -> (B, T, V) contract, gives status "crashed"; a link that
        raises fails with the exception in its verdict.

    Raises:
        ValueError: ``links`` names a link that does not exist, or ``expect`` a convention that does not.
    """
    odd = sorted(set(expect) - set(EXPECTATIONS))
    if odd:
        raise ValueError(f"unknown conventions {odd} to expect; the conventions are {', '.join(EXPECTATIONS)}")
    unknown = sorted(set(links or ()) - set(LINKS))
    if unknown:
        raise ValueError(f"unknown links {unknown}; the links are {', '.join(LINKS)}")
    chosen = [(name, link) for name, link in PIPELINE if links is None or name in links]
    reached = [0.0]

    def say(fraction: float, what: str) -> None:  # a progress bar never runs backwards
        reached[0] = max(reached[0], fraction)
        if progress is not None:
            progress(reached[0], what)

    try:
        s = prepare(factory, vocab_size, block_size, device, seed, get_batch, overfit_steps, say)
    except Crash as crash:
        return AuditReport.crashed(str(crash))
    s.expect = tuple(expect)
    if s.expect:
        s.setup["expect"] = "; ".join(EXPECTATIONS[e] for e in s.expect)
    report = AuditReport(setup=s.setup)
    weights = [WEIGHTS.get(name, 1) if name != "CAPABILITY" or overfit_steps > 0 else 1 for name, _ in chosen]
    done, total = 0.0, float(sum(weights))
    for (name, link), weight in zip(chosen, weights):
        s.span = (0.05 + 0.95 * done / total, 0.05 + 0.95 * (done + weight) / total)
        say(s.span[0], name)
        report.links.append(run_link(name, link, s))
        done += weight
    _point_causality_at_attention(report.links)
    report.status = "ok" if report.first_failure is None else "failed"
    say(1.0, "done")
    return report


def _point_causality_at_attention(links: list[Link]) -> None:
    """A CAUSALITY failure's advice, completed by what ATTENTION (which runs later) found: the module whose
    mask lets the future in, or that every attention module it read is causal, so the leak is elsewhere."""
    named = {link.name: (i, link) for i, link in enumerate(links, start=1)}
    if "CAUSALITY" not in named or "ATTENTION" not in named or named["CAUSALITY"][1].status != "FAIL":
        return
    causality, (i, attention) = named["CAUSALITY"][1], named["ATTENTION"]
    if attention.status == "FAIL":
        found = attention.verdict if len(attention.verdict) <= 240 else attention.verdict[:239] + "…"
        causality.advice += f". ATTENTION (link {i}) found the module: {found}" + \
            (f"; its fix: {attention.advice}" if attention.advice else "")
    elif attention.status in ("ok", "warn"):
        causality.advice += (f". ATTENTION (link {i}) finds every attention module it read causal, so the leak is "
                             "outside them: an op over the sequence, a mask built once and shared wrongly, or an "
                             "attention the audit did not read")
