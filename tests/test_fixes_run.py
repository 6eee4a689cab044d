"""One repair graded on a real worker (tutor.instructor.fixes.grade_one): judged at the check's seed and at
hidden seeds, as a whole file or as a patch; the rows that never run, and a patch that does not apply."""

from __future__ import annotations

import pytest

from tutor.app.session import Session
from tutor.instructor import fixes
from tutor.instructor.answer_rows import AnswerRow
from tutor.instructor.assignment import Assigned, Assignment
from tutor.model.patch import unified_diff


@pytest.fixture(scope="module")
def head_split(catalog, runner):
    ex = catalog.get("head-split")
    fault = catalog.fault_of(ex)
    task = Session(catalog, runner, None, "ada").edit_task(ex, "fix")
    return task, task.start.replace(fault.after, fault.before)


def repair(text, note="file", exercise="head-split", problem=None):
    return AnswerRow(line=2, learner="ada", key="ada", exercise=exercise, mode="fix", text=text, note=note,
                     answer=f"{note}:x", problem=problem)


def test_the_clean_file_is_fixed_at_its_seed_and_every_hidden_one(catalog, runner, head_split):
    task, clean = head_split
    plan = Assignment((Assigned("head-split", 2.0, (5,)),))
    done = fixes.grade_one(catalog, runner, repair(clean), plan, hidden_seeds=1)
    assert (done.status, done.points, done.verdict, done.reason, done.result.correct) == ("pass", 2.0, "fixed", None,
                                                                                          True)
    assert done.result.observed is not None and done.diff is None  # the clean file: no diff against it
    as_patch = fixes.grade_one(catalog, runner, repair(unified_diff(task.path, task.start, clean), "patch"))
    assert (as_patch.status, as_patch.points, as_patch.verdict) == ("pass", 1.0, "fixed")
    assert as_patch.diff is None


def test_the_faulted_file_is_not_fixed_and_says_why(catalog, runner, head_split):
    task, _ = head_split
    done = fixes.grade_one(catalog, runner, repair(task.start))
    assert (done.status, done.verdict, done.result.correct) == ("fail", "not fixed", False)
    assert done.diff.startswith("--- a/")  # the gradebook's answer cell: what differs from the clean file
    assert done.reason.startswith("not fixed: yours observes b, clean observes a;")  # the faulted and clean answers


def test_rows_that_never_run_and_a_patch_that_does_not_apply(catalog, runner):
    plan = Assignment((Assigned("head-split", 3.0),))
    unreadable = fixes.grade_one(catalog, runner, repair("x", problem="not UTF-8"), plan)
    assert (unreadable.status, unreadable.reason, unreadable.points) == ("unreadable", "not UTF-8", 3.0)
    other = fixes.grade_one(catalog, runner, repair("x", exercise="cache-offset"), plan)
    assert (other.status, other.points, other.reason) == ("not_assigned", 0,
                                                          "cache-offset is not in the assignment; reported, not scored")
    bad = fixes.grade_one(catalog, runner, repair("@@ -1 +1 @@\n-no such line\n+x\n", "patch"), plan)
    assert (bad.status, bad.points) == ("unreadable", 3.0) and bad.reason.startswith("hunk 1 (@@ -1 +1 @@) does not apply")


def test_a_repair_that_raises_or_cannot_be_patched_is_said_and_a_saved_one_names_its_file(catalog, runner, head_split,
                                                                                           tmp_path):
    from tutor.store.progress import ProgressStore
    task, clean = head_split
    broken = fixes.grade_one(catalog, runner, repair("raise RuntimeError('no model today')\n"))
    assert (broken.status, broken.verdict, broken.result.observed, broken.result.correct) == \
        ("fail", "not fixed", None, False)  # its side raised: nothing of it was observed
    assert broken.reason.startswith("not fixed: your side did not finish — RuntimeError: no model today")
    bad = fixes.grade_one(catalog, runner, repair("@@ -1 +1 @@\n-no such line\n+x\n", "patch"))
    assert bad.row.exercise == "head-split" and f"does not apply to {task.path}:" in bad.reason
    store = ProgressStore(tmp_path / "progress")
    saved = fixes.grade_one(catalog, runner, repair(clean), None, store, save=True, hidden_seeds=0)
    assert (saved.saved_to, saved.save_error) == (store.path("ada"), None)
    assert [a.mode for a in store.load("ada").of("head-split").attempts] == ["fix"]
    unsaved = fixes.grade_one(catalog, runner, repair(clean), None, ProgressStore(tmp_path / "other"),
                              hidden_seeds=0)  # saving is asked for, never the default
    assert unsaved.saved_to is None and not (tmp_path / "other").exists()


def test_a_repair_that_cannot_be_saved_says_why(catalog, runner, head_split, tmp_path):
    from tutor.store.progress import ProgressStore
    _, clean = head_split
    (tmp_path / "file").write_text("x")
    done = fixes.grade_one(catalog, runner, repair(clean), None, ProgressStore(tmp_path / "file" / "progress"),
                           save=True, hidden_seeds=0)
    assert done.status == "pass" and done.saved_to is None and done.save_error.startswith("cannot write progress to ")
