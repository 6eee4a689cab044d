"""Time limits that follow the machine: the speed probe, the scaled limit, the
sentence a timeout says, a timeout recorded as a timeout, and the retry with twice the limit.

Nothing here grades a time: a check that sleeps is given a limit far below its sleep or far
above it, so the machine's load can only change how long a test takes, never its verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from exercises.faults import Fault
from tutor.sandbox import speed
from tutor.store.progress import ProgressStore
from tutor.sandbox.protocol import Answer, Hello, Progress, Request, Side, SideResult, decode, encode
from tutor.sandbox.runner import Runner, RunResult, grade
from tutor.app.session import Session
from tutor.model.attempts import GRADED, RECORDED
from tutor.sandbox.speed import ScaleError, Speed, TimeLimit, time_limit

SQUEEZE = "    predictions = predictions.squeeze(-1)  # (N, 1) -> (N,): drop only the named axis\n"
LEARNER = "ada"


def reference_speed(factor: float) -> Speed:
    """A probe figure ``factor`` times slower than the reference machine, in both pieces."""
    return Speed(gemm_s=speed.REFERENCE_S["gemm_s"] * factor, step_s=speed.REFERENCE_S["step_s"] * factor)


# --- the limit, as pure data ------------------------------------------------------------

def test_the_first_scale_given_wins_in_order_retry_flag_environment_probe():
    slow = reference_speed(3.0)
    assert time_limit(30, retry=8, flag=4, environment=2, speed=slow) == TimeLimit(30, 8, "retry", pytest.approx(3.0))
    assert time_limit(30, flag=4, environment=2, speed=slow).source == "flag"
    assert time_limit(30, environment=2, speed=slow).source == "environment"
    probe = time_limit(30, speed=slow)
    assert (probe.source, probe.scale, probe.seconds) == ("probe", 3.0, 90.0)
    assert time_limit(30) == TimeLimit(30.0, 1.0, "reference", None)


@pytest.mark.parametrize("factor, scale", [(0.4, 1.0), (1.0, 1.0), (1.01, 1.1), (2.34, 2.4), (7.6, 7.6),
                                           (55.0, speed.MAX_SCALE)])
def test_a_probe_factor_rounds_up_to_a_tenth_and_never_tightens_a_limit(factor, scale):
    assert speed.probe_scale(factor) == scale
    assert time_limit(30, speed=reference_speed(factor)).scale == scale


def test_the_reason_names_the_limit_and_where_its_scale_came_from():
    assert TimeLimit(30, 2.4, "probe", 2.36).why == (
        "this exercise's 30 s × 2.4, because the speed probe at the worker's start ran 2.4× slower than on "
        "the quiet 2-core reference machine")
    assert "as fast as (0.9×)" in TimeLimit(30, 1.0, "probe", 0.9).why
    assert TimeLimit(30, 3, "flag").why == "this exercise's 30 s × 3, as --timeout-scale asked"
    assert TimeLimit(30, 3, "environment").why == "this exercise's 30 s × 3, as TUTOR_TIMEOUT_SCALE asked"
    assert TimeLimit(30, 4.8, "retry").why == \
        "this exercise's 30 s × 4.8, twice the limit of a run that ran out of time"
    assert "no speed probe figure" in TimeLimit(30).why
    limit = TimeLimit(48, 2.4, "probe", 2.36)
    assert (limit.seconds, limit.retry_scale) == (115.2, 4.8)
    assert limit.to_dict()["why"] == limit.why


@pytest.mark.parametrize("text", ["0", "-2", "abc", "", "nan", "inf"])
def test_a_scale_that_is_not_a_positive_number_is_refused_in_one_sentence(text):
    with pytest.raises(ScaleError, match=r"^--timeout-scale must be a number above 0 such as 2 or 1\.5"):
        speed.parse_scale(text)


def test_the_environment_variable_sets_the_scale_and_a_bad_one_is_refused(monkeypatch, catalog):
    monkeypatch.setenv(speed.ENV, "2.5")
    assert speed.environment_scale() == 2.5
    assert Runner(catalog, "cpu").environment_scale == 2.5
    monkeypatch.setenv(speed.ENV, "fast")
    with pytest.raises(ScaleError, match="TUTOR_TIMEOUT_SCALE must be a number above 0"):
        Runner(catalog, "cpu")
    monkeypatch.delenv(speed.ENV)
    assert speed.environment_scale() is None


def test_a_probe_figure_travels_in_the_hello_and_back():
    measured = Speed.of([{"gemm_s": 0.1, "step_s": 0.2, "gemm_cpu_s": 0.07, "step_cpu_s": 0.06, "threads": 1},
                         {"gemm_s": 0.3, "step_s": 0.1, "threads": 1}], wall_s=0.5)
    assert (measured.gemm_s, measured.step_s, measured.copies) == (0.3, 0.1, 2)  # the slowest child, whole
    assert measured.factor == pytest.approx(0.4 / sum(speed.REFERENCE_S.values()))
    assert Speed.from_wire(measured.to_wire()) == replace(measured, cpu_s=0.0)
    assert Speed.from_wire(None) is None and Speed.from_wire({"gemm_s": "x"}) is None


def test_a_request_carries_its_limit_and_reason_and_older_messages_still_read():
    request = Request(job=1, check="shapes.broadcast_loss", device="cpu", seed=0, timeout_s=72.0,
                      sides=(Side.clean(),), limit_why=TimeLimit(30, 2.4, "probe", 2.36).why)
    assert decode(encode(request)) == request
    older = json.loads(encode(request))
    del older["limit_why"]
    assert decode(json.dumps(older)).limit_why == ""
    hello = Hello(torch="t", cuda=False, pid=1, cores=2, scratch="/tmp/x", speed=reference_speed(2.0).to_wire())
    assert Speed.from_wire(decode(encode(hello)).speed).factor == pytest.approx(2.0)
    older = json.loads(encode(hello))
    del older["speed"]
    assert decode(json.dumps(older)).speed is None


# --- the real worker's probe -------------------------------------------------------------

def test_the_worker_measures_its_speed_once_when_it_starts(runner, catalog, monkeypatch):
    monkeypatch.delenv(speed.ENV, raising=False)
    runner.warm_up()
    measured = runner.speed
    assert measured is not None and measured.copies == 2 and measured.threads >= 1
    assert measured.gemm_s > 0 and measured.step_s > 0 and measured.factor > 0
    fresh = Runner(catalog, "cpu")  # TUTOR_TIMEOUT_SCALE is unset: the probe decides
    fresh.worker.hello = runner.worker.hello
    limit = fresh._limit(catalog.get("broadcast-loss"), None)
    assert limit.source == "probe" and limit.scale == speed.probe_scale(measured.factor)
    assert limit.seconds == round(catalog.get("broadcast-loss").time_limit_s * limit.scale, 1)


def test_the_worker_waits_for_its_threads_without_spinning_unless_told_otherwise(catalog, monkeypatch):
    """OMP_WAIT_POLICY=PASSIVE reaches the worker (set before torch loads OpenMP); a user's own wins."""
    def policy_of(runner) -> str:
        hello = runner.warm_up()
        with open(f"/proc/{hello['pid']}/environ", "rb") as fh:
            env = dict(item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item)
        return env[b"OMP_WAIT_POLICY"].decode()
    if not os.path.exists("/proc/self/environ"):
        pytest.skip("reads the worker's environment from /proc")
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    for wanted, env in (("PASSIVE", None), ("ACTIVE", "ACTIVE")):
        if env:
            monkeypatch.setenv("OMP_WAIT_POLICY", env)
        r = Runner(catalog, "cpu")
        try:
            assert policy_of(r) == wanted
        finally:
            r.close()


