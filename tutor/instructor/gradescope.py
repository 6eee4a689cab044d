"""One Gradescope submission, graded the way Gradescope's autograder runs it: ``tutor gradescope``.

Gradescope builds an image from the instructor's ``setup.sh``, and for each
submission runs ``run_autograder`` in ``/autograder``, with

* ``/autograder/source/`` — the uploaded autograder (here: ``assignment.toml``);
* ``/autograder/submission/`` — what the learner uploaded;
* ``/autograder/submission_metadata.json`` — who submitted it and when;

and reads back ``/autograder/results/results.json``. (``--root``,
``--submission``, ``--assignment`` and ``--results`` move each of these,
for tests and for trying an autograder locally.)

A submission holds predictions — ``answers.toml`` (``head-split = "b"``,
one key per exercise, or an ``[answers]`` table), ``answers.csv``
(``exercise,answer`` columns) or ``answers.jsonl`` — and/or repairs:
``<exercise-id>.py`` or ``<exercise-id>.diff``, graded as ``tutor grade
--fixes`` grades them. The learner is the first submitter's e-mail (else
name) in the metadata; the submission time is its ``created_at``.

The result is one learner's result of :func:`tutor.instructor.results.learner_result`:
one test per exercise of the assignment. With ``observations =
"after_due_date"``, a test's output says what the check observed only once
the due time (the assignment's, else the metadata's) has passed. When the
submission cannot be graded at all, results.json still says why (score 0),
so the learner sees one sentence instead of an autograder failure.

Layers: imports neither torch nor Textual.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import os
import time
from pathlib import Path

from tutor.instructor import answer_rows, fixes, json_items, memo
from tutor.instructor import grade as grading
from tutor.instructor import results as class_results
from tutor.instructor.columns import normal
from tutor.instructor.fixes import ENDINGS, exercise_id, read_file
from tutor.model.attempts import PREDICT, ProgressError
from tutor.model.errors import UsageError
from tutor.store.names import learner_key, validate_learner

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ANSWER_FILES = ("answers.toml", "answers.csv", "answers.jsonl", "answers.json")


def metadata(root: Path) -> dict:
    """The submission's metadata (an empty dict when there is none or it does not read)."""
    try:
        data = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def submitter(meta: dict) -> str:
    users = meta.get("users") if isinstance(meta.get("users"), list) else []
    first = users[0] if users and isinstance(users[0], dict) else {}
    return str(first.get("email") or first.get("name") or "submission")


def read_submission(folder: Path, catalog, learner: str, submitted_at: str | None) -> list:
    """The submission's rows: predictions from the answers file, repairs from ID.py / ID.diff.

    Raises:
        UsageError: the folder is missing, holds nothing to grade, or its answers file does not read or is
            not a regular file of the submission's own (a symbolic link, a second hard link), or is larger
            than :data:`MAX_ANSWERS_BYTES`.
    """
    if not folder.is_dir():
        raise UsageError(f"there is no submission folder {folder}")
    pairs: list[tuple[str, str]] = []
    for path in (folder / name for name in ANSWER_FILES):
        if not os.path.lexists(path):
            continue
        # read as a repair is (fixes.read_file): a link to the instructor's key or a classmate's answers, a
        # second hard link, anything but a regular file of the submission's own is refused, never read
        raw, refused = read_file(path, folder, MAX_ANSWERS_BYTES,
                                 "a submission's answers are one line per exercise: upload only those")
        if refused is not None:
            raise UsageError(refused)
        pairs += _pairs(path, raw.decode("utf-8-sig", errors="replace"))
    checker = answer_rows.Checker(catalog)
    rows = []
    for n, (exercise, answer) in enumerate(pairs, 1):
        fields = {"learner": learner, "exercise": exercise, "answer": answer}
        if submitted_at:
            fields["submitted_at"] = submitted_at
        rows.append(checker(n, fields))
    repairs = [p for p in sorted(folder.iterdir()) if p.suffix.lower() in fixes.ENDINGS
               and (p.is_symlink() or p.is_file())]
    if repairs:
        staging = {p.name for p in repairs}
        for row in _repairs(folder, staging, catalog, learner):
            row.line = len(rows) + 1
            row.submitted_at = submitted_at or row.submitted_at
            rows.append(row)
    if not rows:
        raise UsageError(f"the submission holds nothing to grade: upload {' or '.join(ANSWER_FILES[:2])} with your "
                         "answers, or ID.py / ID.diff repairs")
    return rows


def _repairs(folder: Path, names: set, catalog, learner: str) -> list:
    """Fix rows for the repair files of a one-learner submission (as :func:`tutor.instructor.fixes.find` reads)."""
    rows = []
    for name in sorted(names):
        path = folder / name
        row = answer_rows.AnswerRow(line=0, learner=learner, exercise=path.stem, mode="fix")
        try:
            row.learner = validate_learner(learner)
            row.key = learner_key(row.learner)
        except ProgressError as exc:
            row.problem = str(exc)
        raw, refused = read_file(path, folder)
        if refused is not None:
            row.problem, row.refused, row.answer = refused, name, "refused"
            row.exercise = exercise_id(catalog, path.stem)
            rows.append(row)
            continue
        row.text = raw.decode("utf-8", "replace")
        row.answer = f"{ENDINGS[path.suffix.lower()]}:{hashlib.sha256(raw).hexdigest()[:16]}"
        row.note = ENDINGS[path.suffix.lower()]
        if row.problem is None:
            try:
                row.exercise = catalog.get(path.stem.lower()).id
            except KeyError as exc:
                row.problem = exc.args[0]
        rows.append(row)
    return rows


