"""Every answer from the worker has a deadline on the runner's side: a worker that never answers is killed
whole, the run's row says so, and the next run gets a fresh worker that works."""

import os
import signal
import time

from tutor.sandbox import runner as runner_module
from tutor.sandbox.runner import Runner, answer_deadline


def test_the_deadline_is_the_limit_and_a_grace():
    assert answer_deadline(30.0) == 30.0 + runner_module.ANSWER_GRACE_S + 15.0
    assert answer_deadline(2.0) > 2.0


def test_a_worker_that_never_answers_is_stopped_and_the_next_run_works(catalog, monkeypatch, processes):
    monkeypatch.setattr(runner_module, "ANSWER_GRACE_S", 1.0)
    runner = Runner(catalog, device="cpu", timeout_scale=0.1)  # broadcast-loss: 3 s, so a deadline of 5.5 s
    try:
        exercise = catalog.get("broadcast-loss")
        first = runner.worker.start()
        os.kill(first.pid, signal.SIGSTOP)  # the worker reads the request and never answers it
        stalled = runner.run(exercise, "(4,)")
        assert stalled.status == "error" and stalled.correct is None
        assert "gave no answer within 5.5 s" in stalled.errors["run"], stalled.errors
        assert "a fresh one starts for the next run" in stalled.errors["run"]
        assert _ends(first.pid), _state(first.pid)  # the stopped worker and its sandbox were killed whole
        again = runner.run(exercise, "(4,)")
        assert again.status in ("pass", "fail") and again.errors == {} and again.observed is not None, again.errors
        assert runner.worker.hello.pid != first.pid
    finally:
        runner.close()
    assert processes.new() == []


def _ends(pid, polls=40):
    """Whether ``pid`` is gone (or a zombie) within ``polls`` looks 50 ms apart (a sandbox ends a moment
    after the process that held it)."""
    for _ in range(polls):
        if _state(pid) in ("gone", "Z"):
            return True
        time.sleep(0.05)
    return False


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
