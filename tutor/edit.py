"""Edit mode: the learner repairs a fault (fix), writes one (break) or hunts a hidden one (hunt).

DESIGN.md, "The learner's own code". Until now a learner only predicted what
someone else's fault would do; here the learner's own text is the subject.
Whatever mode, the learner's file is one more *side* of a run —
``Side.replacing("yours", path, text)`` — built and checked in the same
sandbox as ``clean`` and ``faulted`` (:mod:`tutor.worker`), and the verdict
is measured, never a comparison of texts:

* **fix** — the learner starts from the subject file *with the fault
  applied* and edits it. The verdict is **fixed** when their side measured
  (nothing raised, no timeout) and its observation equals the clean side's
  within the exercise's tolerance; else **not fixed**, with the first
  evidence row where the two differ named (:func:`judge`). Any repair that
  behaves like the clean code passes, whatever its text.
* **break** — the learner starts from the *clean* file, writes a fault of
  their own and predicts its effect (in the exercise's answer kind, or as
  free text). The tutor shows what their side observed and names the first
  evidence row that diverges from clean (:func:`observe_break`).
* **hunt** — the capstone's *Find and fix*: the learner gets the file that
  carries the mystery's hidden fault (its diff stays hidden) and edits it
  until the audit holds on every link. The check is the audit of the tree's
  own engine (``exercises/edit_mode.py: hunt``); the verdict is the audit's,
  read the same way as fix: the clean engine's audit says "none fails".

This module holds the pure parts: what a task starts from (:class:`Task`),
the learner's diff, a unified patch applied to the starting file
(:func:`apply_patch`), a syntax check that names the line, the sides of a
run, and the verdict read off a :class:`tutor.runner.RunResult`. Running and
recording are :class:`tutor.session.Session`'s (``fix``, ``break_it``,
``hunt``); working copies are the progress store's. Layers: imports neither
torch nor Textual.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from exercises import answers
from exercises.faults import Fault, source_root
from tutor.catalog import Catalog, Exercise
from tutor.protocol import Side

#: The modes an attempt can have (``Attempt.mode``); ``predict`` is the classic run.
MODES = ("predict", "fix", "break", "hunt")
#: The learner's side is called this in every run, result and JSON object.
YOURS = "yours"
#: A second run of the clean code in the same request: what of the clean code's outcome reproduces.
REPEAT = "repeat"
#: A learner's file (and so its diff) larger than this is refused, in bytes.
MAX_EDIT_BYTES = 64 * 1024
#: The file a break or hunt edits when the exercise names none (no fault): the GPT itself.
DEFAULT_SUBJECT = "engine/model.py"
#: The check that audits the tree's own engine (hunt, and break on the capstone).
HUNT_CHECK = "edit_mode.hunt"
#: The check that runs the engine's instruments on the tree's GPT (engine exercises).
INSTRUMENTS_CHECK = "edit_mode.instruments"
#: Wall-clock limit for the instruments run, seconds.
INSTRUMENTS_TIMEOUT_S = 60.0


class EditError(ValueError):
    """A learner's edit that cannot be run: too large, not text, a patch that does not apply.

    The message is one sentence naming the problem and the fix (the CLI exits 2).
    """


class PatchError(EditError):
    """A unified diff that does not apply to the file it was written against; names the hunk."""


@dataclass(frozen=True)
class Task:
    """What the learner edits in one mode of one exercise.

    Attributes:
        mode: ``fix``, ``break`` or ``hunt``.
        exercise: the exercise as run (for a hunt, its check is the audit of
            the tree's own engine: :data:`HUNT_CHECK`).
        path: the subject file, relative to the source root (``engine/model.py``).
        start: the text a fresh working copy holds: the faulted file (fix,
            hunt) or the clean one (break).
        clean: the clean file's text; the learner's diff is taken against it.
        fault: the fault the faulted side carries (fix: the exercise's;
            hunt: the hidden one), None for break.
        seed: the check's seed (the capstone's mystery), or None for the
            session's choice.
        hidden: the fault must not be shown (a hunt).
    """

    mode: str
    exercise: Exercise
    path: str
    start: str
    clean: str
    fault: Fault | None = None
    seed: int | None = None
    hidden: bool = False

    @property
    def engine(self) -> bool:
        """Whether the edited file is part of the engine GPT (its instruments then apply)."""
        return self.path.startswith("engine/")

    @property
    def key(self) -> str:
        """The working copy's folder name: the mode, and for a hunt the mystery's seed."""
        return f"{self.mode}-{self.seed}" if self.mode == "hunt" else self.mode

    def diff(self, text: str) -> str:
        """The learner's unified diff against the clean file ("" when the text is the clean file).

        For a hunt the diff is taken against the mystery file instead, so it
        never shows the hidden fault: it is the learner's own edit.
        """
        base = self.start if self.hidden else self.clean
        return unified_diff(self.path, base, text)

    def sides(self, text: str, repeat: bool = True) -> tuple[Side, ...]:
        """The sides a run of the learner's ``text`` needs.

        ``clean``; ``repeat``, the clean code once more (unless ``repeat`` is
        False), so a verdict can tell a measurement that varies from run to
        run from one the learner changed; ``faulted`` when there is a fault;
        and ``yours``.
        """
        sides = [Side.clean()]
        if repeat:
            sides.append(Side(REPEAT))
        if self.fault is not None:
            sides.append(Side.faulted(self.fault))
        sides.append(Side.replacing(YOURS, self.path, text))
        return tuple(sides)


def subject_text(path: str) -> str:
    """The clean text of a subject file (``engine/model.py``), read from the source tree.

    Raises:
        EditError: the file does not exist or cannot be read.
    """
    try:
        return (source_root() / path).read_text(encoding="utf-8")
    except OSError as exc:
        raise EditError(f"the subject file {path} cannot be read ({exc.strerror or exc}); "
                        "reinstall tutor with pip install -e .") from None


def fix_task(catalog: Catalog, exercise: Exercise, seed: int | None = None) -> Task:
    """Fix it: the exercise's fault applied, for the learner to repair; the capstone gives a hunt.

    Raises:
        EditError: the exercise has no fault (and is not the capstone).
    """
    if exercise.seed_per_attempt:
        return hunt_task(catalog, exercise, seed or 0)
    fault = catalog.fault_of(exercise)
    if fault is None:
        raise EditError(f"exercise {exercise.id} has no fault to fix; try 'tutor break {exercise.id}' "
                        "to write one of your own")
    clean = subject_text(fault.file)
    return Task("fix", exercise, fault.file, clean.replace(fault.before, fault.after, 1), clean, fault, seed)


def break_task(catalog: Catalog, exercise: Exercise, seed: int | None = None) -> Task:
    """Break it: the clean subject file of the exercise, for the learner to write their own fault.

    The file is the one the exercise's fault edits, else :data:`DEFAULT_SUBJECT`.
    On the capstone the check is the audit of the edited engine.
    """
    fault = catalog.fault_of(exercise)
    path = fault.file if fault else DEFAULT_SUBJECT
    clean = subject_text(path)
    run_as = replace(exercise, check=HUNT_CHECK) if exercise.seed_per_attempt else exercise
    return Task("break", run_as, path, clean, clean, None, seed)


def hunt_task(catalog: Catalog, exercise: Exercise, seed: int) -> Task:
    """Find and fix (the capstone): the file that carries the mystery's hidden fault, fault applied.

    The mystery of ``seed`` is the capstone's (``exercises.capstone.hidden_fault``);
    a seed whose mystery is the clean engine has nothing to find, so the hunt
    takes the next seed that hides a fault.
    """
    from exercises.capstone import hidden_fault
    while hidden_fault(seed) == "none":
        seed += 1
    fault = catalog.faults[hidden_fault(seed)]
    clean = subject_text(fault.file)
    run_as = replace(exercise, check=HUNT_CHECK)
    return Task("hunt", run_as, fault.file, clean.replace(fault.before, fault.after, 1), clean, fault, seed,
                hidden=True)


def task_for(catalog: Catalog, exercise: Exercise, mode: str, seed: int | None = None) -> Task:
    """The task of ``mode`` (``fix``, ``break`` or ``hunt``) for ``exercise``.

    Raises:
        EditError: the mode does not exist, or the exercise has nothing to fix.
    """
    if mode == "fix":
        return fix_task(catalog, exercise, seed)
    if mode == "break":
        return break_task(catalog, exercise, seed)
    if mode == "hunt":
        if not exercise.seed_per_attempt:
            raise EditError(f"only the capstone is hunted; use 'tutor fix {exercise.id}'")
        return hunt_task(catalog, exercise, seed or 0)
    raise EditError(f"unknown edit mode {mode!r}; use fix, break or hunt")


# --- the learner's text -------------------------------------------------------

def check_text(path: str, text: str) -> str:
    """The learner's file as it will be run; refused when it cannot be.

    Line ends are made ``\\n`` (an editor on Windows writes ``\\r\\n``).

    Raises:
        EditError: the text is larger than :data:`MAX_EDIT_BYTES` or holds a NUL byte.
    """
    if not isinstance(text, str):
        raise EditError(f"your {path} must be text")
    size = len(text.encode("utf-8", "replace"))
    if size > MAX_EDIT_BYTES:
        raise EditError(f"your {path} is {size:,} bytes; edits over {MAX_EDIT_BYTES // 1024} KiB are refused — "
                        "edit the subject file, do not paste another program into it")
    if "\x00" in text:
        raise EditError(f"your {path} holds a NUL byte; save it as plain UTF-8 text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def syntax_problem(path: str, text: str) -> str | None:
    """One sentence naming the line of the first syntax error in ``text``, or None when it compiles.

    The run still goes ahead (the worker reports the same error as the
    learner's side's outcome); this sentence is what the learner is shown.
    """
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        return f"{type(exc).__name__} in your {path} at {where}: {exc.msg}"
    except ValueError as exc:  # e.g. source code string cannot contain null bytes
        return f"your {path} cannot be compiled: {exc}"
    return None


def unified_diff(path: str, before: str, after: str, context: int = 3) -> str:
    """The unified diff from ``before`` to ``after``, both named ``path`` (a/ and b/)."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}", n=context)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class _Hunk:
    number: int
    header: str
    old_start: int
    old_len: int
    new_len: int
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return len(self.old) >= self.old_len and len(self.new) >= self.new_len


