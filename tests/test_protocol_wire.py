"""The worker's wire, pinned in this process: every message survives encode and decode (and sign and
verify) with every field set away from its default, the wire names of a side and a request are the
ones the worker reads, and a line that is not a message says why in one sentence.

The runner and the worker speak this protocol across a process boundary, where a field lost or
renamed on one side shows up only as a check that runs the wrong thing; here each message is
checked on its own.
"""

from __future__ import annotations

import json

import pytest

from exercises.faults import Fault
from tutor.sandbox.protocol import (Answer, Attempted, Hello, Measured, Progress, ProtocolError, Raised, Refusal,
                                    Request, Side, SideResult, SideSpec, Unjoined, decode, encode, sign, verify)
from tutor.sandbox.shapes import SIDE_SHAPES

FAULT = Fault(id="no-scale", file="engine/model.py", before="* self.scale", after="", summary="drops the scale")
KEY = bytes(range(32))

#: Written out, not built with Side.clean() and the like: a module-level value is made once, at import,
#: before a mutation test swaps the code it calls; test_the_sides_are_built_as_named builds them.
SIDES = (Side("clean"), Side("faulted", FAULT), Side("yours", None, (("engine/model.py", "x = 1\n"),)))
RESULT = SideResult(status="error", observed=[1, 2], evidence=[["row", "value"]], error="it raised",
                    exception="ValueError", output="printed", duration_s=1.5, refused=["tried to write /x: refused"],
                    tampered=2, confined=True, last_step="step 3",
                    limits={"processes": "counted", "memory": "rlimit"})
MESSAGES = [
    Hello(torch="2.13.0", cuda=True, pid=41, cores=3, scratch="/tmp/s", speed={"factor": 1.5},
          confinement={"landlock": 4}),
    Request(job=7, check="edit_mode.hunt", device="cuda", seed=3, timeout_s=12.5, sides=SIDES,
            limit_why="the exercise's 10 s, scaled"),
    Progress(fraction=0.25, message="training", job=7, side="faulted"),
    Attempted(what="tried to write ~/x: refused"),
    Unjoined(controller="memory", why="Permission denied"),
    Measured(observed={"shape": [2, 3]}, evidence=[["loss", 1.25]]),
    Raised(exception="RuntimeError", message="boom", where="model.py:12", frames=("engine/model.py:57", "x.py:3")),
    RESULT,
    Answer(job=7, torch="2.13.0", device="cpu", duration_s=2.5, sides={"clean": SideResult(status="ok"),
                                                                      "faulted": RESULT}),
    Refusal(error="the line is not a request"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.TYPE)
def test_every_message_comes_back_as_it_went(message):
    line = encode(message)
    assert "\n" not in line and json.loads(line)["type"] == message.TYPE
    assert decode(line) == message
    assert decode(line.encode()) == message
    signed = sign(KEY, message).rstrip(b"\n")
    if message.TYPE in SIDE_SHAPES:  # what a side sends comes back through verify; nothing else is a side's
        assert verify(KEY, signed) == message
    else:
        with pytest.raises(ProtocolError, match=f"^a side sent a '{message.TYPE}' message, which no side sends$"):
            verify(KEY, signed)


def test_the_sides_are_built_as_named():
    assert Side.clean() == Side("clean", None, ())
    faulted = Side.faulted(FAULT)
    assert faulted == Side("faulted", FAULT, ()) and faulted.fault is FAULT
    assert Side.replacing("yours", "engine/model.py", "x = 1\n") == Side("yours", None, (("engine/model.py", "x = 1\n"),))
    assert (Side.clean(), faulted, Side.replacing("yours", "engine/model.py", "x = 1\n")) == SIDES


def test_a_requests_sides_travel_under_the_names_the_worker_reads():
    wire = json.loads(encode(MESSAGES[1]))
    assert wire == {"type": "request", "job": 7, "check": "edit_mode.hunt", "device": "cuda", "seed": 3,
                    "timeout_s": 12.5, "limit_why": "the exercise's 10 s, scaled", "record": "",
                    "sides": [{"name": "clean", "fault": None, "files": []},
                              {"name": "faulted", "fault": FAULT.to_dict(), "files": []},
                              {"name": "yours", "fault": None, "files": [["engine/model.py", "x = 1\n"]]}]}


def test_a_request_reads_numbers_sent_as_text_and_the_fields_an_older_runner_leaves_out():
    wire = {"type": "request", "job": 1, "check": "c.f", "device": "cpu", "seed": "4", "timeout_s": "2",
            "sides": [{"name": "clean"}]}
    request = decode(json.dumps(wire))
    assert request == Request(job=1, check="c.f", device="cpu", seed=4, timeout_s=2.0, sides=(Side("clean"),))
    assert type(request.seed) is int and type(request.timeout_s) is float and request.limit_why == ""


def test_a_sides_spec_comes_back_as_it_went_and_asks_for_its_check_alone():
    spec = SideSpec(check="c.f", device="cuda", seed=5, folder="/tmp/side", threads=2, key=KEY.hex(),
                    status={"landlock": 4}, roots=("/usr", "/lib"), cgroup="/sys/fs/cgroup/a",
                    memory_cgroup="/sys/fs/cgroup/b", worker_pid=99)
    line = spec.encode()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line)["roots"] == ["/usr", "/lib"]
    assert SideSpec.decode(line) == spec and spec.key_bytes == KEY
    assert spec.request() == Request(job=0, check="c.f", device="cuda", seed=5, timeout_s=0.0, sides=())
    bare = SideSpec.decode(json.dumps({"check": "c.f", "device": "cpu", "seed": 0, "folder": "/f", "threads": 1,
                                       "key": "00", "status": {}}).encode())
    assert bare.roots == () and bare.cgroup is None and bare.memory_cgroup is None and bare.worker_pid == 0


