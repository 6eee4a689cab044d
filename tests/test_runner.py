"""The Runner's own decisions, with a stand-in for its worker process: no torch, no child.

What the Runner decides before and after the worker answers: a prediction or
a scale that does not read runs nothing; the device follows what the worker
sees; a runner told not to run unconfined code refuses; each request carries
its job number, seed, sides and limit (the exercise's 30 s, times the scale
that wins); a worker that dies gives an error result and one stopped on
purpose a cancelled one. The real worker is driven by
``tests/test_runner_safety.py`` and ``tests/test_timeouts.py``.
"""

from __future__ import annotations

import pytest

from tutor.model import answers
from tutor.sandbox import speed
from tutor.sandbox.protocol import Answer, Hello, Progress, Side, SideResult
from tutor.sandbox.runner import (DeviceError, Runner, UnconfinedError, WorkerError, standard_sides,
                                  unconfined_sentence)
from tutor.sandbox.speed import ScaleError

CONFINED = {"confined": True, "why": ""}


class StandIn:
    """A worker that answers from a script: its hello, and what each request gets back."""

    def __init__(self, cuda=False, confinement=None, answer=True, on_start=None, on_request=None):
        self.hello = None
        self.cuda, self.confinement = cuda, confinement or CONFINED
        self.answer, self.on_start, self.on_request = answer, on_start, on_request
        self.requests, self.starts, self.stops = [], 0, 0

    def start(self):
        self.starts += 1
        if self.on_start is not None:
            self.on_start()
        self.hello = Hello(torch="2.13.0", cuda=self.cuda, pid=1, cores=2, scratch="/nowhere",
                           confinement=self.confinement)
        return self.hello

    def request(self, request, on_progress=None):
        self.requests.append(request)
        if on_progress is not None:
            on_progress(Progress(0.5, "halfway", job=request.job, side="clean"))
        if self.on_request is not None:
            self.on_request()
        if not self.answer:
            return None
        sides = {side.name: SideResult(status="ok", observed=[4], evidence=[]) for side in request.sides}
        return Answer(job=request.job, torch="2.13.0", device=request.device, duration_s=0.5, sides=sides)

    def stop(self):
        self.stops += 1


@pytest.fixture
def exercise(catalog):
    ex = catalog.get("broadcast-loss")           # a shape, faulted, 30 s as written
    assert (ex.kind.name, ex.time_limit_s, ex.fault) == ("shape", 30.0, "no-squeeze")
    return ex


@pytest.fixture(autouse=True)
def no_environment_scale(monkeypatch):
    monkeypatch.delenv(speed.ENV, raising=False)


def runner_with(catalog, worker, **options):
    runner = Runner(catalog, **options)
    runner.worker = worker
    return runner


def test_a_run_sends_one_request_with_its_job_seed_sides_and_limit_and_grades_the_answer(catalog, exercise):
    worker = StandIn()
    runner = runner_with(catalog, worker, device="auto")
    result = runner.run(exercise, "(4,)")
    (request,) = worker.requests
    assert (request.job, request.check, request.device, request.seed) == (1, "shapes.broadcast_loss", "cpu", 0)
    assert [side.name for side in request.sides] == ["clean", "faulted"]
    assert request.timeout_s == 30.0 and request.limit_why.startswith("this exercise's 30 s as written")
    assert (result.status, result.correct, result.prediction_text, result.seed) == ("pass", True, "(4,)", 0)
    assert result.time_limit["seconds"] == 30.0 and result.time_limit["why"] == request.limit_why
    again = runner.run(exercise, seed=7, sides=[Side.clean()])
    assert (worker.requests[1].job, worker.requests[1].seed, again.seed) == (2, 7, 7)
    assert [side.name for side in worker.requests[1].sides] == ["clean"]
    assert (again.status, again.correct) == ("ok", None)


def test_the_workers_progress_reaches_the_caller(catalog, exercise):
    seen = []
    runner_with(catalog, StandIn()).run(exercise, on_progress=seen.append)
    assert seen == [Progress(0.5, "halfway", job=1, side="clean")]


def test_the_scale_that_wins_sets_the_limit(catalog, exercise, monkeypatch):
    worker = StandIn()
    runner = runner_with(catalog, worker, timeout_scale=3)
    assert runner.run(exercise).time_limit["seconds"] == 90.0          # --timeout-scale 3: 30 s × 3
    assert runner.run(exercise, timeout_scale=2).time_limit["seconds"] == 60.0   # a retry's scale wins
    assert worker.requests[-1].timeout_s == 60.0
    assert runner.time_limit(exercise).seconds == 90.0
    assert runner.time_limit(exercise, 0.5).seconds == 15.0
    with pytest.raises(ScaleError, match="^a retry's time-limit scale must be"):
        runner.time_limit(exercise, 0)
    monkeypatch.setenv(speed.ENV, "4")
    assert runner_with(catalog, StandIn()).run(exercise).time_limit["seconds"] == 120.0


def test_a_prediction_or_a_scale_that_does_not_read_runs_nothing(catalog, exercise):
    def refuse():
        raise AssertionError("the worker was started")

    runner = runner_with(catalog, StandIn(on_start=refuse))
    with pytest.raises(answers.AnswerError):
        runner.run(exercise, "not a shape")
    with pytest.raises(ScaleError, match=r"^a retry's time-limit scale must be a number above 0 such as 2 or 1\.5, "
                                         r"not '-1'$"):
        runner.run(exercise, timeout_scale="-1")
    with pytest.raises(ScaleError, match="^--timeout-scale must be"):
        Runner(catalog, timeout_scale=0)