def _hunks(patch: str) -> list[_Hunk]:
    """The hunks of a one-file unified diff, each read to the line counts its header states.

    Lines outside hunks (file headers, ``diff --git``, ``index``) are skipped;
    an empty line inside a hunk is a blank context line (some editors strip
    the space); ``\\ No newline at end of file`` removes the line end of
    the line before it.

    Raises:
        PatchError: no hunk at all, a line inside a hunk that is none of
            " ", "-", "+", or a hunk that ends before its stated line counts.
    """
    hunks: list[_Hunk] = []
    current: _Hunk | None = None
    last: list[list[str]] = []  # the sides the previous line went to (for "\ No newline")
    for raw in patch.replace("\r\n", "\n").split("\n"):
        match = _HUNK.match(raw)
        if match:
            if current is not None and not current.complete:
                raise _short(current)
            old_len = int(match.group(2)) if match.group(2) is not None else 1
            new_len = int(match.group(4)) if match.group(4) is not None else 1
            current = _Hunk(len(hunks) + 1, raw.split(" @@")[0] + " @@", int(match.group(1)), old_len, new_len)
            hunks.append(current)
            continue
        if raw.startswith("\\"):  # the line before has no line end
            for side in last:
                if side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            last = []
            continue
        if current is None or current.complete:
            last = []
            continue  # between hunks: headers, git lines, trailing text
        marker, body = raw[:1], raw[1:] + "\n"
        if marker in (" ", ""):
            current.old.append(body)
            current.new.append(body)
            last = [current.old, current.new]
        elif marker == "-":
            current.old.append(body)
            current.removed.append(body)
            last = [current.old]
        elif marker == "+":
            current.new.append(body)
            last = [current.new]
        else:
            raise PatchError(f"hunk {current.number} ({current.header}) holds a line that starts with "
                             f"{marker!r}, not ' ', '-' or '+'; write the patch with 'diff -u' or 'git diff'")
    if current is not None and not current.complete:
        raise _short(current)
    if not hunks:
        raise PatchError("the patch holds no hunk (no line starting with '@@'); "
                         "make it with 'diff -u faulted.py yours.py' or 'git diff'")
    return hunks