#: Largest answers file of a submission, in bytes: one line per exercise is a few KiB.
MAX_ANSWERS_BYTES = 4 * 2**20


def _pairs(path: Path, text: str) -> list[tuple[str, str]]:
    """(exercise, answer) of one answers file of a submission, ``text`` its contents (at most
    :data:`MAX_ANSWERS_BYTES`): TOML, CSV, or JSON lines or a JSON array, read an object at a time
    (:mod:`tutor.instructor.json_items`); ``path``'s suffix says which.

    Raises:
        UsageError: the text does not read as its format.
    """
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path.name} is not valid TOML ({str(exc).splitlines()[0]}); write one line per "
                             'exercise such as head-split = "b"') from None
        table = data.get("answers", data)
        return [(str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in table.items()
                if not isinstance(v, dict)]
    with io.StringIO(text, newline="") as fh:
        if path.suffix == ".csv":
            reader = csv.reader(fh)
            header = [normal(h) for h in next(reader, [])]
            if "exercise" not in header or "answer" not in header:
                raise UsageError(f"{path.name} needs the columns exercise and answer in its header")
            e, a = header.index("exercise"), header.index("answer")
            return [(cells[e], cells[a]) for cells in reader if len(cells) > max(e, a)]
        pairs = []
        for _, item in json_items.items(fh, path.name):
            if isinstance(item, json_items.Bad):
                raise UsageError(f"{path.name}: {item.problem}; write one object per line such as "
                                 '{"exercise": "head-split", "answer": "b"}')
            if isinstance(item, dict) and "exercise" in item and "answer" in item:
                answer = item["answer"]
                pairs.append((str(item["exercise"]), answer if isinstance(answer, str) else json.dumps(answer)))
        return pairs


def grade_submission(catalog, rows: list, plan, runner, now: dt.datetime | None = None,
                     hidden_seeds: int | None = None) -> dict:
    """Grade a submission's rows on one runner; return its results.json (Gradescope's format).

    ``hidden_seeds``: as :func:`tutor.instructor.fixes.grade_one`.

    Raises:
        tutor.sandbox.runner.UnconfinedError: the runner refuses to run unconfined here.
        tutor.sandbox.runner.WorkerError, tutor.sandbox.runner.DeviceError: the worker cannot run at all.
    """
    started = time.perf_counter()
    predictions = [r for r in rows if r.mode == PREDICT]
    repairs = [r for r in rows if r.mode == "fix"]
    pool = _OnePool(runner)
    graded = grading.grade_rows(catalog, predictions, pool, None, plan, memo.Observations()) if predictions else []
    graded += [fixes.grade_guarded(catalog, runner, r, plan, hidden_seeds=hidden_seeds) for r in repairs]
    dicts = [g.to_dict() for g in graded]
    result = class_results.learner_result(dicts, plan, grading.titles(catalog), now)
    result["execution_time"] = round(time.perf_counter() - started, 3)
    unassigned = [d for d in dicts if d["status"] == "not_assigned"]
    unreadable = [d for d in dicts if d["status"] == "unreadable" and d.get("exercise") not in plan.ids]
    notes = []
    if unassigned:
        notes.append(f"Not graded (not in this assignment): {', '.join(d['exercise'] for d in unassigned)}.")
    if unreadable:
        notes.append("Could not be graded: " + "; ".join(f"{d.get('exercise')!r}: {d.get('reason')}"
                                                         for d in unreadable) + ".")
    if notes:
        result["output"] += " " + " ".join(notes)
    return result


class _OnePool:
    """The grading pool over a runner that already exists (one warm worker, this process)."""

    def __init__(self, runner, device: str = "auto") -> None:
        self.runners = [runner]
        self.device = device

    def run(self, jobs, work, on_done=None, keep: bool = True):
        """:meth:`tutor.instructor.grade.RunnerPool.run` on the one runner, in the jobs' order."""
        out = []
        for job in jobs:
            result = work(self.runners[0], job)
            if on_done is not None:
                on_done(result)
            if keep:
                out.append(result)
        return out


def failure(sentence: str, plan=None) -> dict:
    """The results.json of a submission that could not be graded: score 0 and the one sentence why, and,
    when the assignment read, each of its exercises as a test of 0 points saying the same."""
    tests = [{"name": a.id, "number": str(n), "score": 0.0, "max_score": float(a.points), "status": "failed",
              "output": f"Not graded: {sentence}", "visibility": a.visibility}
             for n, a in enumerate(plan.exercises if plan is not None else (), 1)]
    return {"score": 0.0, "execution_time": 0.0, "output": f"This submission could not be graded: {sentence}",
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def plan_data(plan) -> dict:
    """An assignment back as its TOML document (to set a due time taken from Gradescope's metadata)."""
    return {"name": plan.name, "observations": plan.observations,
            "exercises": [{"id": a.id, "points": a.points, "hidden_seeds": list(a.hidden_seeds),
                           "visibility": a.visibility} for a in plan.exercises]}
