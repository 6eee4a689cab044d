"""The capstone check: audit a mystery GPT and name the first link that fails.

Seed 004, the final exercise ("The whole pipeline, on an unfamiliar model")
and its "prove the chain" list. The mystery is the engine GPT, built through
``snippets/mystery.py``, with one hidden fault — or none — drawn from
``HIDDEN`` by the run's seed: the same seed always gives the same mystery.
The fault is one of the catalog's own ``[[fault]]`` tables, applied to a
private copy of the source and imported under a package name of its own, so
the audit's instruments (the tutor's) and the model under audit (the copy)
never mix.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from exercises.context import Context
from exercises.faults import load_faults, make_private_copy
from exercises.outcome import Measurement, note, table


def _import_file(name: str, path: Path, package_dir: Path | None = None):
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(package_dir)] if package_dir else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def build_mystery(fault_id: str, workdir: Path, root: Path | None = None) -> dict:
    """Apply ``fault_id`` to a private copy in ``workdir`` and import it under fresh names.

    Args:
        fault_id: one of ``HIDDEN`` (or any catalog fault id); "none" for clean.
        workdir: an empty folder that outlives the returned factory.
        root: the source root to copy (default: this package's root).

    Returns:
        {"factory": () -> (model, optimizer), "get_batch": the copy's
        engine.data.get_batch, "fault": the Fault or None, "package": the
        alias the copied engine was imported as, "model" and "config": the
        copy's engine.model and engine.config modules}.
    """
    root = root or Path(__file__).resolve().parent.parent
    fault = None if fault_id == "none" else load_faults(root)[fault_id]
    make_private_copy(Path(workdir), fault, root)
    alias = f"_mystery_engine_{abs(hash((str(workdir), fault_id))) % 10**10}"
    engine_dir = Path(workdir) / "engine"
    _import_file(alias, engine_dir / "__init__.py", engine_dir)
    model_mod = importlib.import_module(f"{alias}.model")
    config_mod = importlib.import_module(f"{alias}.config")
    data_mod = importlib.import_module(f"{alias}.data")
    snippets = Path(workdir) / "exercises" / "snippets"
    finetune = _import_file(f"{alias}_finetune", snippets / "finetune.py")
    mystery = _import_file(f"{alias}_mystery", snippets / "mystery.py")
    return {"factory": lambda: mystery.build(model_mod, config_mod, finetune), "get_batch": data_mod.get_batch,
            "fault": fault, "package": alias, "model": model_mod, "config": config_mod}


def audit_mystery(ctx: Context, fault_id: str, subject: str) -> tuple[Any, Any, list]:
    """Build the mystery GPT carrying ``fault_id`` ("none": the clean engine) from this tree and run the
    seed's audit links on it; the body of the capstone's check and of the hunt's (``edit_mode.hunt``).

    Args:
        ctx: the check's context (device, seed, progress).
        fault_id: the hidden fault to apply, or "none".
        subject: how the evidence names what was audited ("the mystery GPT", "this engine").

    Returns:
        (the audit report, the Fault applied or None, the evidence: one row per link, then the
        first failing link's own evidence).

    Raises:
        RuntimeError: the audit itself crashed (the model could not be built or run).
    """
    from exercises.audit import SEED_LINKS, audit as run_audit  # the audit imports torch: in the check only

    workdir = Path(tempfile.mkdtemp(prefix="mystery-", dir="."))
    try:
        mystery = build_mystery(fault_id, workdir)
        report = run_audit(mystery["factory"], device=ctx.device, seed=ctx.seed, get_batch=mystery["get_batch"],
                           progress=ctx.progress, links=SEED_LINKS)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if report.status == "crashed":
        raise RuntimeError(report.error)
    rows = [[i, link.name, link.status, link.verdict] for i, link in enumerate(report.links, start=1)]
    evidence = [table(f"Audit of {subject} (2 layers, C=64, V=37, batch 4x32)", ["#", "link", "status", "verdict"],
                      rows)]
    evidence += first_failure_evidence(report)
    return report, mystery["fault"], evidence


def first_failure_evidence(report) -> list:
    """The first failing link's own evidence, as one table (none when every link holds)."""
    for link in report.links:
        if link.status == "FAIL":
            return [table(f"{link.name} evidence", ["quantity", "value"], link.evidence or [["-", "-"]])]
    return []


def audit(ctx: Context) -> Measurement:
    """Run the ten seed links of the audit (``exercises.audit``) on the mystery GPT.

    The exercise is seed 004's chain, and its choices are those ten links:
    the links ``tutor audit`` adds after them (EVAL, CACHE, ...) are not run
    here (the clean mystery passes them; ``tests/test_audit.py``).

    The mystery: a 2-layer, C = 64 engine GPT (block 32, V = 37) with a fresh
    untied head and its AdamW, carrying the hidden fault ``hidden_fault(ctx.seed)``.
    Observed: the first failing link in lower case (``tokenizer`` …
    ``capability``), or ``none``. Seed 004, the final exercise.
    """
    # here, not at the top: a side that carries a learner's file (a hunt) has no mysteries.py in its tree
    from exercises.mysteries import hidden_fault

    report, fault, evidence = audit_mystery(ctx, hidden_fault(ctx.seed), "the mystery GPT")
    first = report.first_failure
    evidence.append(note(f"First failure: {first or 'none'}. The hidden fault was "
                         + (f"{fault.id}: {fault.summary}" if fault else "none: this was the clean engine.")))
    later = [link.name for link in report.links if link.status == "FAIL"][1:]
    if later:
        evidence.append(note("Later links that also fail (consequences, or separate faults): " + ", ".join(later)))
    return Measurement(observed=first.lower() if first else "none", evidence=evidence)