# --- a check that sleeps past the unscaled limit --------------------------------------------

def sleepy(seconds: float) -> Side:
    """The faulted side of broadcast-loss, sleeping ``seconds`` before it squeezes as the clean one does."""
    return Side.faulted(Fault(id="sleepy", file="exercises/snippets/losses.py", summary="sleeps",
                              before=SQUEEZE, after=f"    import time\n    time.sleep({seconds})\n" + SQUEEZE))


def test_a_check_past_its_unscaled_limit_passes_within_the_scaled_one(catalog, monkeypatch):
    """The limit is 1 s as written; the check sleeps 2 s. A probe that found the machine 15x slower
    gives it 15 s and it passes; the same run held to the written limit times out."""
    monkeypatch.delenv(speed.ENV, raising=False)
    ex = replace(catalog.get("broadcast-loss"), timeout_s=1.0)
    sides = (Side.clean(), sleepy(2.0))
    slow = Runner(catalog, "cpu")
    held = Runner(catalog, "cpu", timeout_scale=1)
    try:
        slow.warm_up()
        # The probe's figure as a machine 15x slower than the reference would give it.
        slow.worker.hello = replace(slow.worker.hello, speed=reference_speed(15.0).to_wire())
        scaled = slow.run(ex, "(3,)", sides=sides)
        assert scaled.status == "pass", scaled.error
        assert scaled.time_limit["seconds"] == 15.0 and scaled.time_limit["source"] == "probe"
        assert scaled.side_durations_s["faulted"] > 2.0  # it did sleep past the written limit

        stopped = held.run(ex, "(3,)", sides=sides)
        assert stopped.status == "timeout" and stopped.correct is None and stopped.observed is None
        assert stopped.errors == {"faulted": "the check did not finish within 1 s and was stopped at "
                                             "exercises/snippets/losses.py line 24 (squared_errors); the limit is "
                                             "this exercise's 1 s × 1, as --timeout-scale asked"}
        assert stopped.clean == [3]  # the clean side finished and is kept
        assert stopped.retry_scale == 2
    finally:
        slow.close()
        held.close()


