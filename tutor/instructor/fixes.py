"""Fix-mode submissions in a batch: ``tutor grade --fixes DIR``.

``DIR`` holds one folder per learner (the folder's name is the learner: a
name or an e-mail address; two folders that are one learner, ``ada`` and
``ADA``, are both refused), and in it one file per exercise: the whole
repaired subject file as ``<exercise-id>.py``, or a unified diff against the
faulted file as ``<exercise-id>.diff`` (or ``.patch``). Every submission is
run on one warm worker — torch is imported once for the whole batch — as
``tutor fix`` runs it: the learner's file is the side ``yours``, and it is
fixed when it observes what the clean subject observes.

A repair is also checked at hidden seeds: an assignment's ``hidden_seeds``
for the exercise, and :data:`HIDDEN_SEEDS` more drawn afresh for each
grading (``--hidden-seeds``), so a seed a learner once learned is never all
there is. It counts as fixed only when it is fixed at the check's own seed
and at every hidden one. The feedback never names a hidden seed nor what was
measured at one (:func:`tutor.model.verdict.judge_hidden`).

A folder's files carry no submission time a grader can trust (a file's
modification time is the learner's to set): their rows have none, and the
grading's own time stamps its results; ``tutor gradescope`` takes the time
from Gradescope's metadata.

The rows go to the same gradebook and results.json as predictions (mode
``fix``; the answer cell holds the learner's diff), and with ``--save`` to
the learner's progress file as ``tutor fix`` saves them, once per
submission.

Layers: imports neither torch nor Textual.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import replace
from pathlib import Path

from tutor.app.session import Session
from tutor.instructor.answer_rows import AnswerRow
from tutor.instructor.grade import RowResult, points_for
from tutor.model import patch as edit
from tutor.model.attempts import ProgressError
from tutor.model.errors import UsageError
from tutor.sandbox.runner import DeviceError, UnconfinedError, WorkerError
from tutor.store.names import learner_key, validate_learner

#: The endings of a submitted file, and what they hold.
ENDINGS = {".py": "file", ".diff": "patch", ".patch": "patch"}

#: Largest submitted file read, in bytes.
MAX_SUBMISSION_BYTES = 4 * 1024 * 1024


def find(folder: Path, catalog) -> list:
    """The submissions in ``folder``: AnswerRows of mode ``fix``, one per learner and exercise, sorted.

    Each learner folder is opened once, without following a link, and its files are read relative to
    that descriptor (:func:`read_at`); a folder whose path is no longer DIR's own real path and its name
    once read (moved, or swapped for a link while the batch read it) is refused by name.
    Only a regular file that really lies in its learner's folder is a submission: a symbolic link (a
    file or a learner folder that points at a classmate's), a file with a second hard link, or anything
    not a plain file is a refused row with the sentence why, never graded as its learner's work. A file that cannot be a submission (an unknown exercise,
    a learner folder name that is not allowed, a file that is not UTF-8) is an unreadable row with its
    reason. Byte-identical files of different learners are graded each, and each row names the
    others in ``same_as`` (:func:`mark_identical`).

    Raises:
        UsageError: ``folder`` is not a folder, or holds no learner folders.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"there is no folder {folder}; --fixes takes a folder with one folder per learner")
    try:
        root_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{folder} cannot be read ({exc.strerror or exc}); --fixes takes a folder you may read "
                         "with one folder per learner") from None
    try:
        return _find_in(folder, root_fd, catalog)
    finally:
        os.close(root_fd)