def _short(hunk: _Hunk) -> PatchError:
    return PatchError(f"hunk {hunk.number} ({hunk.header}) ends before the {hunk.old_len} old and "
                      f"{hunk.new_len} new lines its header states; the patch was cut or edited by hand")


def apply_patch(text: str, patch: str, path: str) -> str:
    """Apply a unified diff written against ``text`` (the file named ``path``); return the result.

    Each hunk must match exactly — every context and removed line — at its
    stated line or at another place (a patch made against a slightly moved
    file still applies); hunks apply in order and never overlap.

    Raises:
        PatchError: the patch holds no hunk, or a hunk's lines are not found
            in the file (the hunk is named by its number and header).
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0  # lines before this are already copied to out
    for hunk in _hunks(patch):
        at = _find(lines, hunk.old, hunk.old_start - 1, cursor)
        if at is None:
            first = next((line.strip() for line in hunk.removed + hunk.old if line.strip()), "")
            raise PatchError(f"hunk {hunk.number} ({hunk.header}) does not apply to {path}: its lines "
                             f"(around {first[:60]!r}) are not in the file after line {cursor}; make the patch "
                             "against the file you were given to edit (the faulted file; 'tutor show ID' "
                             "shows the fault)")
        out.extend(lines[cursor:at])
        out.extend(hunk.new)
        cursor = at + len(hunk.old)
    out.extend(lines[cursor:])
    return "".join(out)


def _find(lines: list[str], old: list[str], near: int, start: int) -> int | None:
    """Where ``old`` occurs in ``lines`` at or after ``start``, the place nearest ``near`` first."""
    if not old:
        return max(start, min(near + 1, len(lines)))  # a pure insertion after line `near`
    candidates = range(start, len(lines) - len(old) + 1)
    for at in sorted(candidates, key=lambda i: abs(i - near)):
        if lines[at:at + len(old)] == old:
            return at
    return None


# --- verdicts -----------------------------------------------------------------

def same_observation(exercise: Exercise, a: Any, b: Any) -> bool:
    """Whether two sides' observations agree, within the exercise's tolerance (NaN equals NaN)."""
    if _equal(a, b):
        return True
    try:
        return answers.matches(exercise.kind, a, b, exercise.tolerance)
    except (TypeError, ValueError, AttributeError):
        return False


def _equal(a: Any, b: Any) -> bool:
    """Equal values, NaN counted equal to NaN (lists compared item by item)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