@pytest.mark.parametrize("line", [b"not json", b'{"check": 1}', b"[1]"])
def test_a_line_that_is_no_sides_spec_says_so(line):
    with pytest.raises(ProtocolError, match=r"^the line is not a side's spec \(.+\)$"):
        SideSpec.decode(line)


@pytest.mark.parametrize("line, sentence", [
    ("{", r"^the line is not JSON \(Expecting property name enclosed in double quotes: .+\)$"),
    (b"\xff", r"^the line is not JSON \(.+\)$"),
    ("[1, 2]", r"^the line names no known message type \(None\)$"),
    ('"hello"', r"^the line names no known message type \(None\)$"),
    ('{"type": "shout"}', r"^the line names no known message type \('shout'\)$"),
    ('{"type": "request", "job": 1}', r"^a request message is missing or mistypes a field \(KeyError\('check'\)\)$"),
    ('{"type": "raised", "exception": "E"}', r"^a raised message is missing or mistypes a field \(KeyError\('message'\)\)$"),
    ('{"type": "attempted"}', r"^a attempted message is missing or mistypes a field \(TypeError\(.+\)\)$"),
])
def test_a_line_that_is_no_message_says_why(line, sentence):
    with pytest.raises(ProtocolError, match=sentence):
        decode(line)


def test_a_raised_message_from_a_worker_that_sends_no_frames_or_place_reads_as_none():
    bare = decode('{"type": "raised", "exception": "E", "message": "m"}')
    assert bare == Raised(exception="E", message="m", where="", frames=())
    assert bare.sentence == "E: m"
    framed = decode('{"type": "raised", "exception": "E", "message": "m", "frames": ["a.py:1", 7]}')
    assert framed.frames == ("a.py:1", "7")


def test_a_raised_message_is_told_at_the_deepest_frame_in_the_learners_files():
    deep = Raised(exception="RuntimeError", message="shape", where="functional.py:2615",
                  frames=("exercises/x.py:3", "engine/model.py:10", "engine/model.py:57", "torch/nn/functional.py:2615"))
    told = deep.in_files({"engine/model.py"})
    assert told.where == "engine/model.py:57 in your file; raised in functional.py:2615"
    assert (told.exception, told.message, told.frames) == (deep.exception, deep.message, deep.frames)
    innermost = Raised(exception="E", message="m", where="model.py:57", frames=("engine/model.py:57",))
    assert innermost.in_files(["engine/model.py"]).where == "engine/model.py:57 in your file"
    unplaced = Raised(exception="E", message="m", where="", frames=("engine/model.py:57",))
    assert unplaced.in_files(["engine/model.py"]).where == "engine/model.py:57 in your file"
    assert deep.in_files({"engine/other.py"}) is deep
    assert Raised(exception="E", message="m").in_files({"engine/model.py"}).where == ""


@pytest.mark.parametrize("path", ["model.py", "engine/answers/kinds.py", "engine/a:b.py"])
def test_the_innermost_frame_in_a_learners_file_is_named_once_at_any_depth_and_with_any_name(path):
    # a file at the tree's top, one two folders deep, one whose name holds a colon (the line follows the last)
    name = path.rsplit("/", 1)[-1]
    raised = Raised(exception="E", message="m", where=f"{name}:5", frames=(f"{path}:5",))
    assert raised.in_files([path]).where == f"{path}:5 in your file"
    outer = Raised(exception="E", message="m", where="functional.py:9", frames=(f"{path}:5", "torch/functional.py:9"))
    assert outer.in_files([path]).where == f"{path}:5 in your file; raised in functional.py:9"
