"""What a side sends the grader is capped and held to its shape: a flood is the side's own outcome, named by
the cap it went past, never a crash, a stall or megabytes in the grader's rows and notices.

A hand-in runs in the process that holds its side's signing key (the check's child), so it can sign
whatever it likes: here it finds the key and its result pipe in the child's frames and writes

* one line of 100 MiB without a newline (before, the worker buffered it whole, outside the side's memory
  cap, and read it in quadratic time: a stall, then a timeout);
* valid, signed progress reports of 60 KiB each, 12 MiB of them (before, every one reached the grader);
* signed notices of 60 KiB each (before, 20 of them, 1.2 MB, reached every row and notice);
* a signed measurement nested 30,000 deep, and one nested 200 deep (before, the first raised
  RecursionError in the worker, which died, and the row read "could not run"; the second reached the
  grader, whose verdict and rows recurse on it).

Each is the side's outcome: stopped at the cap it names, or *tampered* for a message of a shape no check
sends; the classmate graded beside it passes and nothing of hers changes.
"""

import json

import pytest

from attack import CLEAN, run_fix, run_grade_fixes

FIND_THE_PIPE = """
import sys, os, hmac, hashlib, json
frame = sys._getframe()
while frame is not None and not {'key', 'fd', 'send'} <= set(frame.f_locals):
    frame = frame.f_back
key, fd = frame.f_locals['key'], frame.f_locals['fd']
def write(data):
    while data:
        data = data[os.write(fd, data):]
def signed(message):
    payload = message if isinstance(message, bytes) else json.dumps(message).encode()
    write(hmac.new(key, payload, hashlib.sha256).hexdigest().encode() + b' ' + payload + b'\\n')
"""

LONG_LINE = FIND_THE_PIPE + """
block = b'x' * (1 << 20)
for _ in range(100):
    write(block)
report('wrote it all')
"""

PROGRESS_FLOOD = FIND_THE_PIPE + """
for i in range(200):
    signed({'type': 'progress', 'fraction': 0.5, 'message': str(i) + 'p' * 60000})
report('flooded')
"""

NOTICES = FIND_THE_PIPE + """
for i in range(40):
    signed({'type': 'attempted', 'what': 'tried to write /' + str(i) + 'n' * 60000 + ': refused'})
report('noticed')
"""

DEEP = FIND_THE_PIPE + """
signed(b'{"type": "measured", "observed": "no", "evidence": ' + b'[' * 30000 + b']' * 30000 + b'}')
signed(b'{"type": "measured", "observed": ' + b'[' * 200 + b']' * 200 + b', "evidence": []}')
os._exit(0)
"""


@pytest.fixture(scope="module")
def long_line(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("line"), LONG_LINE)


@pytest.fixture(scope="module")
def progress_flood(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("progress"), PROGRESS_FLOOD)


@pytest.fixture(scope="module")
def notices(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("notices"), NOTICES)


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    root = tmp_path_factory.mktemp("deep")
    (root / "fixes" / "ada").mkdir(parents=True)
    honest = root / "fixes" / "ada" / "broadcast-loss.py"
    honest.write_text(CLEAN, encoding="utf-8")
    return run_grade_fixes(root, DEEP), honest


def test_a_line_without_end_stops_the_side_at_the_cap_for_one_message(long_line):
    assert "the cap for one message" in long_line.text and "64 KiB" in long_line.text, long_line.text[-3000:]
    assert long_line.saw == ""  # stopped before it could say it wrote it all
    long_line.assert_not_fixed_and_no_damage()


def test_a_flood_of_signed_progress_stops_the_side_at_the_cap_for_a_side(progress_flood):
    text = progress_flood.text
    assert "the cap for a side" in text and "8 MiB" in text, text[-3000:]
    assert len(text) < 200_000, len(text)
    progress_flood.assert_not_fixed_and_no_damage()


def test_notices_are_few_and_short(notices):
    text = notices.text
    assert "noticed" in notices.saw  # the side ended as it meant to, its notices cut
    assert "more characters)" in text, text[-3000:]
    assert len(text) < 200_000, len(text)
    notices.assert_not_fixed_and_no_damage()


def test_a_deep_measurement_is_tampered_its_row_written_and_the_classmate_graded(deep):
    outcome, honest = deep
    reply = outcome.data["reply"]
    rows = {row["learner"]: row for row in reply["rows"]}
    assert rows["ada"]["status"] == "pass", rows["ada"]
    assert honest.read_text(encoding="utf-8") == CLEAN
    assert rows["mallory"]["status"] == "fail", rows["mallory"]
    text = outcome.text
    assert "tampered: 2 lines" in text and "nests deeper than JSON is read" in text, text[-3000:]
    assert outcome.returncode in (0, 1), outcome.text[-3000:]
    results = json.loads((outcome.witness.progress.parent / "graded" / "results.json").read_text())
    assert {entry["extra_data"]["learner"] for entry in results["learners"]} == {"ada", "mallory"}
    outcome.assert_not_fixed_and_no_damage()