#: A check marks evidence it knows is not reproducible by saying so in its title (modules_containers:
#: "A fresh torch.empty(64, 128), unfilled (varies from run to run)"); such tables and series are never
#: compared. (Forked from one worker, the clean code's two runs may even see the same garbage.)
VARIES_MARK = "varies from run to run"
#: Evidence cells that read as numbers agree within this relative difference: float rounding of another,
#: equally correct, order of operations, and the small jitter of a memory reading that happened to agree
#: on the clean code's two runs (seq-sweep's "extra MiB": 24.1 on both, 24.0 on the reverse edit,
#: measured). A faked value is far further off ...
EVIDENCE_REL_TOL = 1e-2
#: ... or this absolute one (a difference that should be 0 but is rounding, e.g. 1e-7).
EVIDENCE_ABS_TOL = 1e-6


def first_difference(ours: list, theirs: list, ours_name: str = YOURS, theirs_name: str = "clean",
                     repeat: list | None = None, tolerance: float = 0.0) -> str | None:
    """The first evidence row where two sides differ, named in one sentence; None when they agree.

    Tables are paired by title and compared row by row, cell by cell;
    series by title, point by point; notes are commentary and never compared,
    nor is a table or series whose title says it varies (:data:`VARIES_MARK`).
    Cells that read as numbers agree within :data:`EVIDENCE_REL_TOL`,
    :data:`EVIDENCE_ABS_TOL` or ``tolerance``; others must be equal. A table
    or series on one side only is a difference.

    Args:
        ours, theirs: two sides' evidence lists (yours, clean).
        ours_name, theirs_name: how the sentence names them.
        repeat: a second run of the same code as ``theirs`` (the side
            ``repeat``), or None. Only a row or point that ``theirs`` and
            ``repeat`` give exactly alike is compared: what the same code
            does not reproduce exactly (a timing, a memory reading) is not
            held against ``ours``. (Measured: the same code in one request
            reproduces every other row exactly.)
        tolerance: the exercise's tolerance, for numeric cells.
    """
    theirs_items = {_item_key(item): item for item in theirs if isinstance(item, dict)}
    repeat_items = {_item_key(item): item for item in (repeat or []) if isinstance(item, dict)}
    ours_keys = set()
    for item in ours:
        if not isinstance(item, dict) or item.get("type") == "note" or VARIES_MARK in str(item.get("title", "")):
            continue
        key = _item_key(item)
        ours_keys.add(key)
        other = theirs_items.get(key)
        kind, title = key
        if other is None:
            if repeat is not None and key in repeat_items:
                continue  # the clean code itself gave it on one run and not the other
            return f"{kind} {title!r} is on the {ours_name} side only"
        again = repeat_items.get(key) if repeat is not None else None
        if kind == "table":
            rows, other_rows = item.get("rows", []), other.get("rows", [])
            again_rows = again.get("rows", []) if again is not None else None
            for n, (row, other_row) in enumerate(zip(rows, other_rows), start=1):
                if again_rows is not None and (n > len(again_rows) or other_row != again_rows[n - 1]):
                    continue  # this row of the clean code does not reproduce exactly: a timing, a reading
                if not _rows_agree(row, other_row, tolerance):
                    name = next((str(c) for c in row if not str(c).isdigit()), "")
                    label = f"row {n}" + (f" ({name})" if name else "")
                    return f"table {title!r}, {label}: " + _changed_cells(row, other_row, item.get("columns", []),
                                                                          ours_name, theirs_name, tolerance)
            if len(rows) != len(other_rows) and (again_rows is None or len(again_rows) == len(other_rows)):
                return (f"table {title!r} has {len(rows)} rows on the {ours_name} side and "
                        f"{len(other_rows)} on the {theirs_name} side")
        elif kind == "series":
            values, other_values = item.get("values", []), other.get("values", [])
            again_values = again.get("values", []) if again is not None else None
            for n, (v, w) in enumerate(zip(values, other_values), start=1):
                if again_values is not None and (n > len(again_values) or not _equal(w, again_values[n - 1])):
                    continue
                if not _numbers_agree(v, w, tolerance):
                    return f"series {title!r}, point {n}: {ours_name} {v:.6g} · {theirs_name} {w:.6g}"
            if len(values) != len(other_values) and (again_values is None or len(again_values) == len(other_values)):
                return f"series {title!r} has {len(values)} points on the {ours_name} side and {len(other_values)} " \
                       f"on the {theirs_name} side"
    for key in theirs_items:
        if key not in ours_keys and key[0] != "note" and (repeat is None or key in repeat_items) and \
                VARIES_MARK not in key[1]:
            return f"{key[0]} {key[1]!r} is on the {theirs_name} side only"
    return None


