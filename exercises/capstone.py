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

from exercises.context import Context
from exercises.mysteries import hidden_fault
from exercises.outcome import Measurement, note, table


def load_faults(root: Path | None = None) -> dict:
    """Every ``[[fault]]`` table of ``exercises/*.toml`` under ``root``, by id."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    from exercises.faults import parse_fault

    root = root or Path(__file__).resolve().parent.parent
    faults = {}
    for path in sorted((root / "exercises").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for n, entry in enumerate(data.get("fault", []), start=1):
            fault = parse_fault(entry, f"{path.name}: fault #{n}")
            faults[fault.id] = fault
    return faults


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
    from exercises.faults import make_private_copy

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
    from exercises.audit import SEED_LINKS
    from exercises.audit import audit as run_audit

    fault_id = hidden_fault(ctx.seed)
    workdir = Path(tempfile.mkdtemp(prefix="mystery-", dir="."))
    try:
        mystery = build_mystery(fault_id, workdir)
        report = run_audit(mystery["factory"], device=ctx.device, seed=ctx.seed, get_batch=mystery["get_batch"],
                           progress=ctx.progress, links=SEED_LINKS)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if report.status == "crashed":
        raise RuntimeError(report.error)
    first = report.first_failure
    rows = [[i, link.name, link.status, link.verdict] for i, link in enumerate(report.links, start=1)]
    evidence = [
        table("Audit of the mystery GPT (2 layers, C=64, V=37, batch 4x32)", ["#", "link", "status", "verdict"], rows),
    ]
    for link in report.links:
        if link.status == "FAIL":
            evidence.append(table(f"{link.name} evidence", ["quantity", "value"], link.evidence or [["-", "-"]]))
            break
    evidence.append(note(f"First failure: {first or 'none'}. The hidden fault was "
                         + (f"{mystery['fault'].id}: {mystery['fault'].summary}" if mystery["fault"] else
                            "none: this was the clean engine.")))
    later = [link.name for link in report.links if link.status == "FAIL"][1:]
    if later:
        evidence.append(note("Later links that also fail (consequences, or separate faults): " + ", ".join(later)))
    return Measurement(observed=first.lower() if first else "none", evidence=evidence)
