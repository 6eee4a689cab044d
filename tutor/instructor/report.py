"""A class report: ``tutor report DIR`` over a folder of learners' progress files.

Per exercise, over the learners whose files hold attempts at it:

* ``tried`` — learners with at least one graded attempt (a pass or a fail of
  a prediction; outcomes such as a timeout, and fix or break attempts of edit
  mode, are counted apart in ``other_attempts``);
* ``solved_first`` — learners whose first graded attempt matched;
* ``solved_latest`` — learners whose attempt that counts (the latest, as
  ``results.json`` and ``tutor progress`` pick it:
  :func:`tutor.model.attempts.counting`) matched; attempts are read in
  that one time order everywhere here;
* ``ever_solved`` — learners with a matching attempt at all;
* ``median_attempts`` — the median number of graded attempts of those who
  tried, and ``median_attempts_to_solve`` of those who solved it (the
  attempt that first matched, counted from 1);
* ``wrong_predictions`` — the most common wrong predictions, each with the
  number of learners who made it and of attempts that made it: the class's
  misconceptions. Predictions are compared as the exercise reads them
  (``3x3`` and ``(3, 3)`` are one prediction) when the catalog knows it;
* ``fix_tried`` / ``fix_fixed`` — learners with a fix-mode attempt (``tutor
  fix``, ``tutor grade --fixes``), and those whose attempt that counts (the
  latest) fixed it;
* ``hinted`` — graded predictions made after the learner revealed a hint;
* ``guessed`` — graded predictions recorded as a guess (``g``, ``--confidence guess``: the
  confidence at the question's chance; known with the catalog);
* ``notes`` — the learners' explain-back notes.

Per learner whose predictions carry a ``confidence`` (a whole percent,
from the question's chance to 100; optional everywhere): calibration — how many predictions, the mean
confidence, how often right, the Brier score (mean of (confidence -
right)², 0 is perfect; :func:`tutor.model.calibration.calibrate`, the
figure ``tutor progress`` shows) and over-confidence (mean confidence minus
how often right), and how many of those predictions were recorded as guesses. Files are read through the progress store
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
import functools
import io
import multiprocessing
import os
import statistics
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tutor.model import answers
from tutor.model.errors import UsageError
from tutor.model.attempts import ANSWER_MODES, ExerciseProgress, ProgressError, confidence_of, in_time_order, is_prediction
from tutor.model.calibration import calibrate, is_guess
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
    solved_latest: int = 0
    ever_solved: int = 0
    median_attempts: float | None = None
    median_attempts_to_solve: float | None = None
    other_attempts: int = 0
    hinted: int = 0
    guessed: int = 0
    fix_tried: int = 0
    fix_fixed: int = 0
    wrong_predictions: list[WrongPrediction] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)
    #: edit-mode attempts by mode (fix, break, hunt), each by verdict: {"fix": {"fixed": 2, "not fixed": 1}}
    edits: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "set": self.set, "in_catalog": self.in_catalog,
                "tried": self.tried, "solved_first": self.solved_first, "solved_latest": self.solved_latest,
                "ever_solved": self.ever_solved,
                "median_attempts": self.median_attempts, "median_attempts_to_solve": self.median_attempts_to_solve,
                "other_attempts": self.other_attempts, "hinted": self.hinted, "fix_tried": self.fix_tried, "fix_fixed": self.fix_fixed,
                "wrong_predictions": [w.to_dict() for w in self.wrong_predictions],
                "note_count": len(self.notes), "notes": self.notes, "edits": self.edits, "guessed": self.guessed}


@dataclass
class Calibration:
    """One learner's confidence against how often they were right, over their graded predictions."""

    learner: str
    predictions: int
    mean_confidence: float
    accuracy: float
    brier: float
    guesses: int = 0  # of those predictions, the ones recorded as a guess

    @property
    def overconfidence(self) -> float:
        return self.mean_confidence - self.accuracy

    def to_dict(self) -> dict:
        return {"learner": self.learner, "predictions": self.predictions,
                "mean_confidence": round(self.mean_confidence, 4), "accuracy": round(self.accuracy, 4),
                "brier": round(self.brier, 4), "overconfidence": round(self.overconfidence, 4),
                "guesses": self.guesses}


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

    @property
    def tried(self) -> int:
        """The exercises some learner tried, by the rule of each exercise's ``tried``: a graded prediction."""
        return sum(1 for e in self.exercises if e.tried)

    @property
    def only_other(self) -> int:
        """The exercises listed whose attempts are all others (warm-up bets, fix, break, hunt, timeouts):
        none of them is tried."""
        return len(self.exercises) - self.tried

    def to_dict(self) -> dict:
        return {"folder": str(self.folder), "learner_count": self.learners,
                "exercises_tried": self.tried, "exercises_with_other_attempts_only": self.only_other,
                "exercises": [e.to_dict() for e in self.exercises],
                "calibration": [c.to_dict() for c in self.calibration],
                "damaged": self.damaged, "kept_aside": self.kept_aside, "shadowed": self.shadowed,
                "read_only": self.read_only}


