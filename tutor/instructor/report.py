"""A class report: ``tutor report DIR`` over a folder of learners' progress files.

Per exercise, over the learners whose files hold attempts at it:

* ``tried`` — learners with at least one graded attempt (a pass or a fail of
  a prediction; outcomes such as a timeout, and fix or break attempts of edit
  mode, are counted apart in ``other_attempts``);
* ``solved_first`` — learners whose first graded attempt matched;
* ``ever_solved`` — learners with a matching attempt at all;
* ``median_attempts`` — the median number of graded attempts of those who
  tried, and ``median_attempts_to_solve`` of those who solved it (the
  attempt that first matched, counted from 1);
* ``wrong_predictions`` — the most common wrong predictions, each with the
  number of learners who made it and of attempts that made it: the class's
  misconceptions. Predictions are compared as the exercise reads them
  (``3x3`` and ``(3, 3)`` are one prediction) when the catalog knows it;
* ``notes`` — the learners' explain-back notes.

Per learner whose predictions carry a ``confidence`` (a whole percent,
50-100; optional everywhere): calibration — how many predictions, the mean
confidence, how often right, the Brier score (mean of (confidence -
right)², 0 is perfect; :func:`tutor.model.calibration.calibrate`, the
figure ``tutor progress`` shows) and over-confidence (mean confidence minus
how often right). Files are read through the progress store
(:meth:`tutor.store.progress.ProgressStore.review_file`), as every other
command reads them.

The report reads only: a file that cannot be read as progress is named
with its reason (the command then exits 2, as ``tutor progress --all``
does), files kept aside earlier (``*.toml.corrupt-*``) are named, and
nothing in the folder is moved or changed.

Layers: imports neither torch nor Textual. Reading is one pass over the
files (1,000 learners in well under 2 s; see the benchmark).
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tutor.cli.learner import catalog_or_none
from tutor.cli.replies import EXIT_USAGE, ReportReply, UsageError
from tutor.model.attempts import ExerciseProgress, ProgressError, confidence_of, is_prediction
from tutor.model.calibration import calibrate
from tutor.store.files import spreadsheet_safe
from tutor.store.progress import DamagedProgressError, ProgressStore


@dataclass
class WrongPrediction:
    """One wrong prediction of an exercise: as the exercise reads it, and how many made it."""

    prediction: str
    learners: int
    attempts: int

    def to_dict(self) -> dict:
        return {"prediction": self.prediction, "learners": self.learners, "attempts": self.attempts}


@dataclass
class ExerciseReport:
    """The class on one exercise (see the module docstring for each count)."""

    id: str
    title: str | None = None
    set: str | None = None
    in_catalog: bool = True
    tried: int = 0
    solved_first: int = 0
    ever_solved: int = 0
    median_attempts: float | None = None
    median_attempts_to_solve: float | None = None
    other_attempts: int = 0
    wrong_predictions: list[WrongPrediction] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "set": self.set, "in_catalog": self.in_catalog,
                "tried": self.tried, "solved_first": self.solved_first, "ever_solved": self.ever_solved,
                "median_attempts": self.median_attempts, "median_attempts_to_solve": self.median_attempts_to_solve,
                "other_attempts": self.other_attempts,
                "wrong_predictions": [w.to_dict() for w in self.wrong_predictions],
                "note_count": len(self.notes), "notes": self.notes}


@dataclass
class Calibration:
    """One learner's confidence against how often they were right, over their graded predictions."""

    learner: str
    predictions: int
    mean_confidence: float
    accuracy: float
    brier: float

    @property
    def overconfidence(self) -> float:
        return self.mean_confidence - self.accuracy

    def to_dict(self) -> dict:
        return {"learner": self.learner, "predictions": self.predictions,
                "mean_confidence": round(self.mean_confidence, 4), "accuracy": round(self.accuracy, 4),
                "brier": round(self.brier, 4), "overconfidence": round(self.overconfidence, 4)}


@dataclass
class ClassReport:
    """The whole report: the exercises, calibration, and every file that was not counted, by name."""

    folder: Path
    learners: int = 0
    exercises: list[ExerciseReport] = field(default_factory=list)
    calibration: list[Calibration] = field(default_factory=list)
    damaged: list[dict] = field(default_factory=list)
    kept_aside: list[str] = field(default_factory=list)
    shadowed: list[dict] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"folder": str(self.folder), "learner_count": self.learners,
                "exercises": [e.to_dict() for e in self.exercises],
                "calibration": [c.to_dict() for c in self.calibration],
                "damaged": self.damaged, "kept_aside": self.kept_aside, "shadowed": self.shadowed,
                "read_only": self.read_only}


