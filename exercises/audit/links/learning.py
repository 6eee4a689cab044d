"""The learning links: INIT, GRADIENTS, OWNERSHIP, UPDATE and CAPABILITY (seed 004,
"Using AI on a generated language model", links 5 and 7-10).

They read one run of ``engine.instruments.learning_ledger`` on the real
batch, made by the first of them that runs (``ledger``): its OBJECTIVE rows
decide INIT, GRADIENT rows GRADIENTS, and so on. The ledger trains the model
(UPDATE takes a step, CAPABILITY many), so these links come after the ones
that only read it.
"""

from __future__ import annotations

from exercises.audit.adapter import LedgerView
from exercises.audit.constants import OVERFIT_BELOW
from exercises.audit.report import Link
from exercises.audit.subject import Subject
from exercises.outcome import first_line

#: The ledger's link (its rows) behind each audit link.
LEDGER_ROWS = {"INIT": "OBJECTIVE", "GRADIENTS": "GRADIENT", "OWNERSHIP": "OWNERSHIP", "UPDATE": "UPDATE",
               "CAPABILITY": "CAPABILITY"}


def ledger(s: Subject):
    """The learning ledger on (xs, ys) with the subject's optimizer, run once per audit.

    Raises:
        whatever the ledger raised (again, for every link that asks).
    """
    from engine.instruments.learning_ledger import learning_ledger

    def on_step(step: int, total: int) -> None:
        if step % 10 == 0:
            s.say(0.3 + 0.7 * step / total, f"CAPABILITY: step {step}/{total}")

    def run():
        s.say(0.3, "the learning ledger (INIT, GRADIENTS, OWNERSHIP, UPDATE, CAPABILITY)")
        return learning_ledger(LedgerView(s.forward), s.optimizer, s.xs, s.ys, vocab_size=s.V,
                               overfit_steps=s.overfit_steps, overfit_below=OVERFIT_BELOW, on_step=on_step)

    return s.remember("ledger", run)


def from_ledger(s: Subject, link: str) -> Link:
    """The verdict of ``link`` from the ledger's rows for it.

    FAIL names the first row that does not hold; "skip" when the ledger
    stopped before these rows. If the ledger raised, INIT fails with the
    exception and the later links are skipped ("not run").
    """
    try:
        result = ledger(s)
    except Exception as exc:
        if link == "INIT":
            return Link(link, "FAIL", f"the learning ledger raised {first_line(exc)[:200]}")
        return Link(link, "skip", "not run")
    # The ledger sees the model through LedgerView, whose parameter names start with "inner.".
    rows = [r._replace(value=r.value.replace("inner.", "")) for r in result.rows if r.link == LEDGER_ROWS[link]]
    if not rows:
        return Link(link, "skip", "not run: the learning ledger stopped earlier")
    bad = [r for r in rows if not r.ok]
    verdict = (f"{bad[0].check}: {bad[0].value}" if bad else "; ".join(f"{r.check} {r.value}" for r in rows))
    return Link(link, "FAIL" if bad else "ok", verdict,
                [[f"{r.link}/{r.check}", f"{r.value} {'ok' if r.ok else 'X'}"] for r in rows])


def init(s: Subject) -> Link:
    """INIT: initial loss / ln V within [1/3, 3]; the model's reported loss equals cross entropy by hand."""
    return from_ledger(s, "INIT")


def gradients(s: Subject) -> Link:
    """GRADIENTS: after one backward every trainable parameter holds a finite, nonzero gradient."""
    return from_ledger(s, "GRADIENTS")


def ownership(s: Subject) -> Link:
    """OWNERSHIP: the optimizer holds exactly the model's trainable parameters."""
    return from_ledger(s, "OWNERSHIP")


def update(s: Subject) -> Link:
    """UPDATE: one optimizer step moves every trainable parameter."""
    return from_ledger(s, "UPDATE")


def capability(s: Subject) -> Link:
    """CAPABILITY: the optimizer drives the batch's loss below 0.1 nats within the step budget.

    "skip" when the budget is 0. The evidence carries the loss every 25 steps.
    """
    try:
        result = ledger(s)
    except Exception:
        return Link("CAPABILITY", "skip", "not run")
    if s.overfit_steps <= 0:
        return Link("CAPABILITY", "skip", "not run (no step budget)")
    link = from_ledger(s, "CAPABILITY")
    if result.curve:
        link.evidence.append(["loss every 25 steps",
                              " ".join(f"{v:.3f}" for v in result.curve[::25] + result.curve[-1:])])
    return link
