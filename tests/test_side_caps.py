"""What a side may send its worker, and the worker its tutor: each line read once, held to caps, and (from a
side) to its type's shape before anything of it is used. The hostile runs are in tests/hostile/test_side_floods.py."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import threading

import pytest

from tutor.sandbox import protocol, runner, side
from tutor.sandbox.protocol import Attempted, Measured, Progress, ProtocolError, Raised, Request, Side, sign, verify
from tutor.sandbox.shapes import nesting, shape_problem

KEY = b"k" * 32


def signed(data: dict, key: bytes = KEY) -> bytes:
    payload = json.dumps(data).encode()
    return hmac.new(key, payload, hashlib.sha256).hexdigest().encode() + b" " + payload + b"\n"


def a_run() -> side.SideRun:
    request = Request(job=3, check="shapes.check", device="cpu", seed=0, timeout_s=10.0, sides=())
    run = side.SideRun(Side("yours"), request, threads=1)
    run._key = KEY
    return run


# --- shapes --------------------------------------------------------------------------------------------------

def test_what_a_check_sends_passes_its_shape():
    for message in (Progress(fraction=0.5, message="step 3"), Attempted(what="tried to write ~/x: refused"),
                    Measured(observed=[[1, 2], {"a": None}], evidence=[{"type": "table", "rows": [["1"]]}]),
                    Raised(exception="ValueError", message="bad", where="x.py:3", frames=("engine/model.py:5",))):
        assert verify(KEY, sign(KEY, message).rstrip(b"\n")) == message


@pytest.mark.parametrize("data, problem", [
    ({"type": "measured", "observed": 1, "evidence": json.loads("[" * 33 + "]" * 33)},
     "a measured message's evidence nests deeper than 32 levels"),
    ({"type": "measured", "observed": json.loads("[" * 40 + "]" * 40)}, "a measured message's observed nests deeper"),
    ({"type": "measured", "observed": 1, "evidence": {"rows": 7}}, "a measured message's evidence is not of its shape"),
    ({"type": "progress", "fraction": 7}, "a progress message's fraction is not of its shape"),
    ({"type": "progress", "fraction": True}, "a progress message's fraction is not of its shape"),
    ({"type": "attempted", "what": ["x"]}, "a attempted message's what is not of its shape"),
    ({"type": "raised", "exception": "E", "message": "m", "frames": [[["deep"]]]}, "a raised message's frames"),
    ({"type": "unjoined", "controller": "cpu"}, "a unjoined message's controller"),
    ({"type": "answer", "job": 1}, "a side sent a 'answer' message, which no side sends"),
])
def test_a_message_of_another_shape_is_refused_before_use(data, problem):
    assert shape_problem(data).startswith(problem)
    with pytest.raises(ProtocolError, match="shape|deeper|no side sends"):
        verify(KEY, signed(data).rstrip(b"\n"))


def test_nesting_past_the_recursion_limit_is_measured_and_refused_without_recursion():
    deep = []
    for _ in range(sys.getrecursionlimit() * 3):
        deep = [deep]
    assert nesting(deep) == sys.getrecursionlimit() * 3 + 1
    assert nesting(7) == 0 and nesting([]) == 1 and nesting([[1], {"a": [2]}]) == 3
    assert verify(KEY, signed({"type": "measured", "observed": 0}).rstrip(b"\n")) == Measured(observed=0)
    text = b"[" * 100_000 + b"]" * 100_000
    payload = b'{"type": "measured", "observed": 0, "evidence": ' + text + b"}"
    mac = hmac.new(KEY, payload, hashlib.sha256).hexdigest().encode()
    with pytest.raises(ProtocolError, match="nests deeper than JSON is read"):
        verify(KEY, mac + b" " + payload)


# --- what a side's run takes ---------------------------------------------------------------------------------

def test_lines_split_across_chunks_are_read_whole_and_progress_is_passed_on():
    run = a_run()
    data = signed({"type": "progress", "fraction": 0.25, "message": "step"}) + signed(
        {"type": "measured", "observed": "yes", "evidence": []})
    reports = []
    for i in range(0, len(data), 7):
        reports += run.feed(data[i:i + 7])
    assert reports == [Progress(fraction=0.25, message="step", job=3, side="yours")]
    assert run._last == Measured(observed="yes") and run.tampered == 0 and not run.over_cap


def test_a_line_past_the_message_cap_stops_reading_at_once():
    run = a_run()
    block = b"x" * (1 << 16)
    fed = 0
    while not run.over_cap:
        run.feed(block)
        fed += len(block)
    assert fed <= protocol.MAX_MESSAGE_BYTES + len(block)
    assert "the cap for one message" in run.over_cap and len(run._partial) == 0
    assert run.feed(signed({"type": "measured", "observed": "yes"})) == [] and run._last is None


def test_a_side_past_its_total_cap_is_stopped_though_each_line_is_valid():
    run = a_run()
    line = signed({"type": "progress", "fraction": 0.5, "message": "p" * 60_000})
    sent = 0
    while not run.over_cap:
        run.feed(line)
        sent += len(line)
    assert protocol.MAX_SIDE_BYTES < sent <= protocol.MAX_SIDE_BYTES + len(line)
    assert "the cap for a side" in run.over_cap
    assert len(run.last_step) < protocol.MAX_NOTICE_CHARS + 40


def test_notices_and_progress_are_capped_in_count_and_length():
    run = a_run()
    for i in range(protocol.MAX_NOTICES * 2):
        run.feed(signed({"type": "attempted", "what": f"tried {i} " + "n" * 5000}))
    assert len(run.refused) == protocol.MAX_NOTICES
    assert all(len(n) <= protocol.MAX_NOTICE_CHARS + 40 and n.endswith("more characters)") for n in run.refused)
    passed = sum(len(run.feed(signed({"type": "progress", "fraction": 0.1, "message": str(i)})))
                 for i in range(protocol.MAX_PROGRESS + 5))
    assert passed == protocol.MAX_PROGRESS and run.last_step == str(protocol.MAX_PROGRESS + 4)


def test_a_mis_shaped_signed_line_is_tampered_and_says_why():
    run = a_run()
    run.feed(signed({"type": "measured", "observed": json.loads("[" * 50 + "]" * 50)}))
    assert run.tampered == 1 and run._last is None
    assert "nests deeper than 32 levels" in run.tampered_why


def test_a_side_past_a_cap_ends_as_an_outcome_naming_it(tmp_path):
    run = a_run()
    run.over_cap = "sent more than 8 MiB on its result pipe, the cap for a side"
    run.log_fd = os.open(tmp_path / "log", os.O_RDWR | os.O_CREAT, 0o600)
    result = run._outcome(0, timed_out=False)
    assert result.status == "error" and result.exception == "SideCap"
    assert result.error.startswith("the side sent more than 8 MiB on its result pipe, the cap for a side")


# --- what the tutor reads from its worker --------------------------------------------------------------------

class Writer:
    """A process that writes ``data`` on its stdout, standing in for a worker."""

    def __init__(self, data: bytes):
        self.proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer."
                                      "read()); sys.stdout.flush(); import time; time.sleep(30)"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        threading.Thread(target=self._feed, args=(data,), daemon=True).start()

    def _feed(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.close()

    def end(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


def test_the_tutor_reads_long_lines_whole_and_keeps_what_follows():
    worker, writer = runner.Worker(), Writer(b"a" * 3_000_000 + b"\nsecond\nthird-no-end")
    try:
        import time
        deadline = time.monotonic() + 60
        assert worker._read_line(writer.proc, deadline) == b"a" * 3_000_000
        assert worker._read_line(writer.proc, deadline) == b"second"
        assert worker._read_line(writer.proc, time.monotonic() + 0.3) is None
        assert worker._pending == b"third-no-end"
    finally:
        writer.end()


def test_a_worker_line_past_its_cap_ends_the_worker(monkeypatch):
    monkeypatch.setattr(runner, "MAX_WORKER_LINE_BYTES", 1 << 20)
    worker, writer = runner.Worker(), Writer(b"b" * (3 << 20))
    try:
        import time
        assert worker._read_line(writer.proc, time.monotonic() + 60) == b""
        assert writer.proc.wait(timeout=10) == -9 and worker._pending == b""
    finally:
        writer.end()
