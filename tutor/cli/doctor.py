"""``tutor doctor``: what this machine gives the tutor, measured now — the command to run first.

It says where the tutor runs from and where progress goes (the resolution
``tutor run`` uses, :func:`tutor.cli.common.store_and_learner`), the Python,
and what the check worker says in its hello: torch, CUDA, and each layer of
the sandbox as the worker found it (:meth:`tutor.sandbox.confine.Status.layers`).
Then it runs one check of each kind through the session every command uses:
a snippet exercise and an engine exercise (each must run and its fault show,
as ``tutor check`` counts it), and a fix (the clean subject file submitted as
a repair must be graded fixed, as ``tutor fix`` grades it). Nothing is
recorded; the progress folder is made if it is missing, as a first saved
attempt would make it.

Exit codes: 0 a learner's runs work and code under check runs confined, as
grading needs; 1 a learner's runs do not work here (a check did not pass,
or progress cannot be written); 2 usage (an unknown option, ``--device
cuda`` without CUDA, an unsafe learner name); 3 the check worker could not
start at all; 5 (:data:`tutor.cli.replies.EXIT_UNCONFINED`) a learner's runs
work, but grading would refuse here (``tutor grade``, ``tutor gradescope``
and ``tutor fix --learner`` refuse to run code unconfined).
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

from tutor import __version__
from tutor.cli.author import fault_shows
from tutor.cli.common import catalog, exercise, make_runner, store_and_learner
from tutor.cli.replies import EXIT_CHECK, EXIT_MISMATCH, EXIT_UNCONFINED, DoctorReply, Events, UsageError
from tutor.model.attempts import ProgressError

#: The exercises the doctor runs: a snippet's check, an engine's check, and the fix of a snippet's fault.
SNIPPET, ENGINE, FIX = "broadcast-loss", "head-split", "broadcast-loss"

#: The package folder this tutor is imported from.
PACKAGE = Path(__file__).resolve().parents[1]


def doctor(args, events: Events) -> DoctorReply:
    """``tutor doctor``: the installation, the progress folder, the worker's hello, the sandbox's layers,
    and one check of each kind; the exit code says what works (module docstring)."""
    # deferred: the runner and the session load only for the commands that run checks
    from tutor.app.session import Session
    from tutor.sandbox.runner import DeviceError, WorkerError, unconfined_sentence
    data = {"status": "could_not_run", "version": __version__, "installed": installation(),
            "progress": progress_folder(args, events), "python": {"version": platform.python_version(),
                                                                   "executable": sys.executable},
            "worker": None, "confinement": None, "layers": [], "checks": []}
    cat = catalog()
    session = Session(cat, make_runner(cat, args.device, args.timeout_scale))
    try:
        hello = session.warm_up()
        data["worker"] = {"torch": hello["torch"], "cuda": hello["cuda"], "device": session.runner.device,
                          "cores": hello["cores"]}
        status = session.runner.confinement
        data["confinement"] = status.to_wire()
        data["layers"] = list(status.layers())
        data["checks"] = [check_row("snippet", *_checked(session, exercise(cat, SNIPPET))),
                          check_row("engine", *_checked(session, exercise(cat, ENGINE))),
                          fix_row(_fixed(session, exercise(cat, FIX)))]
    except DeviceError as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:
        data["error"] = f"the check worker could not start: {exc}"
        return DoctorReply(data, EXIT_CHECK)
    finally:
        session.close()
    broken = [f"{row['kind']} {row['id']}: {row['reason']}" for row in data["checks"] if not row["ok"]]
    if not data["progress"]["writable"]:
        broken.insert(0, data["progress"]["error"])
    if broken:
        data.update(status="not_working", error="a learner's runs do not work here: " + "; ".join(broken))
        return DoctorReply(data, EXIT_MISMATCH)
    if not status.confined:
        data.update(status="grading_would_refuse",
                    error=f"a learner's runs work here, but grading would refuse: {unconfined_sentence(status.why)}")
        return DoctorReply(data, EXIT_UNCONFINED)
    data["status"] = "ok"
    return DoctorReply(data, 0)


def installation() -> dict:
    """Where the tutor runs from: its package ``folder`` and ``mode``: ``editable`` (an editable install of
    the ``checkout`` around it), ``installed`` (a regular install: a wheel, pipx, ``pip install PATH``) or
    ``source`` (a checkout or folder on the path that no install names)."""
    dists = list(importlib.metadata.distributions(name="tutor"))
    checkout = PACKAGE.parent if (PACKAGE.parent / "pyproject.toml").is_file() else None
    if checkout is not None:
        mode = "editable" if any(_editable_checkout(d) == checkout for d in dists) else "source"
    elif any(Path(d.locate_file("tutor")).resolve() == PACKAGE for d in dists):
        mode = "installed"
    else:
        mode = "source"
    return {"folder": str(PACKAGE), "mode": mode, "checkout": str(checkout) if checkout else None}


def _editable_checkout(dist) -> Path | None:
    """The folder an editable install of ``dist`` points at (its ``direct_url.json``), or None."""
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return None
    url = urlparse(direct.get("url", ""))
    editable = url.scheme == "file" and direct.get("dir_info", {}).get("editable")
    return Path(unquote(url.path)).resolve() if editable else None


def progress_folder(args, events: Events) -> dict:
    """Where a saved attempt goes and for which learner, and whether the folder can be written.

    Raises:
        UsageError: the learner name is unsafe.
    """
    store, learner = store_and_learner(args, events.notice)
    try:
        store.ensure_writable()
    except ProgressError as exc:
        return {"folder": str(store.folder), "learner": learner, "writable": False, "error": str(exc)}
    return {"folder": str(store.folder), "learner": learner, "writable": True, "error": None}


def _checked(session, ex):
    """Run ``ex``'s check on both sides, as ``tutor check`` does."""
    return ex, session.check(ex)


def _fixed(session, ex):
    """Submit the clean subject file of ``ex`` as a repair of its fault, as ``tutor fix --file`` does."""
    task = session.edit_task(ex, "fix")
    return session.start_edit(task, task.clean, record=False, instruments=False).execute()


def check_row(kind: str, ex, result) -> dict:
    """One check's row: it passes when it ran and its fault showed, else the one sentence why not."""
    ok = fault_shows(ex, result)
    reason = None if ok else result.error or "the fault changed nothing: clean and faulted observed the same"
    return {"kind": kind, "id": ex.id, "ok": ok, "status": result.status, "reason": reason,
            "duration_s": result.duration_s}


def fix_row(outcome) -> dict:
    """The fix's row: it passes when the clean file was graded fixed, else the verdict's sentence."""
    verdict = outcome.verdict
    return {"kind": "fix", "id": outcome.task.exercise.id, "ok": verdict.fixed is True, "status": verdict.status,
            "reason": None if verdict.fixed else verdict.sentence, "duration_s": outcome.result.duration_s}
