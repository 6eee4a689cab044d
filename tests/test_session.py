"""The session's policy (seed, what is saved, cancelled results, progress read once),
grading as a pure function, and the worker protocol — with a fake runner and
hand-made worker answers, so nothing here but the last tests needs torch."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from exercises.faults import source_root
from tutor.app import run as run_module
from tutor.store.progress import ProgressStore
from tutor.sandbox.protocol import (Answer, Hello, Measured, Progress, ProtocolError, Raised, Refusal, Request, Side,
                                    SideResult, decode, encode)
from tutor.sandbox.runner import RunResult, WorkerError, grade, standard_sides
from tutor.app.session import Session

LEARNER = "ada"


def answer(**sides: SideResult) -> Answer:
    return Answer(job=1, torch="t", device="cpu", duration_s=0.25, sides=sides)


def ok(value, evidence=None) -> SideResult:
    return SideResult(status="ok", observed=value, evidence=evidence or [], duration_s=0.1)


def failed(status="error", error="ValueError: broke (losses.py:23)") -> SideResult:
    return SideResult(status=status, error=error, exception="ValueError" if status == "error" else None)


# --- grading is a pure function of the worker's answer ----------------------------

def test_a_prediction_of_the_faulted_observation_passes_and_another_fails(catalog):
    ex = catalog.get("head-split")  # choice, graded against the faulted side
    worker_answer = answer(clean=ok("a"), faulted=ok("b"))
    right = grade(ex, worker_answer, "B)")
    assert (right.status, right.correct, right.observed, right.prediction_text) == ("pass", True, "b", "b")
    assert (right.clean, right.faulted, right.differs) == ("a", "b", True)
    wrong = grade(ex, worker_answer, "c")
    assert (wrong.status, wrong.correct, wrong.observed) == ("fail", False, "b")


def test_a_fault_that_changes_nothing_does_not_differ(catalog):
    result = grade(catalog.get("broadcast-loss"), answer(clean=ok([3]), faulted=ok([3])))
    assert result.status == "ok" and result.differs is False


def test_the_observed_side_follows_the_exercise(catalog):
    clean_graded = grade(catalog.get("gather-repeat"), answer(clean=ok([0, 1]), faulted=ok([1, 1])))
    assert clean_graded.observed == [0, 1]
    both = next(e for e in catalog.exercises if e.observe == "both")
    assert grade(both, answer(clean=ok(True), faulted=ok(False))).observed == [True, False]


def test_a_graded_side_that_did_not_measure_is_the_status_and_timeout_outranks_error(catalog):
    ex = catalog.get("broadcast-loss")
    raised = grade(ex, answer(clean=ok([3]), faulted=failed()), "(3, 3)")
    assert (raised.status, raised.correct, raised.observed, raised.differs) == ("error", None, None, None)
    assert raised.error == "faulted: ValueError: broke (losses.py:23)"
    both_bad = grade(ex, answer(clean=failed("timeout", "too slow"), faulted=failed()), "(3, 3)")
    assert both_bad.status == "timeout"


def test_a_side_that_is_not_graded_may_fail_without_failing_the_run(catalog):
    ex = catalog.get("gather-repeat")  # graded on clean
    result = grade(ex, answer(clean=ok([0, 1, 2, 3, 4, 5]), faulted=failed()), "0 1 2 3 4 5")
    assert result.status == "pass" and result.differs is None and "faulted" in result.errors


def test_a_side_beyond_clean_and_faulted_is_kept_by_name_but_not_in_the_json(catalog):
    ex = catalog.get("broadcast-loss")
    table = {"type": "note", "text": "yours"}
    result = grade(ex, answer(clean=ok([3]), faulted=ok([3, 3]), yours=ok([3], [table])), "(3, 3)")
    assert result.observations == {"clean": [3], "faulted": [3, 3], "yours": [3]}
    assert result.evidence["yours"] == [table] and result.status == "pass"
    assert "observations" not in result.to_dict() and result.to_dict()["faulted"] == [3, 3]


def test_standard_sides(catalog):
    head_split = catalog.get("head-split")
    assert standard_sides(catalog, head_split) == (Side.clean(), Side.faulted(catalog.fault_of(head_split)))
    assert [s.name for s in standard_sides(catalog, catalog.get("audit"))] == ["clean"]  # no fault


# --- the protocol ---------------------------------------------------------------------

def test_every_message_survives_the_wire(catalog):
    fault = catalog.faults["no-squeeze"]
    messages = [
        Hello(torch="2.13.0", cuda=False, pid=7, cores=2, scratch="/tmp/tutor-worker-x"),
        Request(job=3, check="shapes.broadcast_loss", device="cpu", seed=2, timeout_s=30.0,
                sides=(Side.clean(), Side.faulted(fault), Side.replacing("yours", fault.file, "x = 1\n"))),
        Progress(fraction=0.5, message="halfway", job=3, side="faulted"),
        Measured(observed=[3, 3], evidence=[{"type": "note", "text": "n"}]),
        Raised(exception="ValueError", message="broke", where="losses.py:23"),
        Raised(exception="IndexError", message="out of range", where="functional.py:2615",
               frames=("exercises/shapes.py:40", "engine/model.py:57")),
        answer(clean=ok([3]), faulted=failed()),
        Refusal(error="not a request"),
    ]
    for message in messages:
        line = encode(message)
        assert "\n" not in line
        assert decode(line) == message
    assert Raised(exception="E", message="m", where="f.py:1").sentence == "E: m (f.py:1)"


def test_a_raised_exception_is_told_at_the_learners_deepest_line():
    raised = Raised(exception="IndexError", message="out of range", where="functional.py:2615",
                    frames=("exercises/shapes.py:40", "engine/model.py:57", "engine/model.py:91"))
    assert raised.in_files(["engine/model.py"]).sentence == \
        "IndexError: out of range (engine/model.py:91 in your file; raised in functional.py:2615)"
    inner = Raised(exception="E", message="m", where="model.py:91", frames=("engine/model.py:91",))
    assert inner.in_files(["engine/model.py"]).sentence == "E: m (engine/model.py:91 in your file)"
    assert raised.in_files(["engine/data.py"]) == raised  # no frame in the learner's file: as it was


@pytest.mark.parametrize("line", ["not json", '{"type": "telegram"}', "[1, 2]", '{"type": "hello", "torch": "t"}'])
def test_a_line_that_is_no_message_is_a_protocol_error(line):
    with pytest.raises(ProtocolError):
        decode(line)


# --- the session's policy, with a fake runner ----------------------------------------------

class FakeRunner:
    """Answers every run with the observations given (graded by the real ``grade``), or raises."""

    def __init__(self, observations=None, status="ok", raises=None):
        self.observations = observations or {"clean": [3], "faulted": [3, 3]}
        self.status = status
        self.raises = raises
        self.calls = []
        self.cancels = 0

    def warm_up(self):
        return {"torch": "fake"}

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None):
        self.calls.append({"id": exercise.id, "prediction": prediction, "seed": seed, "sides": sides})
        if self.raises is not None:
            raise self.raises
        if on_progress is not None:
            on_progress(Progress(fraction=1.0, message="done", job=1, side="clean"))
        if self.status == "cancelled":
            return RunResult.cancelled(exercise, prediction, seed=seed)
        sides_ = {name: ok(value) if self.status == "ok" else failed(self.status)
                  for name, value in self.observations.items()}
        return grade(exercise, answer(**sides_), prediction, seed)

    def cancel(self):
        self.cancels += 1

    def close(self):
        pass


class CountingStore(ProgressStore):
    def __init__(self, folder):
        super().__init__(folder)
        self.loads = 0
        self.recorded_on = []

    def load(self, *args, **kwargs):
        self.loads += 1
        return super().load(*args, **kwargs)

    def record_attempt(self, *args, **kwargs):
        self.recorded_on.append(threading.current_thread().name)
        return super().record_attempt(*args, **kwargs)


def make_session(tmp_path, catalog, runner=None, store=True):
    s = Session(catalog, runner or FakeRunner(), CountingStore(tmp_path) if store else None,
                LEARNER if store else None)
    s.load()
    return s


def test_a_pass_and_a_fail_are_recorded_and_the_progress_file_is_read_once(tmp_path, catalog):
    session = make_session(tmp_path, catalog)
    ex = catalog.get("broadcast-loss")
    passed = session.attempt(ex, "3x3", note="the column broadcast against the row")
    failed_ = session.attempt(ex, "(3,)")
    assert (passed.result.status, failed_.result.status) == ("pass", "fail")
    assert passed.saved_to == tmp_path / f"{LEARNER}.toml" and passed.note_saved and not failed_.note_saved
    attempts = session.progress_of(ex.id).attempts  # kept up to date by the saves, not by a reread
    assert [(a.prediction, a.observed, a.correct, a.status) for a in attempts] == \
        [("(3, 3)", "(3, 3)", True, "pass"), ("(3,)", "(3, 3)", False, "fail")]
    assert session.progress_of(ex.id).note == "the column broadcast against the row"
    assert session.store.loads == 1
    on_disk = ProgressStore(tmp_path).load(LEARNER).of(ex.id)
    assert len(on_disk.attempts) == 2 and on_disk.note == "the column broadcast against the row"


@pytest.mark.parametrize("status", ["error", "cancelled"])  # a timeout is recorded as one (test_timeouts)
def test_an_outcome_that_is_not_a_verdict_is_never_recorded(tmp_path, catalog, status):
    session = make_session(tmp_path, catalog, FakeRunner(status=status))
    outcome = session.attempt(catalog.get("broadcast-loss"), "(3, 3)", note="kept only with an attempt")
    assert outcome.result.status == status
    assert outcome.saved_to is None and outcome.save_error is None and not outcome.note_saved
    assert not (tmp_path / f"{LEARNER}.toml").exists()


def test_an_ungraded_check_is_never_recorded(tmp_path, catalog):
    session = make_session(tmp_path, catalog)
    assert session.check(catalog.get("broadcast-loss")).status == "ok"
    assert not (tmp_path / f"{LEARNER}.toml").exists()


def test_the_capstone_seed_counts_recorded_attempts_and_the_rest_keep_zero(tmp_path, catalog):
    runner = FakeRunner(observations={"clean": "none"})
    session = make_session(tmp_path, catalog, runner)
    audit, head_split = catalog.get("audit"), catalog.get("head-split")
    for _ in range(3):
        session.attempt(audit, "none")
    runner.status = "error"
    session.attempt(audit, "none")  # not recorded: the next attempt meets the same mystery
    runner.status = "ok"
    session.attempt(audit, "none", seed=11)  # an explicit seed wins
    session.attempt(head_split, "a")
    assert [c["seed"] for c in runner.calls] == [0, 1, 2, 3, 11, 0]
    assert len(session.progress_of("audit").attempts) == 4
    reopened = make_session(tmp_path, catalog, runner)  # a new session reads the same count from the file
    assert reopened.seed_for(audit) == 4
    without_store = Session(catalog, runner)
    assert without_store.seed_for(audit) == 0


def test_a_save_that_fails_is_a_sentence_not_an_exception(tmp_path, catalog):
    (tmp_path / f"{LEARNER}.toml").write_text('format_version = 99\nlearner = "ada"\n')  # a newer tutor's file
    session = make_session(tmp_path, catalog)
    assert session.progress.read_only and "newer tutor" in session.warnings[0]
    outcome = session.attempt(catalog.get("broadcast-loss"), "(3, 3)")
    assert outcome.result.status == "pass" and outcome.saved_to is None
    assert "newer tutor" in outcome.save_error
    assert (tmp_path / f"{LEARNER}.toml").read_text() == 'format_version = 99\nlearner = "ada"\n'


def test_a_run_cancelled_before_it_starts_never_reaches_the_runner_and_is_timed(tmp_path, catalog, monkeypatch):
    clock = type("Clock", (), {"now": 50.0, "monotonic": lambda self: self.now})()
    monkeypatch.setattr(run_module, "time", clock)
    runner = FakeRunner()
    session = make_session(tmp_path, catalog, runner)
    run = session.start(catalog.get("broadcast-loss"), "3x3")
    clock.now += 1.5
    run.cancel()
    outcome = run.execute()
    assert runner.calls == [] and runner.cancels == 1
    result = outcome.result
    assert result.status == "cancelled" and result.errors == {"run": "the run was cancelled before it started"}
    assert result.duration_s == 1.5 and result.prediction_text == "(3, 3)"
    assert not (tmp_path / f"{LEARNER}.toml").exists()


def test_a_worker_that_fails_to_start_is_a_cancel_only_when_cancelled(tmp_path, catalog):
    ex = catalog.get("broadcast-loss")
    session = make_session(tmp_path, catalog, FakeRunner(raises=WorkerError("the check worker did not start")))
    with pytest.raises(WorkerError):
        session.attempt(ex, "3x3")

    class CancelledWhileStarting(FakeRunner):
        def run(self, exercise, *args, **kwargs):
            run.cancel()  # the learner pressed Esc while the worker was starting
            raise WorkerError("the check worker was stopped while it was starting")
    session = make_session(tmp_path, catalog, CancelledWhileStarting())
    run = session.start(ex, "3x3")
    result = run.execute().result
    assert result.status == "cancelled" and "while the check worker started" in result.errors["run"]


def test_sides_are_data_the_session_passes_through(tmp_path, catalog):
    runner = FakeRunner(observations={"clean": [3], "faulted": [3, 3], "yours": [3]})
    session = make_session(tmp_path, catalog, runner)
    ex = catalog.get("broadcast-loss")
    session.attempt(ex, "(3, 3)")
    assert runner.calls[0]["sides"] == standard_sides(catalog, ex)
    fault = catalog.fault_of(ex)
    yours = Side.replacing("yours", fault.file, "print('mine')\n")
    outcome = session.attempt(ex, "(3, 3)", sides=(*session.sides_for(ex), yours))
    assert runner.calls[1]["sides"][-1] == yours
    assert outcome.result.observations["yours"] == [3]


def test_without_a_store_nothing_is_read_or_saved(tmp_path, catalog):
    session = Session(catalog, FakeRunner())
    outcome = session.attempt(catalog.get("broadcast-loss"), "(3, 3)", note="not kept")
    assert outcome.result.status == "pass" and outcome.saved_to is None and not outcome.note_saved
    assert list(tmp_path.iterdir()) == []


# --- a learner's own file is one more side, through the real worker -----------------------

def test_a_side_replacing_the_subject_file_runs_in_the_same_sandbox(catalog, runner):
    ex = catalog.get("broadcast-loss")
    fault = catalog.fault_of(ex)
    clean_text = (source_root() / fault.file).read_text(encoding="utf-8")
    faulted_text = clean_text.replace(fault.before, fault.after, 1)
    session = Session(catalog, runner)
    sides = (*session.sides_for(ex), Side.replacing("fixed", fault.file, clean_text),
             Side.replacing("broken", fault.file, faulted_text),
             Side.replacing("escapes", "../outside.py", clean_text))
    result = session.check(ex, sides=sides)
    assert result.observations == {"clean": [3], "faulted": [3, 3], "fixed": [3], "broken": [3, 3]}
    assert "must lie inside one of engine/, exercises/" in result.errors["escapes"]
    assert result.status == "ok" and result.differs is True
    assert not (Path(runner.worker.hello.scratch) / "outside.py").exists()  # refused before any write


def test_overlapping_note_saves_write_the_newest_text_once(tmp_path, catalog):
    class CountingNotes(ProgressStore):
        writes: list = []

        def save_note(self, learner, exercise_id, text):
            CountingNotes.writes.append(text)
            return super().save_note(learner, exercise_id, text)
    session = Session(catalog, FakeRunner(), CountingNotes(tmp_path), LEARNER)
    session.load()

    def asked(text):
        for _ in range(500):
            if session._notes_asked.get("head-split") == text:
                return
            threading.Event().wait(0.01)
        raise AssertionError(f"{text!r} was never asked for")
    with session._lock:  # a save already in progress holds the file: both saves below must wait
        older = threading.Thread(target=session.save_note, args=("head-split", "older"))
        older.start()
        asked("older")
        newer = threading.Thread(target=session.save_note, args=("head-split", "newer"))
        newer.start()
        asked("newer")
    older.join(10)
    newer.join(10)
    assert CountingNotes.writes == ["newer"]  # whichever got the file first wrote the newest text
    assert ProgressStore(tmp_path).load(LEARNER).of("head-split").note == "newer"
    assert session.progress_of("head-split").note == "newer"