def build_report(folder: str | Path, catalog=None, top: int = 3) -> ClassReport:
    """Read every learner's progress file in ``folder`` once and count (module docstring).

    Args:
        folder: the progress folder.
        catalog: the exercises, for order, titles and reading predictions; None reads without.
        top: how many wrong predictions to keep per exercise.

    Raises:
        UsageError: the folder does not exist.
    """
    store = ProgressStore(folder)
    if not store.folder.is_dir():
        raise UsageError(f"there is no progress folder {store.folder}; name a folder of progress files "
                         "(tutor report DIR)")
    report = ClassReport(folder=store.folder, kept_aside=[str(p) for p in store.kept_aside()])
    by_exercise: dict[str, _Tally] = defaultdict(_Tally)
    canonical = _Reader(catalog)
    files = store.learner_files()
    used = {f.key: f for f in files if not f.shadowed}
    for file in files:
        if file.shadowed:
            report.shadowed.append({"file": str(file.path), "same_learner_as": str(used[file.key].path)})
            continue
        try:
            progress = store.review_file(file)
        except DamagedProgressError as exc:
            report.damaged.append({"file": str(file.path), "problem": exc.problem})
            continue
        except ProgressError as exc:
            report.damaged.append({"file": str(file.path), "problem": str(exc)})
            continue
        if progress.read_only:
            report.read_only.append(str(file.path))
        name = progress.learner
        report.learners += 1
        for ex_id, entry in progress.exercises.items():
            by_exercise[ex_id].add(name, entry, canonical, ex_id)
        attempts = [a for entry in progress.exercises.values() for a in entry.attempts]
        rated = calibrate(attempts)  # the Brier score and the counts of 'tutor progress', computed once
        if rated.count:
            stated = [confidence_of(a) for a in attempts if is_prediction(a) and confidence_of(a) is not None]
            report.calibration.append(Calibration(
                learner=name, predictions=rated.count, mean_confidence=sum(stated) / 100 / rated.count,
                accuracy=rated.right / rated.count, brier=rated.brier))
    report.exercises = _ordered([t.finish(ex_id, catalog, top) for ex_id, t in by_exercise.items()], catalog)
    report.calibration.sort(key=lambda c: c.learner.casefold())
    return report


class _Reader:
    """Predictions as their exercise reads them (``3x3`` is ``(3, 3)``), cached; the text itself otherwise."""

    def __init__(self, catalog) -> None:
        self.exercises = {e.id: e for e in catalog.exercises} if catalog is not None else {}
        self.cache: dict[tuple[str, str], str] = {}

    def __call__(self, ex_id: str, text: str) -> str:
        key = (ex_id, text)
        shown = self.cache.get(key)
        if shown is None:
            shown = text.strip()
            ex = self.exercises.get(ex_id)
            if ex is not None:
                from exercises import answers
                try:
                    shown = answers.show(ex.kind, ex.parse_answer(text))
                except answers.AnswerError:
                    pass
            self.cache[key] = shown
        return shown


class _Tally:
    """One exercise's counts while the files are read."""

    def __init__(self) -> None:
        self.tried = self.solved_first = self.ever_solved = self.other = 0
        self.attempts: list[int] = []
        self.to_solve: list[int] = []
        self.wrong_learners: dict[str, set] = defaultdict(set)
        self.wrong_attempts: dict[str, int] = defaultdict(int)
        self.notes: list[dict] = []

    def add(self, learner: str, entry: ExerciseProgress, read, ex_id: str) -> None:
        graded = [a for a in entry.attempts if is_prediction(a)]
        self.other += len(entry.attempts) - len(graded)
        note = entry.note
        if note.strip():
            self.notes.append({"learner": learner, "note": note})
        if not graded:
            return
        self.tried += 1
        self.attempts.append(len(graded))
        self.solved_first += bool(graded[0].correct)
        first_right = next((n for n, a in enumerate(graded, 1) if a.correct), None)
        if first_right is not None:
            self.ever_solved += 1
            self.to_solve.append(first_right)
        for a in graded:
            if not a.correct:
                shown = read(ex_id, a.prediction)
                self.wrong_learners[shown].add(learner)
                self.wrong_attempts[shown] += 1

    def finish(self, ex_id: str, catalog, top: int) -> ExerciseReport:
        ex = _exercise(catalog, ex_id)
        wrong = sorted((WrongPrediction(p, len(who), self.wrong_attempts[p]) for p, who in self.wrong_learners.items()),
                       key=lambda w: (-w.learners, -w.attempts, w.prediction))
        return ExerciseReport(
            id=ex_id, title=ex.title if ex else None, set=ex.set if ex else None, in_catalog=ex is not None,
            tried=self.tried, solved_first=self.solved_first, ever_solved=self.ever_solved,
            median_attempts=_median(self.attempts), median_attempts_to_solve=_median(self.to_solve),
            other_attempts=self.other, wrong_predictions=wrong[:top],
            notes=sorted(self.notes, key=lambda n: n["learner"].casefold()))


def _median(values: list[int]) -> float | None:
    return float(statistics.median(values)) if values else None