def test_a_retry_gets_twice_the_limit_and_says_so(catalog, monkeypatch):
    monkeypatch.delenv(speed.ENV, raising=False)
    ex = replace(catalog.get("broadcast-loss"), timeout_s=1.0)
    r = Runner(catalog, "cpu", timeout_scale=1)
    try:
        result = r.run(ex, "(3,)", sides=(Side.clean(), sleepy(60)), timeout_scale=3)
        assert result.status == "timeout"
        assert result.time_limit == TimeLimit(1.0, 3, "retry", r.speed.factor).to_dict()  # the probe's figure, kept
        assert result.errors["faulted"].endswith("within 3 s and was stopped at exercises/snippets/losses.py line 24 "
                                                 "(squared_errors); the limit is this exercise's 1 s × 3, "
                                                 "twice the limit of a run that ran out of time")
        with pytest.raises(ScaleError):
            r.run(ex, "(3,)", timeout_scale=0)
    finally:
        r.close()


# --- the session: a timeout is recorded as one, and retried ---------------------------------

class TimingOutRunner:
    """Times out on a plain run (every side) and measures ``observed`` (by side) when retried."""

    def __init__(self, observed=None):
        self.observed = observed or {"clean": [3], "faulted": [3, 3]}
        self.calls = []

    def warm_up(self):
        return {"torch": "fake"}

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, timeout_scale=None):
        self.calls.append({"prediction": prediction, "seed": seed, "timeout_scale": timeout_scale,
                           "sides": tuple(s.name for s in sides or ())})
        if on_progress is not None:
            on_progress(Progress(fraction=1.0, message="done", job=1, side="clean"))
        limit = time_limit(exercise.time_limit_s, retry=timeout_scale, speed=reference_speed(1.0))
        stopped = SideResult(status="timeout", error=f"the check did not finish within {limit.seconds:g} s")
        measured = {name: SideResult(status="ok", observed=value) for name, value in self.observed.items()}
        names = [s.name for s in sides] if sides else ["clean"]
        answer = Answer(job=1, torch="fake", device="cpu", duration_s=0.1,
                        sides={name: measured[name] if timeout_scale else stopped for name in names})
        result = grade(exercise, answer, prediction, seed)
        result.time_limit = limit.to_dict()
        return result

    def cancel(self):
        pass

    def close(self):
        pass


