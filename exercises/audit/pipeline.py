"""The audit: every link, in order, on the model a factory builds.

``PIPELINE`` is the chain as data: a list of ``(name, link)`` pairs run in
order, each link a function ``link(subject) -> Link``. A new link is one more
pair at the end. A link that raises fails with the exception's first line;
the links after it still run.
"""

from __future__ import annotations

from typing import Any, Callable

from exercises.audit.constants import OVERFIT_STEPS
from exercises.audit.links import data, learning, structure
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
    ("GRADIENTS", learning.gradients),
    ("OWNERSHIP", learning.ownership),
    ("UPDATE", learning.update),
    ("CAPABILITY", learning.capability),
]


def run_link(name: str, link: Callable[[Subject], Link], s: Subject) -> Link:
    """One link's verdict; an exception inside it is that link's failure, in one line."""
    try:
        return link(s)
    except Exception as exc:
        return Link(name, "FAIL", f"raised {first_line(exc)[:200]}")


def audit(factory: Callable[[], Any], vocab_size: int | None = None, block_size: int | None = None,
          device: str = "cpu", seed: int = 0, get_batch: Callable | None = None,
          overfit_steps: int = OVERFIT_STEPS, progress: Callable[[float, str], None] | None = None) -> AuditReport:
    """Run every link of ``PIPELINE``, in order, on the model ``factory()`` builds.

    Args:
        factory: no arguments; returns an nn.Module or (nn.Module, optimizer).
        vocab_size: the V the model claims (default: the logits' last axis).
        block_size: the longest sequence it accepts (default: ``config.block_size``
            or ``block_size`` on the model, else 64); the audit uses T = min(block_size, 32).
        device: where the model runs.
        seed: seeds the model build, the batch and the intervention.
        get_batch: the batching function under audit (default ``engine.data.get_batch``).
        overfit_steps: CAPABILITY's budget (0 skips it).
        progress: called as ``progress(fraction, what)`` as each step starts,
            ``what`` naming it ("the factory call build()", "CAUSALITY", ...).

    Returns:
        An AuditReport. It never raises for the model's faults: a factory that
        raises or returns no model, or a first forward that raises, gives
        status "crashed"; a link that raises fails with the exception in its
        verdict.
    """
    reached = [0.0]

    def say(fraction: float, what: str) -> None:  # a progress bar never runs backwards
        reached[0] = max(reached[0], fraction)
        if progress is not None:
            progress(reached[0], what)

    try:
        s = prepare(factory, vocab_size, block_size, device, seed, get_batch, overfit_steps, say)
    except Crash as crash:
        return AuditReport.crashed(str(crash))
    report = AuditReport(setup=s.setup)
    for i, (name, link) in enumerate(PIPELINE):
        say(0.05 + 0.25 * i / len(PIPELINE), name)  # the ledger's CAPABILITY steps fill 0.3 to 1
        report.links.append(run_link(name, link, s))
    report.status = "ok" if report.first_failure is None else "failed"
    say(1.0, "done")
    return report