def test_the_device_follows_what_the_worker_sees(catalog, exercise):
    assert runner_with(catalog, StandIn(cuda=False)).device == "cpu"
    assert runner_with(catalog, StandIn(cuda=True)).device == "cuda"
    assert runner_with(catalog, StandIn(cuda=True), device="cpu").device == "cpu"
    assert runner_with(catalog, StandIn(cuda=True), device="cuda").device == "cuda"
    with pytest.raises(DeviceError, match=r"^--device cuda was asked for but torch sees no CUDA device here; use "
                                          r"--device cpu, or --device auto to take CUDA only when present$"):
        runner_with(catalog, StandIn(cuda=False), device="cuda").run(exercise)
    with pytest.raises(DeviceError, match=r"^unknown device 'tpu'; use one of auto, cpu, cuda$"):
        Runner(catalog, device="tpu")


def test_a_runner_told_not_to_run_unconfined_code_refuses_before_the_request(catalog, exercise):
    why = "this kernel has no Landlock"
    worker = StandIn(confinement={"confined": False, "why": why})
    with pytest.raises(UnconfinedError) as refused:
        runner_with(catalog, worker, allow_unconfined=False).run(exercise)
    assert str(refused.value) == (f"code under check would run unconfined here ({why}), so it could change files "
                                  "and grades it should not reach; grade on Linux with Landlock, or pass "
                                  "--allow-unconfined to run it anyway") == unconfined_sentence(why)
    assert worker.requests == []
    assert runner_with(catalog, worker).run(exercise).status == "ok"   # allowed: it runs
    assert runner_with(catalog, StandIn(), allow_unconfined=False).run(exercise).status == "ok"
    assert runner_with(catalog, worker).confinement.why == why


def test_a_worker_that_dies_gives_an_error_and_is_replaced(catalog, exercise):
    worker = StandIn(answer=False)
    result = runner_with(catalog, worker).run(exercise, "(4, 1)", seed=3)
    assert (result.status, result.device, result.torch, result.seed) == ("error", "cpu", "2.13.0", 3)
    assert result.errors == {"run": "the check worker stopped unexpectedly and will be restarted"}
    assert (result.prediction, result.prediction_text, result.fault) == ("(4, 1)", "(4, 1)", "no-squeeze")
    assert worker.stops == 1 and (result.id, result.kind) == ("broadcast-loss", "shape")
    assert 0 <= result.duration_s < 5                                   # the stand-in answers at once


def test_a_run_cancelled_while_it_runs_or_while_the_worker_starts_is_cancelled(catalog, exercise):
    runner = Runner(catalog)
    runner.worker = StandIn(answer=False, on_request=runner.cancel)
    result = runner.run(exercise, "(4,)", seed=5)
    assert (result.status, result.device, result.torch, result.seed) == ("cancelled", "cpu", "2.13.0", 5)
    assert result.errors == {"run": "the run was cancelled"} and result.prediction_text == "(4,)"
    assert runner.worker.stops >= 2                                     # cancel() and the run both stop it
    assert 0 <= result.duration_s < 5

    def cancel_then_fail():
        runner.cancel()
        raise WorkerError("the check worker was stopped while it was starting")

    runner.worker = StandIn(on_start=cancel_then_fail)
    result = runner.run(exercise, "(4,)", seed=5)
    assert (result.status, result.device, result.torch, result.seed, result.id) == (
        "cancelled", "?", "?", 5, "broadcast-loss")
    assert result.prediction == "(4,)"
    # not cancelled: the worker's failure is the caller's to report
    runner.worker = StandIn(on_start=lambda: (_ for _ in ()).throw(WorkerError("no torch")))
    with pytest.raises(WorkerError, match="no torch"):
        runner.run(exercise)


def test_a_request_the_worker_fails_is_raised_unless_the_run_was_cancelled(catalog, exercise):
    runner = Runner(catalog)

    def fail():
        raise WorkerError("the worker is gone")

    runner.worker = StandIn(on_request=fail)
    with pytest.raises(WorkerError, match="the worker is gone"):
        runner.run(exercise)

    def cancel_then_fail():
        runner.cancel()
        fail()

    runner.worker = StandIn(on_request=cancel_then_fail)
    assert runner.run(exercise).status == "cancelled"


def test_what_the_runner_reports_of_its_worker(catalog):
    worker = StandIn()
    runner = runner_with(catalog, worker)
    assert runner.speed is None                                         # no worker started yet
    assert runner.warm_up() == {"torch": "2.13.0", "cuda": False, "pid": 1, "cores": 2, "scratch": "/nowhere",
                                "speed": None, "confinement": CONFINED}
    assert runner.speed is None                                         # started, without a probe figure
    runner.close()
    assert worker.stops == 1


def test_the_standard_sides_are_clean_and_faulted_only_with_a_fault(catalog):
    assert [s.name for s in standard_sides(catalog, catalog.get("broadcast-loss"))] == ["clean", "faulted"]
    assert [s.name for s in standard_sides(catalog, catalog.get("compile-equivalence"))] == ["clean"]