#: From this many files on, they are read by one process per core (reading is most of a report's time).
PARALLEL_FROM = 2000


def build_report(folder: str | Path, catalog=None, top: int = 3, jobs: int | None = None) -> ClassReport:
    """Read every learner's progress file in ``folder`` once and count (module docstring).

    Args:
        folder: the progress folder.
        catalog: the exercises, for order, titles and reading predictions; None reads without.
        top: how many wrong predictions to keep per exercise.
        jobs: processes that read the files (default: one per usable core from
            :data:`PARALLEL_FROM` files on, else this one); the counts are the same either way.

    Raises:
        UsageError: the folder does not exist.
    """
    store = ProgressStore(folder)
    if not store.folder.is_dir():
        raise UsageError(f"there is no progress folder {store.folder}; name a folder of progress files "
                         "(tutor report DIR)")
    report = ClassReport(folder=store.folder, kept_aside=[str(p) for p in store.kept_aside()])
    by_exercise: dict[str, _Tally] = defaultdict(_Tally)
    files = store.learner_files()
    used = {f.key: f for f in files if not f.shadowed}
    for file in files:
        if file.shadowed:
            report.shadowed.append({"file": str(file.path), "same_learner_as": str(used[file.key].path)})
    for part in _count_all(store, catalog, [f for f in files if not f.shadowed], jobs):
        report.learners += part.learners
        report.damaged += part.damaged
        report.read_only += part.read_only
        report.calibration += part.calibration
        for ex_id, tally in part.tallies.items():
            by_exercise[ex_id].merge(tally)
    report.exercises = _ordered([t.finish(ex_id, catalog, top) for ex_id, t in by_exercise.items()], catalog)
    report.calibration.sort(key=lambda c: c.learner.casefold())
    return report


@dataclass
class _Part:
    """What one run of files counted: merged into the report in the files' order."""

    learners: int = 0
    damaged: list = field(default_factory=list)
    read_only: list = field(default_factory=list)
    calibration: list = field(default_factory=list)
    tallies: dict = field(default_factory=dict)


def _count(store: ProgressStore, catalog, files: list) -> _Part:
    """Read and count ``files`` (one process's share)."""
    part = _Part()
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    canonical = _Reader(catalog)
    for file in files:
        try:
            progress = store.review_file(file)
        except DamagedProgressError as exc:
            part.damaged.append({"file": str(file.path), "problem": exc.problem})
            continue
        except ProgressError as exc:
            part.damaged.append({"file": str(file.path), "problem": str(exc)})
            continue
        if progress.read_only:
            part.read_only.append(str(file.path))
        name = progress.learner
        part.learners += 1
        for ex_id, entry in progress.exercises.items():
            tallies[ex_id].add(name, entry, canonical, ex_id)
        attempts = [a for entry in progress.exercises.values() for a in entry.attempts]
        rated = calibrate(attempts)  # the Brier score and the counts of 'tutor progress', computed once
        if rated.count:
            stated = [confidence_of(a) for a in attempts if is_prediction(a) and confidence_of(a) is not None]
            guesses = sum(1 for ex_id, entry in progress.exercises.items() for a in entry.attempts
                          if is_prediction(a) and canonical.guessed(ex_id, a))
            part.calibration.append(Calibration(
                learner=name, predictions=rated.count, mean_confidence=sum(stated) / 100 / rated.count,
                accuracy=rated.right / rated.count, brier=rated.brier, guesses=guesses))
    part.tallies = dict(tallies)
    return part


