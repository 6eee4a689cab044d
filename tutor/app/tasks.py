"""Edit mode: the learner repairs a fault (fix), writes one (break) or hunts a hidden one (hunt).

DESIGN.md, "The learner's own code". Until now a learner only predicted what
someone else's fault would do; here the learner's own text is the subject.
Whatever mode, the learner's file is one more *side* of a run —
``Side.replacing("yours", path, text)`` — built and checked in the same
sandbox as ``clean`` and ``faulted`` (:mod:`tutor.sandbox.worker`), and the verdict
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

This module says what a task starts from (:class:`Task`) and the sides of
its run. The learner's diff, a unified patch applied to the starting file
and a syntax check that names the line are :mod:`tutor.model.patch`'s; the
verdict read off a :class:`tutor.sandbox.runner.RunResult` is
:mod:`tutor.model.verdict`'s. Running and recording are
:class:`tutor.app.session.Session`'s (``fix``, ``break_it``, ``hunt``);
working copies are the progress store's. Layers: imports neither torch nor
Textual.
"""


from __future__ import annotations

from dataclasses import dataclass, replace

from exercises.faults import Fault, applied, source_root
from exercises.mysteries import hidden_fault
from tutor.model.catalog import Catalog, Exercise
from tutor.model.patch import EditError, unified_diff
from tutor.model.verdict import REPEAT, YOURS
from tutor.sandbox.protocol import Side

#: The file a break or hunt edits when the exercise names none (no fault): the GPT itself.
DEFAULT_SUBJECT = "engine/model.py"
#: The check that audits the tree's own engine (hunt, and break on the capstone).
HUNT_CHECK = "edit_mode.hunt"
#: The check that runs the engine's instruments on the tree's GPT (engine exercises).
INSTRUMENTS_CHECK = "edit_mode.instruments"
#: Wall-clock limit for the instruments run, seconds.
INSTRUMENTS_TIMEOUT_S = 60.0


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
        line: the line (1-based) an editor opens the file at: the first line
            the exercise's fault changes (fix, and break on an exercise with a
            fault, where the learner's own fault belongs), else 1. A hunt opens
            at line 1, so the place does not give the hidden fault away.
    """

    mode: str
    exercise: Exercise
    path: str
    start: str
    clean: str
    fault: Fault | None = None
    seed: int | None = None
    hidden: bool = False
    line: int = 1

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

    def hidden_sides(self, text: str) -> tuple[Side, ...]:
        """The sides a hidden-seed run of the learner's ``text`` needs, in every path that judges one
        (``tutor fix``, ``grade --fixes``, ``gradescope``, the TUI): clean, its repeat and yours —
        never the faulted side, whose fault a hidden-seed verdict does not compare against."""
        return tuple(side for side in self.sides(text) if side.fault is None)


def fault_line(fault: Fault, clean: str) -> int:
    """The first line (1-based) of ``clean`` that ``fault`` changes; 1 when it changes none.

    Raises:
        FaultError: the fault does not apply to ``clean``.
    """
    return first_changed_line(clean, applied(fault, clean))


def first_changed_line(clean: str, faulted: str) -> int:
    """The first line (1-based) where ``faulted`` differs from ``clean``; 1 where none does."""
    for number, (was, now) in enumerate(zip(clean.splitlines(), faulted.splitlines()), start=1):
        if was != now:
            return number
    return 1


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
    faulted = applied(fault, clean)
    return Task("fix", exercise, fault.file, faulted, clean, fault, seed, line=first_changed_line(clean, faulted))


def break_task(catalog: Catalog, exercise: Exercise, seed: int | None = None) -> Task:
    """Break it: the clean subject file of the exercise, for the learner to write their own fault.

    The file is the one the exercise's fault edits, else :data:`DEFAULT_SUBJECT`.
    On the capstone the check is the audit of the edited engine.
    """
    fault = catalog.fault_of(exercise)
    path = fault.file if fault else DEFAULT_SUBJECT
    clean = subject_text(path)
    run_as = replace(exercise, check=HUNT_CHECK) if exercise.seed_per_attempt else exercise
    return Task("break", run_as, path, clean, clean, None, seed, line=fault_line(fault, clean) if fault else 1)


def hunt_task(catalog: Catalog, exercise: Exercise, seed: int) -> Task:
    """Find and fix (the capstone): the file that carries the mystery's hidden fault, fault applied.

    The mystery of ``seed`` is the capstone's (``exercises.mysteries.hidden_fault``);
    a seed whose mystery is the clean engine has nothing to find, so the hunt
    takes the next seed that hides a fault.
    """
    while (fault_id := hidden_fault(seed)) == "none":
        seed += 1
    fault = catalog.faults[fault_id]
    clean = subject_text(fault.file)
    run_as = replace(exercise, check=HUNT_CHECK)
    return Task("hunt", run_as, fault.file, applied(fault, clean), clean, fault, seed,
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
