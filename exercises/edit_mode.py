"""Checks for edit mode: the engine's instruments, and the audit, on whatever engine the tree holds.

When a learner edits the engine (``tutor fix``, ``tutor break``, the
capstone's *Find and fix*), their file replaces the subject in a private
tree and the check runs there, as every check does (``tutor.sandbox.worker``). The
two checks here read the engine of that tree *as it is*, applying no fault
of their own:

* :func:`instruments` builds a small engine GPT and runs the audit's links
  that are the engine's own instruments — the shape ledger (SHAPE), the
  future-token intervention (CAUSALITY), cached against full logits
  (CACHE), the learning-ledger links (INIT, GRADIENTS, OWNERSHIP, UPDATE) —
  with ALIGNMENT, EVAL and the training step (LOOP). Seed 004,
  "Instruments", and the final exercise's "prove the chain".
* :func:`hunt` is the capstone's audit (``capstone.audit``) of the tree's
  engine with no hidden fault added: on the clean tree every seed link
  holds; on a tree carrying the mystery's fault it names the first link
  that fails; on a learner's repair it says whether every link holds again.
"""

from __future__ import annotations

from exercises.capstone import audit_mystery, first_failure_evidence
from exercises.context import Context
from exercises.outcome import Measurement, note, table

#: The audit links run as the engine's instruments, in pipeline order, with the instrument behind each.
INSTRUMENT_LINKS = {
    "ALIGNMENT": "targets are the inputs shifted by one (get_batch)",
    "CAUSALITY": "future-token intervention",
    "SHAPE": "shape ledger, head split round trip",
    "INIT": "learning ledger: initial loss against ln V, loss by hand",
    "GRADIENTS": "learning ledger: a finite, nonzero gradient for every parameter",
    "OWNERSHIP": "learning ledger: the optimizer holds every parameter",
    "UPDATE": "learning ledger: one step moves every parameter",
    "EVAL": "eval() reaches every module",
    "CACHE": "KV-cached logits equal the full forward",
    "LOOP": "train_step: zero_grad, clipping and step order",
}
#: The instruments' model: the engine's "small" preset (2 layers, 2 heads, C = 64, block 32, V = 37).
INSTRUMENT_PRESET = "small"


def _engine_factory(ctx: Context):
    """A factory for the audit: the tree's engine GPT, its AdamW and its train_step."""
    from engine.train import make_optimizer, train_step

    def factory():
        model = ctx.gpt(INSTRUMENT_PRESET)
        optimizer = make_optimizer(model, lr=3e-3, weight_decay=0.0)

        def step(model, optimizer, batch):
            x, y = batch
            return train_step(model, optimizer, x, y, max_norm=1.0)
        return {"model": model, "optimizer": optimizer, "train_step": step}
    factory.__name__ = "engine_gpt"
    return factory


def instruments(ctx: Context) -> Measurement:
    """Run the engine's instruments (:data:`INSTRUMENT_LINKS`) on a small GPT built from this tree's engine.

    Observed: the first link that fails, lower case (``causality``, ``shape``,
    ...), or ``none`` when every instrument holds; a model that cannot even
    be built or run forward observes ``crashed``. Evidence: one row per link
    ("holds", "fails" or "skip", with its verdict), then the first failing
    link's own evidence.
    """
    from engine.data import get_batch
    from exercises.audit import audit

    report = audit(_engine_factory(ctx), device=ctx.device, seed=ctx.seed, get_batch=get_batch,
                   overfit_steps=0, progress=ctx.progress, links=tuple(INSTRUMENT_LINKS))
    if report.status == "crashed":
        return Measurement(observed="crashed", evidence=[
            table("Instruments on this engine", ["instrument", "status", "verdict"],
                  [["(model)", "fails", report.error or "the model could not be built or run"]]),
            note("The engine GPT could not be built or run forward, so no instrument could read it.")])
    word = {"ok": "holds", "FAIL": "fails"}
    rows = [[link.name, word.get(link.status, link.status.lower()), f"{INSTRUMENT_LINKS.get(link.name, '')}: "
             f"{link.verdict}"] for link in report.links]
    evidence = [table("Instruments on this engine (2 layers, C = 64, V = 37)", ["instrument", "status", "verdict"],
                      rows)]
    evidence += first_failure_evidence(report)
    first = report.first_failure
    return Measurement(observed=first.lower() if first else "none", evidence=evidence)


def hunt(ctx: Context) -> Measurement:
    """The capstone's audit of this tree's engine as it is (no hidden fault added): which link fails first?

    Built like the capstone's mystery (``snippets/mystery.py``: 2 layers,
    C = 64, V = 37, block 32, a fresh untied head and its AdamW) through
    ``capstone.build_mystery("none", ...)`` from this tree, so the engine,
    the data code and the fine-tuning snippet under audit are the ones this
    tree holds. Observed: the first failing seed link in lower case, or
    ``none`` when every link holds. Seed 004, the final exercise.
    """
    report, _, evidence = audit_mystery(ctx, "none", "this engine")
    first = report.first_failure
    evidence.append(note(f"First failure: {first or 'none'}."))
    return Measurement(observed=first.lower() if first else "none", evidence=evidence)