def test_a_timeout_is_recorded_as_a_timeout_never_as_a_wrong_prediction(tmp_path, catalog):
    assert "timeout" in RECORDED and "timeout" not in GRADED
    runner = TimingOutRunner()
    session = Session(catalog, runner, ProgressStore(tmp_path), LEARNER)
    session.load()
    ex = catalog.get("broadcast-loss")
    run = session.start(ex, "(3, 3)", note="a note typed before the run is kept")
    outcome = run.execute()
    assert outcome.result.status == "timeout" and outcome.result.correct is None
    assert outcome.saved_to == tmp_path / f"{LEARNER}.toml" and outcome.note_saved
    [attempt] = ProgressStore(tmp_path).load(LEARNER).of(ex.id).attempts
    assert (attempt.status, attempt.correct, attempt.observed, attempt.prediction) == ("timeout", False, "", "(3, 3)")

    retried = session.retry(run, outcome.result)
    assert (retried.prediction, retried.seed, retried.sides, retried.timeout_scale) == \
        (run.prediction, run.seed, run.sides, 2.0)
    second = retried.execute()
    assert second.result.status == "pass" and second.result.time_limit["source"] == "retry"
    assert second.result.time_limit["seconds"] == 2 * outcome.result.time_limit["seconds"]
    assert [c["timeout_scale"] for c in runner.calls] == [None, 2.0]
    assert [a.status for a in session.progress_of(ex.id).attempts] == ["timeout", "pass"]


def test_a_timeout_does_not_move_the_capstone_to_a_new_mystery(tmp_path, catalog):
    runner = TimingOutRunner()
    session = Session(catalog, runner, ProgressStore(tmp_path), LEARNER)
    session.load()
    audit = catalog.get("audit")
    session.attempt(audit, "none")  # times out: recorded, but graded nothing
    assert [a.status for a in session.progress_of("audit").attempts] == ["timeout"]
    assert session.seed_for(audit) == 0  # the next attempt meets the same mystery


def test_a_runner_without_timeout_scale_still_serves_every_plain_run(tmp_path, catalog):
    class Plain(TimingOutRunner):
        def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None):
            return super().run(exercise, prediction, on_progress, seed, sides)
    session = Session(catalog, Plain())
    assert session.check(catalog.get("broadcast-loss")).status == "timeout"


# --- the command line, in a copy of the checkout -------------------------------------------

@pytest.fixture(scope="module")
def sleepy_checkout(tmp_path_factory):
    """A copy of the checkout with two more exercises, both broadcast-loss with another fault:

    * ``probe-sleeps`` (limit 1 s as written) sleeps 2 s;
    * ``probe-stalls-once`` (limit 5 s as written) sleeps 7 s in all: past its written limit, well within
      the retry's twice that, so a retry meets a subject that finishes. (It cannot remember an earlier
      run: a side writes only inside its own private tree, which is gone when the side ends.)
    """
    import shutil

    import tomli_w

    from exercises.faults import source_root
    root = tmp_path_factory.mktemp("checkout")
    for name in ("tutor", "engine", "exercises"):
        shutil.copytree(source_root() / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    stall = "    import time\n    time.sleep(2.4)\n"  # squared_errors runs three times a check: 7.2 s
    probes = [("probe-sleeps", 1.0, "    import time\n    time.sleep(2)\n"), ("probe-stalls-once", 5.0, stall)]
    exercises = [{"id": name, "set": "probe", "title": "t", "source": "000 · 1", "prompt": "p", "kind": "shape",
                  "check": "shapes.broadcast_loss", "explain": "e", "hints": ["a", "b"], "budget_s": 0.5,
                  "fault": f"{name}-fault", "timeout_s": limit} for name, limit, _ in probes]
    faults = [{"id": f"{name}-fault", "file": "exercises/snippets/losses.py", "summary": "s", "before": SQUEEZE,
               "after": code + SQUEEZE} for name, _, code in probes]
    (root / "exercises" / "probe.toml").write_text(tomli_w.dumps({
        "format_version": 1, "set": {"id": "probe", "title": "Probe", "order": 99, "summary": "tests only"},
        "exercise": exercises, "fault": faults}))
    return root


def probe_tutor(root, *args, env=None):
    """``tutor`` from the copy, with TUTOR_TIMEOUT_SCALE only when ``env`` sets it."""
    environment = {key: value for key, value in os.environ.items() if key != speed.ENV}
    environment.update(PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "tutor.cli", *args], capture_output=True, text=True,
                          env=environment, timeout=300, stdin=subprocess.DEVNULL, cwd=root.parent)


