"""An edit-mode run uses a plain run for its sides and records only its own, measured verdict."""

from __future__ import annotations

from tutor.app.run import EditRun, Run
from tutor.app.session import Session
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import grade
from tutor.store.progress import ProgressStore


def ok(value) -> SideResult:
    return SideResult(status="ok", observed=value, duration_s=0.1)


def timed_out() -> SideResult:
    return SideResult(status="timeout", error="the check did not finish within 3 s", duration_s=3.0)


class CleanTimesOut:
    """Every run: the clean code (and its repeat) time out, the faulted side and yours measure."""

    def __init__(self):
        self.cancels = 0

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None):
        results = {s.name: ok([3]) for s in sides}
        results.update(clean=timed_out(), repeat=timed_out())
        return grade(exercise, Answer(job=1, torch="t", device="cpu", duration_s=3.0, sides=results), prediction, seed)

    def warm_up(self):
        return {}

    def cancel(self):
        self.cancels += 1

    def close(self):
        pass


def test_a_fix_whose_clean_side_times_out_saves_no_attempt(tmp_path, catalog):
    store = ProgressStore(tmp_path)
    session = Session(catalog, CleanTimesOut(), store, "ada")
    session.load()
    ex = catalog.get("gather-repeat")  # observed on the clean side, with a fault to fix
    assert ex.observe == "clean" and catalog.fault_of(ex) is not None
    task = session.edit_task(ex, "fix")
    outcome = session.start_edit(task, task.clean).execute()
    assert outcome.result.status == "timeout"
    assert outcome.verdict.status == "could not run" and not outcome.verdict.ran
    assert outcome.saved_to is None
    assert store.load("ada").of(ex.id).attempts == []        # no phantom prediction, no edit attempt


def test_an_edit_run_is_made_of_a_run_that_records_nothing(tmp_path, catalog):
    session = Session(catalog, CleanTimesOut(), ProgressStore(tmp_path), "ada")
    task = session.edit_task(catalog.get("head-split"), "fix")
    run = session.start_edit(task, task.clean)
    assert isinstance(run, EditRun) and not isinstance(run, Run)
    assert isinstance(run.run, Run) and run.run.record is False and run.record is True
    assert [s.name for s in run.run.sides] == ["clean", "repeat", "faulted", "yours"]
    run.cancel()
    assert run.cancelled and session.runner.cancels == 1