def _find_in(folder: Path, root_fd: int, catalog) -> list:
    """:func:`find` in the folder open at ``root_fd``: each learner folder opened once, without following a link,
    and each of its files opened relative to that descriptor, so a folder swapped for a link while the batch
    reads it is never read through."""
    real_root = opened_path(root_fd) or os.path.realpath(folder)
    with os.scandir(root_fd) as listing:
        learners = sorted(entry.name for entry in listing if not entry.name.startswith(".")
                          and (entry.is_dir(follow_symlinks=False) or entry.is_symlink()))
    if not learners:
        raise UsageError(f"{folder} holds no learner folders; put each learner's files in a folder named after them")
    rows: list = []
    for name in learners:
        mine = folder / name
        try:
            mine_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
        except OSError as exc:  # a link (ELOOP, or ENOTDIR for a link to a file), or nothing to read
            linked = exc.errno == errno.ELOOP or _is_link(root_fd, name)
            row = _row(len(rows) + 1, mine, mine)
            row.exercise = None
            shown = shown_name(f"{folder.name}/{name}")
            row.problem = (f"{shown} is a symbolic link, not a folder of its own; it is not graded as this "
                           "learner's work (hand in a copy of the files themselves)" if linked else
                           f"{shown} cannot be read ({exc.strerror or exc}); it is not graded")
            row.refused, row.answer = row.learner, "refused"
            rows.append(row)
            continue
        try:
            mine_rows = _learner_rows(mine, mine_fd, len(rows), catalog)
            if opened_path(mine_fd) not in (None, os.path.join(real_root, name)):
                mine_rows = [_swapped(row, mine) for row in mine_rows]
        finally:
            os.close(mine_fd)
        rows += mine_rows
    refuse_one_learner_in_two_folders(rows)
    mark_identical(rows)
    return rows


def _row(line: int, mine: Path, path: Path) -> AnswerRow:
    """The row of ``path`` in the learner folder ``mine``: its learner and exercise as named, or why not."""
    row = AnswerRow(line=line, learner=shown_name(mine.name), exercise=shown_name(path.stem), mode="fix")
    if row.learner != mine.name:
        row.problem = (f"the learner folder {row.learner} has a name that is not UTF-8; rename it in UTF-8 "
                       "(the learner's name or e-mail address)")
    elif row.exercise != path.stem:
        row.problem = (f"{row.learner}/{shown_name(path.name)} has a name that is not UTF-8; name it after "
                       "the exercise (ID.py or ID.diff)")
    else:
        try:
            row.learner = validate_learner(mine.name)
            row.key = learner_key(row.learner)
        except ProgressError as exc:
            row.problem = str(exc)
    return row


def _learner_rows(mine: Path, mine_fd: int, line: int, catalog) -> list:
    """The rows of the learner folder open at ``mine_fd`` (``mine`` names it), numbered after ``line``: each
    file read through the descriptor (:func:`read_at`), never by its path."""
    rows = []
    for name in sorted(n for n in os.listdir(mine_fd) if not n.startswith(".")):
        try:
            if stat.S_ISDIR(os.stat(name, dir_fd=mine_fd, follow_symlinks=False).st_mode):
                continue  # a folder inside a learner's folder is not a submission
        except OSError:
            pass  # gone since the listing: read_at says so
        path = mine / name
        row = _row(line + len(rows) + 1, mine, path)
        raw, refused = read_at(mine_fd, name, shown_name(f"{mine.name}/{name}"))
        if refused is not None:
            row.exercise = exercise_id(catalog, row.exercise)
            row.problem, row.refused, row.answer = refused, shown_name(name), "refused"
            rows.append(row)
            continue
        kind = ENDINGS.get(path.suffix.lower())
        if row.problem is None and kind is None:
            row.problem = (f"{path.name} is neither a repaired file (ID.py) nor a patch (ID.diff); "
                           "name it after the exercise")
        if row.problem is None:
            try:
                row.exercise = catalog.get(path.stem.lower()).id
            except KeyError as exc:
                row.problem = exc.args[0]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            row.problem = row.problem or f"{path.name} is not UTF-8 text; save it as UTF-8"
        row.text = text
        row.answer = f"{kind}:{hashlib.sha256(raw).hexdigest()[:16]}"  # the submission's identity
        row.note = kind
        rows.append(row)
    return rows


def _swapped(row: AnswerRow, mine: Path) -> AnswerRow:
    """``row`` refused: its learner folder was moved or replaced while the batch read it."""
    row.problem = (f"{shown_name(mine.name)} was moved or replaced while it was being read; it is not graded "
                   "(leave the hand-in folders alone while grading runs, then grade it again)")
    row.refused, row.answer, row.text = row.refused or shown_name(mine.name), "refused", None
    return row