def test_run_times_out_says_how_to_retry_and_the_retry_passes(sleepy_checkout, tmp_path):
    """A subject that sleeps 7 s, held to its written 5 s (--timeout-scale 1): a timeout, saved as one,
    exit 3, and a sentence naming the retry; the retry it names has 10 s, and the subject now finishes."""
    where = ["--learner", LEARNER, "--progress-dir", str(tmp_path), "--device", "cpu"]
    proc = probe_tutor(sleepy_checkout, "run", "probe-stalls-once", "--predict", "(3,)", "--json",
                       "--timeout-scale", "1", *where)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "timeout" and data["correct"] is None
    assert data["time_limit"]["seconds"] == 5.0 and data["time_limit"]["retry_scale"] == 2
    assert data["error"] == ("faulted: the check did not finish within 5 s and was stopped at "
                             "exercises/snippets/losses.py line 24 (squared_errors); the limit is this "
                             "exercise's 5 s × 1, as --timeout-scale asked")
    assert data["saved_to"] == str(tmp_path / f"{LEARNER}.toml")
    assert "tutor: the machine may be busy: 'tutor run probe-stalls-once --predict '(3,)' --timeout-scale 2' " \
           "retries with twice the limit" in proc.stderr

    retry = probe_tutor(sleepy_checkout, "run", "probe-stalls-once", "--predict", "(3,)", "--timeout-scale", "2",
                        "--json", *where)
    assert retry.returncode == 0, retry.stdout + retry.stderr
    again = json.loads(retry.stdout)
    assert again["status"] == "pass" and again["time_limit"]["seconds"] == 10.0
    attempts = ProgressStore(tmp_path).load(LEARNER).of("probe-stalls-once").attempts
    assert [(a.status, a.correct, a.observed) for a in attempts] == [("timeout", False, ""), ("pass", True, "(3,)")]


def test_the_environment_variable_scales_the_limit_for_a_grader(sleepy_checkout):
    """probe-sleeps sleeps 2 s against 1 s as written: TUTOR_TIMEOUT_SCALE=15 gives it 15 s."""
    proc = probe_tutor(sleepy_checkout, "check", "probe-sleeps", "--device", "cpu", "--json",
                       env={speed.ENV: "15"})
    data = json.loads(proc.stdout)
    row = data["results"][0]
    assert row["status"] == "ok" and row["time_limit_s"] == 15.0, proc.stdout + proc.stderr
    assert row["clean"] == row["faulted"] == [3]
    bad = probe_tutor(sleepy_checkout, "check", "probe-sleeps", "--device", "cpu", env={speed.ENV: "0"})
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "tutor: TUTOR_TIMEOUT_SCALE must be a number above 0 such as 2 or 1.5, not '0'")


def test_check_in_two_workers_keeps_the_order_and_reports_the_wall_time(sleepy_checkout):
    ids = ["broadcast-loss", "head-split", "skip-zero-grad"]
    proc = probe_tutor(sleepy_checkout, "check", *ids, "-j", "2", "--device", "cpu", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert [r["id"] for r in data["results"]] == ids and data["passed"] == 3
    assert data["jobs"] == 2 and data["wall_s"] > 0 and data["timeouts"] == 0
    plain = probe_tutor(sleepy_checkout, "check", *ids, "-j", "2", "--device", "cpu")
    lines = plain.stdout.splitlines()
    assert [line.split()[2] for line in lines[:3]] == ids
    assert lines[3].startswith("checked 3 in ") and lines[3].endswith(" s wall time with 2 workers")
    assert lines[4] == "3 of 3 faults show against their clean run"
    refused = probe_tutor(sleepy_checkout, "check", "-j", "0")
    assert refused.returncode == 2 and "expected a whole number 1 or more, got '0'" in refused.stderr