def _count_all(store: ProgressStore, catalog, files: list, jobs: int | None) -> list[_Part]:
    """The files counted in order: by ``jobs`` forked processes, each counting a run of files, when
    there are many; only the counts travel back."""
    if jobs is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        jobs = cores if len(files) >= PARALLEL_FROM else 1
    if jobs <= 1 or len(files) < 2:
        return [_count(store, catalog, files)]
    try:
        context = multiprocessing.get_context("fork")  # the catalog and the modules are imported already
    except ValueError:
        return [_count(store, catalog, files)]
    size = -(-len(files) // jobs)
    runs = [files[i:i + size] for i in range(0, len(files), size)]
    try:
        with ProcessPoolExecutor(len(runs), mp_context=context) as pool:
            return list(pool.map(functools.partial(_count, store, catalog), runs))
    except (OSError, RuntimeError):  # no processes to be had here: count them in this one
        return [_count(store, catalog, files)]


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
                try:
                    shown = ex.kind.show_prediction(ex.parse_answer(text))
                except answers.AnswerError:
                    pass
            self.cache[key] = shown
        return shown

    def guessed(self, ex_id: str, attempt) -> bool:
        """Whether ``attempt`` was recorded as a guess at its exercise's chance (False for an exercise the
        catalog does not know: its chance is not known)."""
        ex = self.exercises.get(ex_id)
        return ex is not None and is_guess(attempt, ex.kind.chance)


class _Tally:
    """One exercise's counts while the files are read."""

    def __init__(self) -> None:
        self.tried = self.solved_first = self.solved_latest = self.ever_solved = self.other = self.hinted = 0
        self.guessed = 0
        self.fix_tried = self.fix_fixed = 0
        self.attempts: list[int] = []
        self.to_solve: list[int] = []
        self.wrong_learners: dict[str, set] = defaultdict(set)
        self.wrong_attempts: dict[str, int] = defaultdict(int)
        self.notes: list[dict] = []
        self.edits: dict[str, dict[str, int]] = {}

    def merge(self, other: "_Tally") -> None:
        """Add another run of files' counts of the same exercise to these."""
        for name in ("tried", "solved_first", "solved_latest", "ever_solved", "other", "hinted", "fix_tried",
                     "fix_fixed", "guessed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.attempts += other.attempts
        self.to_solve += other.to_solve
        for shown, who in other.wrong_learners.items():
            self.wrong_learners[shown] |= who
        for shown, n in other.wrong_attempts.items():
            self.wrong_attempts[shown] += n
        self.notes += other.notes
        for mode, verdicts in other.edits.items():
            mine = self.edits.setdefault(mode, {})
            for verdict, n in verdicts.items():
                mine[verdict] = mine.get(verdict, 0) + n

    def add(self, learner: str, entry: ExerciseProgress, read, ex_id: str) -> None:
        # the one time order (the latest counts): results.json and tutor progress agree
        ordered = in_time_order(entry.attempts, lambda a: a.time)
        graded = [a for a in ordered if is_prediction(a)]
        self.other += len(entry.attempts) - len(graded)
        fixes = [a for a in ordered if a.mode == "fix"]
        if fixes:
            self.fix_tried += 1
            self.fix_fixed += bool(fixes[-1].correct)
        for a in ordered:
            if a.mode not in ANSWER_MODES:  # fix, break, hunt: counted by verdict (a warm-up: by nothing)
                verdicts = self.edits.setdefault(a.mode, {})
                verdict = a.verdict or a.status or "?"
                verdicts[verdict] = verdicts.get(verdict, 0) + 1
        note = entry.note
        if note.strip():
            self.notes.append({"learner": learner, "note": note})
        if not graded:
            return
        self.tried += 1
        self.hinted += sum(1 for a in graded if a.hints)
        self.guessed += sum(1 for a in graded if read.guessed(ex_id, a))
        self.attempts.append(len(graded))
        self.solved_first += bool(graded[0].correct)
        self.solved_latest += bool(graded[-1].correct)
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
            tried=self.tried, solved_first=self.solved_first, solved_latest=self.solved_latest, ever_solved=self.ever_solved,
            median_attempts=_median(self.attempts), median_attempts_to_solve=_median(self.to_solve),
            other_attempts=self.other, hinted=self.hinted, guessed=self.guessed, fix_tried=self.fix_tried, fix_fixed=self.fix_fixed, wrong_predictions=wrong[:top],
            notes=sorted(self.notes, key=lambda n: n["learner"].casefold()),
            edits={mode: dict(sorted(v.items())) for mode, v in sorted(self.edits.items())})


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
    header += ["solved_latest", "fix_tried", "fix_fixed"]
    header += ["edits", "hinted", "guessed"]
    writer.writerow(header)
    for e in report.exercises:
        row = [e.id, e.set or "", e.title or "", e.tried, e.solved_first, e.ever_solved, _number(e.median_attempts),
               _number(e.median_attempts_to_solve), e.other_attempts, len(e.notes)]
        for n in range(top):
            w = e.wrong_predictions[n] if n < len(e.wrong_predictions) else None
            row += [w.prediction, w.learners] if w else ["", ""]
        row += [e.solved_latest, e.fix_tried, e.fix_fixed]
        row += [edits_words(e.edits), e.hinted, e.guessed]
        writer.writerow([spreadsheet_safe(c) for c in row])
    return out.getvalue()


def edits_words(edits: dict[str, dict[str, int]]) -> str:
    """Edit-mode attempts in words: ``fix 3 (fixed 2, not fixed 1) · break 1 (changed 1)``; empty when none."""
    return " · ".join(f"{mode} {sum(verdicts.values())} ("
                      + ", ".join(f"{verdict} {n}" for verdict, n in verdicts.items()) + ")"
                      for mode, verdicts in edits.items())


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"