def _is_link(folder_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def opened_path(fd: int) -> str | None:
    """The path the kernel has for the folder or file open at ``fd`` (Linux's ``/proc/self/fd``), or None
    where it cannot say."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def refuse_one_learner_in_two_folders(rows: list) -> None:
    """Refuse every row of two (or more) learner folders whose names are one learner (``ada`` and ``ADA``:
    :func:`tutor.store.names.learner_key`), each in one sentence naming them all: which one is the learner's
    is not the grader's to guess, and the later one must never replace a classmate's work or progress."""
    folders: dict[str, set] = {}
    for row in rows:
        if row.key is not None:
            folders.setdefault(row.key, set()).add(row.learner)
    for row in rows:
        named = sorted(folders.get(row.key) or ())
        if len(named) < 2:
            continue
        row.problem = (f"the folders {', '.join(repr(n) for n in named)} are one learner (names that differ only "
                       "by case or spacing are one), so none of them is graded: keep one folder per learner")
        row.refused, row.answer, row.text = row.refused or row.learner, "refused", None


def shown_name(name: str) -> str:
    """A file name as text: itself when it is UTF-8, else its bytes with each one that is not UTF-8 as ``\\xff``
    (``os.fsdecode`` gave it as a lone surrogate, which no UTF-8 file or terminal can hold)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def read_file(path: Path, inside: Path, limit: int = MAX_SUBMISSION_BYTES,
              advice: str = "hand in the subject file only") -> tuple[bytes | None, str | None]:
    """The bytes of the submitted file ``path`` in the folder ``inside``, or None and the sentence why it is
    refused: ``inside`` is opened once and the file read relative to it (:func:`read_at`); a file that does
    not lie directly in ``inside`` is refused."""
    name = shown_name(f"{inside.name}/{path.name}")
    if Path(os.path.abspath(path.parent)) != Path(os.path.abspath(inside)):
        return None, f"{shown_name(path.name)} does not lie inside {inside}; it is not graded"
    try:
        inside_fd = os.open(inside, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return None, f"{name} cannot be read ({exc.strerror or exc}); it is not graded"
    try:
        return read_at(inside_fd, path.name, name, limit, advice)
    finally:
        os.close(inside_fd)


def read_at(folder_fd: int, file_name: str, name: str, limit: int = MAX_SUBMISSION_BYTES,
            advice: str = "hand in the subject file only") -> tuple[bytes | None, str | None]:
    """The bytes of the file ``file_name`` in the folder open at ``folder_fd``, or None and the sentence why it
    is refused (``name``: the file as the sentence names it).

    The file is looked at and opened relative to the descriptor, without following a link (``O_NOFOLLOW``;
    nothing but a regular file is opened at all), and checked again on its own descriptor: a regular file,
    one hard link only (a second name could be a classmate's file), and at most ``limit`` bytes (else
    refused, the sentence ending in ``advice``). Whatever happens to the folder's path meanwhile, nothing is
    read through a link or from another folder.
    """
    link = (f"{name} is a symbolic link, not a file of its own; it is not graded as this learner's work "
            "(hand in a copy of the file itself)")
    not_regular = f"{name} is not a regular file; it is not graded (hand in a plain .py or .diff file)"
    try:
        kind = os.stat(file_name, dir_fd=folder_fd, follow_symlinks=False).st_mode
        if not stat.S_ISREG(kind):
            return None, link if stat.S_ISLNK(kind) else not_regular
        fd = os.open(file_name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, link
        return None, f"{name} cannot be read ({exc.strerror or exc}); it is not graded"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, not_regular
        if st.st_nlink > 1:
            return None, (f"{name} has {st.st_nlink} hard links (it is also another file, perhaps a classmate's); "
                          "it is not graded as this learner's work (hand in a copy of the file itself)")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                return None, f"{name} is larger than {limit // (1024 * 1024)} MiB; it is not graded ({advice})"
        return b"".join(chunks), None
    finally:
        os.close(fd)


def exercise_id(catalog, stem: str) -> str:
    """The catalog id a file stem names, else the stem as given."""
    try:
        return catalog.get(stem.lower()).id
    except KeyError:
        return stem


def mark_identical(rows: list) -> None:
    """Give each readable fix row ``same_as``: the other learners who handed in byte-identical text for the
    same exercise (sorted), so copies are flagged in the gradebook and never pass unnoticed."""
    by_text: dict[tuple, list] = {}
    for row in rows:
        if row.mode == "fix" and row.text is not None and row.exercise and row.key:
            digest = hashlib.sha256(row.text.encode("utf-8", "surrogatepass")).hexdigest()
            by_text.setdefault((row.exercise, digest), []).append(row)
    for same in by_text.values():
        learners = sorted({r.learner for r in same})
        if len(learners) < 2:
            continue
        for row in same:
            row.same_as = [name for name in learners if name != row.learner]


def grade_guarded(catalog, runner, row, assignment=None, store=None, save: bool = False,
                  hidden_seeds: int | None = None):
    """:func:`grade_one`, with any failure inside the grader but the machine's as that row's error
    (:func:`not_graded`): a hand-in the compiler, the verdict or the row cannot hold is its own row.

    Raises:
        tutor.sandbox.runner.WorkerError, tutor.sandbox.runner.DeviceError,
        tutor.sandbox.runner.UnconfinedError: the worker cannot run at all, or not confined.
    """
    try:
        return grade_one(catalog, runner, row, assignment, store, save, hidden_seeds)
    except (WorkerError, DeviceError, UnconfinedError):
        raise
    except Exception as exc:  # compile, decode, verdict: this hand-in's, told in its row
        return not_graded(row, exc, assignment)


#: The most of an exception's own words a row keeps when grading its submission failed.
ERROR_CHARS = 200


def not_graded(row, exc: BaseException, assignment=None) -> RowResult:
    """The row of a submission whose grading failed inside the grader (``exc``): status ``error``, score 0,
    and one sentence naming what failed; the rows after it are graded as usual."""
    try:
        said = " ".join(str(exc).split())[:ERROR_CHARS]
    except Exception:  # an exception that cannot even say itself
        said = ""
    what = type(exc).__name__ + (f": {said}" if said else "")
    return RowResult(row, "error", points=points_for(assignment, row.exercise),
                     reason=f"{row.exercise or 'this submission'} could not be graded: the grader failed on it "
                            f"({what}); it scores 0 — look at the file by hand, or grade it again alone")


def seeds_of(assignment, ex_id: str) -> tuple:
    """The hidden seeds an assignment sets for one exercise (none without an assignment)."""
    assigned = assignment.get(ex_id) if assignment is not None else None
    return assigned.hidden_seeds if assigned is not None else ()


#: Hidden seeds drawn afresh for each repair graded, beyond those its assignment lists (``--hidden-seeds``).
HIDDEN_SEEDS = 2


def grade_one(catalog, runner, row, assignment=None, store=None, save: bool = False,
              hidden_seeds: int | None = None):
    """Run one fix submission on ``runner``, then again at hidden seeds; return its RowResult.

    A repair fixed at the check's own seed is judged again, clean against the learner's side only, at
    the assignment's ``hidden_seeds`` for the exercise and at ``hidden_seeds`` more drawn now (None:
    :data:`HIDDEN_SEEDS`; :meth:`tutor.app.session.Session.start_edit`): it passes only when fixed at
    every one.

    Raises:
        tutor.sandbox.runner.WorkerError, tutor.sandbox.runner.DeviceError: the worker cannot run at all.
    """
    if row.problem is not None:
        return RowResult(row, "unreadable", reason=row.problem, points=points_for(assignment, row.exercise))
    if assignment is not None and assignment.get(row.exercise) is None:
        return RowResult(row, "not_assigned", points=0, reason=f"{row.exercise} is not in the assignment; "
                                                              "reported, not scored")
    ex = catalog.get(row.exercise)
    session = Session(catalog, runner, store if save else None, row.learner)
    points = points_for(assignment, row.exercise)
    given = seeds_of(assignment, ex.id)
    drawn = HIDDEN_SEEDS if hidden_seeds is None else hidden_seeds
    try:
        task = session.edit_task(ex, "fix")
        text = edit.apply_patch(task.start, row.text, task.path) if row.note == "patch" else row.text
        outcome = session.start_edit(task, text, record=save and store is not None,
                                     hidden_seeds=len(given) + drawn, seeds=given).execute()
    except edit.EditError as exc:
        return RowResult(row, "unreadable", reason=str(exc), points=points)
    verdict = outcome.verdict
    if verdict.status == "could not run":
        status = "error"
    else:
        status = "pass" if verdict.fixed else "fail"
    result = replace(outcome.result, observed=verdict.yours_observed if verdict.yours_status == "ok" else None,
                     correct=bool(verdict.fixed))
    reason = None if status == "pass" else verdict.sentence
    done = RowResult(row, status, reason=reason, result=result, points=points, verdict=verdict.status,
                     diff=outcome.diff or None)
    done.saved_to, done.save_error = getattr(outcome, "saved_to", None), getattr(outcome, "save_error", None)
    return done