def _number(cell: Any) -> float | None:
    """A cell as a float when it reads as one ("0.25", "1.2e-07", "804,224", "12.5%"), else None."""
    if isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        return float(cell)
    text = str(cell).strip().rstrip("%").replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def _numbers_agree(a: Any, b: Any, tolerance: float = 0.0) -> bool:
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return _equal(a, b) or str(a) == str(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= max(tolerance, EVIDENCE_ABS_TOL, EVIDENCE_REL_TOL * max(abs(x), abs(y)))


def _rows_agree(row: list, other: list, tolerance: float = 0.0) -> bool:
    return len(row) == len(other) and all(_numbers_agree(a, b, tolerance) for a, b in zip(row, other))


def _item_key(item: dict) -> tuple[str, str]:
    kind = str(item.get("type", "?"))
    return kind, str(item.get("text" if kind == "note" else "title", ""))


def _changed_cells(row: list, other: list, columns: list, ours_name: str, theirs_name: str,
                   tolerance: float = 0.0) -> str:
    """The cells two rows of one table differ in: ``column: yours A · clean B``, joined by "; "."""
    if len(row) != len(other):
        return f"{ours_name} {', '.join(map(str, row))} · {theirs_name} {', '.join(map(str, other))}"
    names = list(columns) if len(columns) == len(row) else [f"cell {i}" for i in range(1, len(row) + 1)]
    return "; ".join(f"{name}: {ours_name} {a} · {theirs_name} {b}"
                     for name, a, b in zip(names, row, other) if not _numbers_agree(a, b, tolerance))


@dataclass(frozen=True)
class Verdict:
    """What the learner's side came to, measured.

    Attributes:
        mode: ``fix``, ``break`` or ``hunt``.
        status: fix and hunt: ``fixed`` or ``not fixed``; break:
            ``changed`` (your fault changed the observation) or ``unchanged``;
            any mode: ``could not run`` when the clean side did not measure,
            ``syntax error`` when the learner's file does not compile (not run).
        sentence: one sentence for the learner.
        difference: the first evidence row where yours and clean differ, or None.
        yours_status: how the learner's side ended (``ok``, ``error``, ``timeout``, or ``missing``).
        yours_observed: its observation (status ok), else None.
        yours_error: one sentence when it did not measure, else None.
        prediction_correct: break only: whether the learner's prediction (in
            the exercise's kind) matches their side's observation; None for
            free text or no prediction.
        seeds: the seeds the verdict was judged at: the run's own first,
            then any hidden ones (:func:`judge_hidden`).
        hidden_seeds: those of ``seeds`` drawn for this verdict alone,
            which nobody saw before.
    """

    mode: str
    status: str
    sentence: str
    difference: str | None = None
    yours_status: str = "missing"
    yours_observed: Any = None
    yours_error: str | None = None
    prediction_correct: bool | None = None
    seeds: tuple = ()
    hidden_seeds: tuple = ()

    @property
    def fixed(self) -> bool | None:
        """Fix and hunt: whether it is fixed; None for a break or a run that could not measure clean."""
        if self.mode == "break" or self.status == "could not run":
            return None
        return self.status == "fixed"

    @property
    def ran(self) -> bool:
        """Whether the verdict is a measurement (the file compiled and clean measured): an attempt to record."""
        return self.status not in ("could not run", "syntax error")

    def to_dict(self) -> dict:
        return {"mode": self.mode, "status": self.status, "sentence": self.sentence, "fixed": self.fixed,
                "difference": self.difference, "prediction_correct": self.prediction_correct,
                "seeds": list(self.seeds), "hidden_seeds": list(self.hidden_seeds)}


def _yours(result) -> tuple[str, Any, str | None]:
    """How the learner's side ended: (status, observation, error sentence)."""
    if YOURS in result.observations:
        return "ok", result.observations[YOURS], None
    error = result.errors.get(YOURS)
    if error is None:
        return "missing", None, result.errors.get("run") or "your side did not run"
    status = "timeout" if "did not finish within" in error else "error"
    return status, None, error


def _clean_runs(result) -> tuple[list, list | None]:
    """The clean code's observations in this run (clean, then repeat when it measured) and the repeat's evidence."""
    runs = [result.observations["clean"]]
    if REPEAT in result.observations:
        runs.append(result.observations[REPEAT])
        return runs, result.evidence.get(REPEAT, [])
    return runs, None


def _difference(exercise: Exercise, result) -> str | None:
    """The first reproducible evidence row where yours and clean differ (:func:`first_difference`)."""
    _, repeat = _clean_runs(result)
    return first_difference(result.evidence.get(YOURS, []), result.evidence.get("clean", []),
                            repeat=repeat, tolerance=exercise.tolerance)


def evidence_reproduces(result) -> bool:
    """Whether the clean code's evidence came out exactly alike on its two runs (clean and repeat).

    True without a repeat run. False for a check that measures time or
    memory (phase-ledger, seq-sweep, ...): its evidence cannot tell a
    learner's change from the machine's jitter, so only its observation
    counts towards a verdict.
    """
    _, repeat = _clean_runs(result)
    return repeat is None or repeat == result.evidence.get("clean", [])


def _varies(exercise: Exercise, runs: list) -> str:
    """A clause naming a clean observation that differed between its two runs, else ""."""
    if len(runs) > 1 and not same_observation(exercise, runs[0], runs[1]):
        return (f" (the clean code itself observed {answers.show(exercise.kind, runs[0])} and "
                f"{answers.show(exercise.kind, runs[1])} on two runs: this measurement varies from run to run)")
    return ""


def judge(exercise: Exercise, result, mode: str = "fix") -> Verdict:
    """The fix (or hunt) verdict a run's result gives: does the learner's side behave like the clean code?

    **Fixed** when the learner's side measured (nothing raised, no timeout)
    and

    * its observation equals the clean code's within ``exercise.tolerance``
      (:func:`same_observation`) — the clean side's, or the ``repeat``
      side's (a second run of the clean code: a measurement that varies from
      run to run, a timing, is matched by either of its clean outcomes); and
    * when the clean code's evidence reproduces exactly on its two runs
      (:func:`evidence_reproduces`: every check but those that time or weigh
      memory), the learner's evidence agrees with it row by row
      (:func:`first_difference`): a repair that returns a constant matching
      the observation still shows in the evidence behind it.

    Otherwise **not fixed**, naming the first evidence row that differs (or
    the error that stopped the learner's side). **Could not run** when the
    clean side did not measure (the run was cancelled, or the check failed).

    Args:
        exercise: the exercise as run.
        result: a :class:`tutor.runner.RunResult` holding the sides ``clean``,
            ``yours`` and (optionally) ``repeat``.
        mode: ``fix`` or ``hunt``.
    """
    status, observed, error = _yours(result)
    if "clean" not in result.observations:
        why = result.errors.get("clean") or result.errors.get("run") or f"the run ended {result.status}"
        return Verdict(mode, "could not run", f"the clean side did not measure, so nothing to compare with: {why}",
                       yours_status=status, yours_observed=observed, yours_error=error)
    runs, _ = _clean_runs(result)
    clean = runs[0]
    kind = exercise.kind
    if status != "ok":
        return Verdict(mode, "not fixed", f"not fixed: your side did not finish — {error}",
                       yours_status=status, yours_error=error)
    difference = _difference(exercise, result)
    varies = _varies(exercise, runs)
    matched = next((run for run in runs if same_observation(exercise, observed, run)), None)
    if matched is not None and (difference is None or not evidence_reproduces(result)):
        what = "every audit link holds" if mode == "hunt" else "it observes what the clean code observes"
        jitter = "" if difference is None else (
            f" (its evidence differs at {difference}, but the clean code's own evidence varies from run to run, "
            "so only the observation counts)")
        return Verdict(mode, "fixed", f"fixed: {what}, {answers.show(kind, matched)}{varies}{jitter}", difference,
                       status, observed)
    if matched is not None:
        return Verdict(mode, "not fixed", f"not fixed: yours observes {answers.show(kind, observed)} as the clean "
                       f"code does, but the evidence behind it differs — {difference}", difference, status, observed)
    where = f"; first difference: {difference}" if difference else ""
    return Verdict(mode, "not fixed", f"not fixed: yours observes {answers.show(kind, observed)}, "
                   f"clean observes {answers.show(kind, clean)}{varies}{where}", difference, status, observed)


def hidden_sides(sides: tuple[Side, ...]) -> tuple[Side, ...]:
    """The sides a hidden seed's run needs: every one but ``faulted`` (the verdict compares yours with clean)."""
    return tuple(side for side in sides if side.name != "faulted")


def judge_hidden(exercise: Exercise, verdict: Verdict, seed: int, hidden: list[tuple[int, Any]],
                 mode: str = "fix") -> Verdict:
    """A fixed verdict judged again at hidden seeds: still fixed only if it is fixed at every one.

    A repair that computes what the clean code computes is fixed at any
    seed; a file that hard-codes the clean output of the seed it was shown
    is not, wherever the check's inputs follow the seed. The verdict says
    which seeds were used, and says so when the check's clean evidence was
    the same at every seed (then the hidden seeds could not tell more).

    Args:
        exercise: the exercise as run.
        verdict: the verdict at the run's own seed (:func:`judge`).
        seed: that seed.
        hidden: ``(seed, RunResult)`` for each hidden seed, sides as
            :func:`hidden_sides`.
        mode: ``fix`` or ``hunt``.
    """
    seeds = tuple([seed] + [s for s, _ in hidden])
    drawn = tuple(s for s, _ in hidden)
    if not verdict.fixed or not hidden:
        return replace(verdict, seeds=seeds if verdict.fixed else (seed,), hidden_seeds=drawn if verdict.fixed else ())
    same_everywhere = True
    first_clean = None
    for hidden_seed, result in hidden:
        again = judge(exercise, result, mode)
        clean = result.evidence.get("clean")
        first_clean = clean if first_clean is None else first_clean
        same_everywhere = same_everywhere and clean == first_clean
        if again.status == "could not run":
            return replace(verdict, status="not fixed", seeds=seeds, hidden_seeds=drawn,
                           sentence=f"not judged: at hidden seed {hidden_seed} {again.sentence}")
        if not again.fixed:
            body = again.sentence.removeprefix("not fixed: ")
            return replace(again, sentence=f"not fixed at hidden seed {hidden_seed} (fixed at seed {seed}, the one "
                           f"you could see): {body}", seeds=seeds, hidden_seeds=drawn)
    listed = ", ".join(str(s) for s in drawn)
    caveat = " (this check's clean evidence is the same at every seed, so they could not tell more)" \
        if same_everywhere and len(hidden) > 1 else ""
    return replace(verdict, sentence=f"{verdict.sentence}; fixed at hidden seed{'s' if len(drawn) > 1 else ''} "
                   f"{listed} too{caveat}", seeds=seeds, hidden_seeds=drawn)


def read_break_prediction(exercise: Exercise, prediction: str | None) -> tuple[Any, str | None]:
    """A break prediction: (the parsed value, or None for free text; the text as kept).

    A prediction that reads as the exercise's kind is graded against the
    learner's side; anything else is kept as free text and not graded.
    """
    if prediction is None or not prediction.strip():
        return None, None
    try:
        parsed = exercise.parse_answer(prediction)
    except answers.AnswerError:
        return None, prediction.strip()
    return parsed, answers.show(exercise.kind, parsed)


def observe_break(exercise: Exercise, result, prediction: str | None = None) -> Verdict:
    """What the learner's own fault did: their side's observation against clean's, and the prediction graded.

    Status ``changed`` when the learner's side raised, timed out or observed
    something other than clean (their fault shows), ``unchanged`` when it
    observed what clean does (the check cannot see their fault).
    """
    status, observed, error = _yours(result)
    if "clean" not in result.observations:
        why = result.errors.get("clean") or result.errors.get("run") or f"the run ended {result.status}"
        return Verdict("break", "could not run", f"the clean side did not measure: {why}",
                       yours_status=status, yours_observed=observed, yours_error=error)
    clean = result.observations["clean"]
    parsed, _ = read_break_prediction(exercise, prediction)
    correct = None
    if parsed is not None:
        correct = status == "ok" and answers.matches(exercise.kind, parsed, observed, exercise.tolerance)
    elif prediction and status == "error" and exercise.kind != "text":
        correct = _predicted_exception(prediction, error)
    kind = exercise.kind
    if status != "ok":
        return Verdict("break", "changed", f"your fault stops the check: {error}", yours_status=status,
                       yours_error=error, prediction_correct=correct)
    difference = _difference(exercise, result)
    runs, _ = _clean_runs(result)
    if any(same_observation(exercise, observed, run) for run in runs):
        where = f"; the evidence diverges at {difference}" if difference else "; the evidence is the same too"
        return Verdict("break", "unchanged", f"your fault leaves the observation as it is "
                       f"({answers.show(kind, observed)}){where}", difference, status, observed,
                       prediction_correct=correct)
    where = f"; first divergence: {difference}" if difference else ""
    return Verdict("break", "changed", f"your fault changes the observation: {answers.show(kind, clean)} → "
                   f"{answers.show(kind, observed)}{where}", difference, status, observed,
                   prediction_correct=correct)


def _predicted_exception(prediction: str, error: str | None) -> bool | None:
    """A free-text break prediction that names an exception, graded against what the learner's side raised.

    None when the prediction is not an exception name.
    """
    try:
        name = answers.parse("error", prediction)
    except answers.AnswerError:
        return None
    raised = (error or "").split(":", 1)[0].strip()
    return name.lower() == raised.lower()


def instruments_holding(result) -> list[dict]:
    """The instruments run's rows: per link, how it ended on each side (``holds``, ``fails``, ``skip``).

    Reads the ``Instruments`` table the :data:`INSTRUMENTS_CHECK` check returns
    on each side; a side that did not measure gives its error instead.
    """
    sides = [s for s in ("clean", "faulted", YOURS) if s in result.evidence or s in result.errors]
    rows: dict[str, dict] = {}
    for side in sides:
        for item in result.evidence.get(side, []):
            if item.get("type") == "table" and str(item.get("title", "")).startswith("Instruments"):
                for row in item.get("rows", []):
                    entry = rows.setdefault(row[0], {"link": row[0]})
                    entry[side] = row[1]
                    entry[f"{side}_verdict"] = row[2] if len(row) > 2 else ""
    return list(rows.values())


def first_instrument_divergence(result) -> str | None:
    """The first instrument whose status on the learner's engine differs from the clean engine's, in one
    sentence ("CAUSALITY: holds on clean, fails on yours — ..."), or None when every one agrees."""
    for row in instruments_holding(result):
        clean, yours = row.get("clean"), row.get(YOURS)
        if clean != yours:
            why = row.get(f"{YOURS}_verdict", "") if yours == "fails" else row.get("clean_verdict", "")
            return f"{row['link']}: {clean or 'did not run'} on clean, {yours or 'did not run'} on yours" + \
                (f" — {why}" if why else "")
    return None
