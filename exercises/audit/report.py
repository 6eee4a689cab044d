"""The audit's report: one verdict per link, the first failure, and its text form.

Seed 004, "Using AI on a generated language model": one line per link, with
the evidence that decided it. This module imports only the standard library,
so ``tutor audit`` can format a report it received as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from exercises.audit.constants import EXIT_CRASHED, EXIT_FAILED, EXIT_OK
from exercises.audit.reads import sentence

#: A link's status and the mark the text report prints for it.
#: "warn": the link's contract holds, but the model departs from a common convention (the evidence
#: says which and by how much); it does not fail the audit.
MARKS = {"ok": "ok  ", "warn": "warn", "FAIL": "FAIL", "skip": "skip"}


@dataclass
class Link:
    """One link's verdict.

    Attributes:
        name: the link, e.g. "CAUSALITY".
        status: "ok", "warn" (the contract holds; the model departs from a convention, named in the
            verdict: not a failure), "FAIL" or "skip" (the link could not apply, with the reason as verdict).
        verdict: one line saying what was measured and what it means.
        evidence: rows of [quantity, value], both short text.
        warnings: the conventions the model departs from while the contract holds (weight decay on
            LayerNorm gains, a stale tie flag), printed even without evidence; a link that carries one is
            "warn", never "ok" (``settle``).
        advice: for a failure, what to change, read from what was measured (where the fault sits, what
            in a model does that), printed under the verdict as "fix:"; empty otherwise.
        seconds: the link's wall time, seconds (set by the pipeline).
    """

    name: str
    status: str
    verdict: str
    evidence: list[list[str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    advice: str = ""

    def settle(self) -> "Link":
        """The link with its status agreeing with its lines: "ok" with a warning is "warn"."""
        if self.status == "ok" and self.warnings:
            self.status = "warn"
        return self

    @property
    def ok(self) -> bool:
        """Whether the link's contract holds ("ok", or "warn": a convention departed from)."""
        return self.status in ("ok", "warn")


@dataclass
class AuditReport:
    """Every link in order, the first failure, and what the audit ran on.

    Attributes:
        links: one Link per link run, in pipeline order.
        status: "ok" (every link holds), "failed" (a link failed) or
            "crashed" (no links: the factory raised or returned no model,
            or the first forward raised).
        error: the crash, one line, when status is "crashed".
        setup: what was audited: V, T, B, device, forward convention, optimizer.
    """

    links: list[Link] = field(default_factory=list)
    status: str = "ok"
    error: str = ""
    setup: dict = field(default_factory=dict)

    @classmethod
    def crashed(cls, error: str, setup: dict | None = None) -> "AuditReport":
        """A report with no links: the audit could not start on this model."""
        return cls(status="crashed", error=error, setup=dict(setup or {}))

    @property
    def first_failure(self) -> str | None:
        """The name of the first link whose status is "FAIL", or None."""
        for link in self.links:
            if link.status == "FAIL":
                return link.name
        return None

    @property
    def warned(self) -> list[str]:
        """The names of the links whose status is "warn", in order."""
        return [link.name for link in self.links if link.status == "warn"]

    @property
    def exit_code(self) -> int:
        """0 every link holds, 1 a link failed, 3 crashed (see ``constants``)."""
        if self.status == "crashed":
            return EXIT_CRASHED
        return EXIT_OK if self.first_failure is None else EXIT_FAILED

    def to_dict(self) -> dict:
        """JSON-able form: status, error, setup, first_failure and the links as dicts."""
        return {"status": self.status, "error": self.error, "setup": self.setup,
                "first_failure": self.first_failure, "warned": self.warned,
                "links": [{"name": l.name, "status": l.status, "verdict": l.verdict, "evidence": l.evidence,
                           "warnings": l.warnings, "advice": l.advice, "seconds": l.seconds} for l in self.links]}

    def text(self, evidence: bool = True) -> str:
        """The report as lines of text, one verdict per link, evidence indented."""
        return format_report(self.to_dict(), evidence=evidence)


def format_report(data: dict, evidence: bool = True) -> str:
    """Render ``AuditReport.to_dict()`` output as text (used by ``tutor audit``)."""
    s = data.get("setup", {})
    lines = [f"AUDIT  V={s.get('V', '?')}  batch {s.get('B', '?')}x{s.get('T', '?')}  "
             f"device {s.get('device', '?')}" + (f" {s['dtype']}" if s.get("dtype") else "")
             + f"  optimizer: {s.get('optimizer', '?')}"
             + (f"  tokenizer: {s['tokenizer']}" if s.get("tokenizer") else "")
             + (f"  factory returned {s['factory']}" if s.get("factory") else "")]
    if s.get("convention"):
        lines.append(f"forward: {s['convention']}")
    if s.get("expect"):
        lines.append(f"expected: {s['expect']}")
    if s.get("refused_reads"):
        lines.append(f"refused: {sentence(s['refused_reads'])}")
    if data.get("status") == "crashed":
        lines.append(f"could not audit: {data.get('error', '')}")
        return "\n".join(lines)
    for i, link in enumerate(data["links"], start=1):
        took = f"  ({link['seconds']:.2f} s)" if evidence and "seconds" in link else ""
        lines.append(f"{i:>2} {link['name']:<13}{MARKS[link['status']]}  {link['verdict']}{took}")
        if link.get("advice"):
            lines.append(f"{'':>19}fix: {link['advice']}")
        for warning in link.get("warnings", []):
            lines.append(f"{'':>19}warning: {warning}")
        if evidence:
            for row in link["evidence"]:
                lines.append(f"{'':>19}{row[0]}: {row[1]}")
    first = data.get("first_failure")
    warned = data.get("warned")
    holds = "every link holds" + (f" (warnings: {', '.join(warned)})" if warned else "")
    lines.append(f"first failure: {first}" if first else f"first failure: none — {holds}")
    return "\n".join(lines)