def _exercise(catalog, ex_id: str):
    if catalog is None:
        return None
    try:
        return catalog.get(ex_id)
    except KeyError:
        return None


def _ordered(exercises: list[ExerciseReport], catalog) -> list[ExerciseReport]:
    """The catalog's order, then exercises it does not know, by id."""
    order = {e.id: n for n, e in enumerate(catalog.exercises)} if catalog is not None else {}
    return sorted(exercises, key=lambda e: (e.id not in order, order.get(e.id, 0), e.id))


# --- output -----------------------------------------------------------------------------------

def to_csv(report: ClassReport, top: int | None = None) -> str:
    """One CSV row per exercise: the counts, the note count, and the wrong predictions with their learners."""
    top = top if top is not None else max((len(e.wrong_predictions) for e in report.exercises), default=0)
    top = max(top, 1)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    header = ["exercise", "set", "title", "tried", "solved_first", "ever_solved", "median_attempts",
              "median_attempts_to_solve", "other_attempts", "notes"]
    for n in range(1, top + 1):
        header += [f"wrong_prediction_{n}", f"wrong_prediction_{n}_learners"]
    writer.writerow(header)
    for e in report.exercises:
        row = [e.id, e.set or "", e.title or "", e.tried, e.solved_first, e.ever_solved, _number(e.median_attempts),
               _number(e.median_attempts_to_solve), e.other_attempts, len(e.notes)]
        for n in range(top):
            w = e.wrong_predictions[n] if n < len(e.wrong_predictions) else None
            row += [w.prediction, w.learners] if w else ["", ""]
        writer.writerow([spreadsheet_safe(c) for c in row])
    return out.getvalue()


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def show_report(console, report: ClassReport) -> None:
    """The report for a terminal: the exercise table, calibration, and the files not counted."""
    from rich.table import Table
    from rich.text import Text
    console.print(Text(f"Class report of {report.folder}: {report.learners} learner"
                       f"{'s' if report.learners != 1 else ''}, {len(report.exercises)} exercise"
                       f"{'s' if len(report.exercises) != 1 else ''} tried", style="bold"))
    if report.exercises:
        table = Table()
        table.add_column("exercise", no_wrap=True)
        for column in ("tried", "1st try", "solved", "median tries", "notes"):
            table.add_column(column, justify="right", overflow="fold")
        table.add_column("wrong predictions (learners)", overflow="fold", ratio=1)
        for e in report.exercises:
            wrong = " · ".join(f"{w.prediction} ×{w.learners}" for w in e.wrong_predictions) or "-"
            table.add_row(e.id if e.in_catalog else f"{e.id} (not in the catalog)", str(e.tried), str(e.solved_first),
                          str(e.ever_solved), _number(e.median_attempts) or "-", str(len(e.notes)), Text(wrong))
        console.print(table)
    if report.calibration:
        table = Table(title="Calibration: confidence against how often right")
        table.add_column("learner", no_wrap=True)
        for column in ("predictions", "mean confidence", "right", "Brier", "over-confidence"):
            table.add_column(column, justify="right")
        for c in report.calibration:
            table.add_row(Text(c.learner), str(c.predictions), f"{c.mean_confidence:.0%}", f"{c.accuracy:.0%}",
                          f"{c.brier:.3f}", f"{c.overconfidence:+.0%}")
        console.print(table)
    for d in report.damaged:
        console.print(Text(f"not counted, cannot be read: {d['file']}", style="red"))
    for s in report.shadowed:
        console.print(Text(f"not counted, the same learner as {s['same_learner_as']}: {s['file']}", style="yellow"))
    for path in report.read_only:
        console.print(Text(f"written by a newer tutor, counted as it reads here: {path}", style="yellow"))
    if report.kept_aside:
        console.print(Text(f"{len(report.kept_aside)} damaged file{'s were' if len(report.kept_aside) > 1 else ' was'} "
                           "moved aside earlier and kept (not counted):", style="yellow"))
        for path in report.kept_aside:
            console.print(Text(f"  {path}"))


def command(args, events) -> ReportReply:
    """``tutor report DIR``: build the report; a damaged file makes the exit status 2, the report is whole."""
    report = build_report(args.folder, catalog_or_none(), args.top)
    data = report.to_dict()
    code = 0
    if report.damaged:
        code = EXIT_USAGE
        names = ", ".join(Path(d["file"]).name for d in report.damaged[:5])
        more = f" and {len(report.damaged) - 5} more" if len(report.damaged) > 5 else ""
        data["error"] = (f"{len(report.damaged)} progress file{'s' if len(report.damaged) > 1 else ''} cannot be read "
                         f"and {'are' if len(report.damaged) > 1 else 'is'} not counted ({names}{more}); "
                         "'damaged' says why — fix them by hand, nothing was changed")
        if getattr(args, "json", False):
            events.notice(data["error"])  # the Rich and CSV views say it after the report
    return ReportReply(data, code, report=report, csv=bool(getattr(args, "csv", False)))
