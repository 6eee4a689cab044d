"""A grading's memory does not grow with its rows: each row is graded, written and let go, and the tail reads
the rows back a line at a time (:mod:`tutor.instructor.tail`).

The default suite counts what is held (live rows, and tracemalloc's peak at N and 4N rows, each row carrying
a 4 KB note that a held row would keep) for a CSV export, JSON lines, a JSON array, standard input and a
``--resume`` over rows already graded; the ``slow`` test grades a ~200 MB export in a CLI subprocess and
reads its peak RSS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
import weakref

import pytest

from test_grade import FakeRunner
from tutor.instructor import course
from tutor.instructor import grade as grading

NOTE = "n" * 4096
LEARNERS = 20


def export(path, rows: int, note: str = NOTE, form: str = "csv") -> None:
    """``rows`` answers of LEARNERS learners over two exercises (head-split observes b under FakeRunner), as
    CSV, JSON lines (``jsonl``) or one JSON array (``json``)."""
    with open(path, "w", encoding="utf-8") as fh:
        if form == "csv":
            fh.write("learner,exercise,answer,note,submitted_at\n")
        elif form == "json":
            fh.write("[\n")
        for i in range(rows):
            ex, answer = ("head-split", "ab"[i % 2]) if i % 3 else ("broadcast-loss", "3x3")
            fields = [f"learner{i % LEARNERS}", ex, answer, note, f"2026-11-29T10:{i % 60:02d}:00Z"]
            if form == "csv":
                fh.write(",".join(fields) + "\n")
            else:
                item = json.dumps(dict(zip(("learner", "exercise", "answer", "note", "submitted_at"), fields)))
                fh.write(item + (",\n" if form == "json" and i < rows - 1 else "\n"))
        if form == "json":
            fh.write("]\n")


def grade(tmp_path, rows: int, exercises: str | None, on_graded=lambda r: None, form: str = "csv",
          resume: bool = False, answers=None):
    if answers is None:
        answers = tmp_path / f"a{rows}.{form}"
        export(answers, rows, form=form)
    req = course.Request(answers=str(answers), exercises=exercises, out=tmp_path / f"o{rows}", resume=resume,
                         runner_factory=lambda cat, dev: FakeRunner(cat, dev))
    return course.grade_answers(req, CATALOG[0], on_graded, lambda s: None)


CATALOG: list = []


@pytest.fixture(autouse=True)
def _catalog(catalog):
    CATALOG[:] = [catalog]
    FakeRunner.made = []


@pytest.mark.parametrize("exercises", ["head-split,broadcast-loss", None])
def test_rows_are_let_go_as_they_are_graded(tmp_path, monkeypatch, exercises):
    live: set = set()

    class Counted(grading.RowResult):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            ident = id(self)
            live.add(ident)
            weakref.finalize(self, live.discard, ident)

    monkeypatch.setattr(grading, "RowResult", Counted)
    monkeypatch.setattr(course, "KEPT_ROWS", 5, raising=False)
    held = []
    done = grade(tmp_path, 400, exercises, lambda r: held.append(len(live)))
    assert len(held) == 400 and done.written.rows == 400
    assert max(held) <= 5 + 3  # the few kept for the reply, the one in hand, one in flight: never the class
    assert done.rows_graded == 400 and len(done.graded) == 5


def _peak(tmp_path, rows: int, exercises: str | None, **kw) -> int:
    tracemalloc.start()
    try:
        done = grade(tmp_path, rows, exercises, **kw)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        assert done.written.rows == rows


@pytest.mark.parametrize("exercises", ["head-split,broadcast-loss", None])
def test_peak_memory_does_not_grow_with_the_rows(tmp_path, monkeypatch, exercises):
    monkeypatch.setattr(course, "KEPT_ROWS", 5, raising=False)
    small = _peak(tmp_path, 250, exercises)
    large = _peak(tmp_path, 1000, exercises)
    notes_added = 750 * len(NOTE)  # what holding the extra rows' notes alone would add (3 MB)
    assert large - small < notes_added / 4, (small, large)
    assert large < notes_added, large  # nor is the file read whole (a 4 MB class, some 250 KB held)
    results = json.loads((tmp_path / "o1000" / "results.json").read_text())
    assert len(results["learners"]) == LEARNERS


@pytest.mark.parametrize("form, exercises", [("jsonl", None), ("jsonl", "head-split,broadcast-loss"),
                                             ("json", None), ("json", "head-split,broadcast-loss")])
def test_json_lines_and_a_json_array_are_read_an_object_at_a_time(tmp_path, monkeypatch, form, exercises):
    monkeypatch.setattr(course, "KEPT_ROWS", 5, raising=False)
    small = _peak(tmp_path, 250, exercises, form=form)
    large = _peak(tmp_path, 1000, exercises, form=form)
    notes_added = 750 * len(NOTE)
    assert large - small < notes_added / 4, (small, large)  # the text or the objects held would add 3 MB
    assert large < notes_added, large
    results = json.loads((tmp_path / "o1000" / "results.json").read_text())
    assert len(results["learners"]) == LEARNERS


@pytest.mark.parametrize("exercises", ["head-split,broadcast-loss", None])
def test_standard_input_is_copied_to_a_file_not_held(tmp_path, monkeypatch, exercises):
    monkeypatch.setattr(course, "KEPT_ROWS", 5, raising=False)
    peaks = {}
    for rows in (250, 1000):
        export(tmp_path / f"in{rows}.csv", rows)
        with open(tmp_path / f"in{rows}.csv", "rb") as fh:
            monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": fh})())
            peaks[rows] = _peak(tmp_path, rows, exercises, answers="-")
    assert peaks[1000] - peaks[250] < 750 * len(NOTE) / 4, peaks
    assert peaks[1000] < 750 * len(NOTE), peaks  # the 4 MB read whole would be more


def test_resume_keeps_the_ids_graded_not_the_rows(tmp_path, monkeypatch):
    """A resumed grading whose every row is graded already: what it reads of rows.jsonl (N rows of 4 KB notes)
    does not grow what it holds."""
    monkeypatch.setattr(course, "KEPT_ROWS", 5, raising=False)
    peaks = {}
    for rows in (250, 1000):
        answers = tmp_path / f"a{rows}.csv"
        export(answers, rows)
        grade(tmp_path, rows, "head-split,broadcast-loss", answers=answers)
        FakeRunner.made = []
        peaks[rows] = _peak(tmp_path, rows, "head-split,broadcast-loss", answers=answers, resume=True)
        assert not any(r.runs for r in FakeRunner.made)  # nothing graded twice
    assert peaks[1000] - peaks[250] < 750 * len(NOTE) / 4, peaks
    assert peaks[1000] < 750 * len(NOTE), peaks


def test_resume_after_a_kill_between_a_row_and_its_newline(tmp_path):
    answers = tmp_path / "a.csv"
    export(answers, 9, note="n")
    first = grade(tmp_path, 9, "head-split,broadcast-loss", answers=answers)
    rows_file = tmp_path / "o9" / "rows.jsonl"
    whole = rows_file.read_bytes()
    lines = whole.splitlines(keepends=True)
    rows_file.write_bytes(b"".join(lines[:5]).rstrip(b"\n"))  # five rows, the last without its newline
    again = grade(tmp_path, 9, "head-split,broadcast-loss", answers=answers, resume=True)
    assert (again.resumed, again.written.rows) == (5, 9)
    assert [json.loads(x)["line"] for x in rows_file.read_bytes().splitlines()] == list(range(2, 11))
    assert first.written.counts == again.written.counts


def _peak_rss_kib(proc) -> int:
    """The highest VmHWM (peak resident set, KiB) read from /proc while ``proc`` runs: the grading CLI's own,
    not its worker's."""
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as fh:
                peak = max([peak] + [int(x.split()[1]) for x in fh if x.startswith("VmHWM:")])
        except OSError:
            pass
        time.sleep(0.1)
    return peak


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the grader's peak RSS from /proc")
def test_a_200_mb_export_grades_within_500_mb_of_rss(tmp_path):
    """The CLI grades a ~200 MB export (real, confined checks, memoized: two distinct checks) in one
    subprocess; its peak RSS stays under 500 MB and its progress reaches stderr as counts."""
    answers = tmp_path / "big.csv"
    note = "why " * 500  # 2 KB a row: ~100,000 rows make 200 MB
    rows = 0
    with open(answers, "w", encoding="utf-8") as fh:
        fh.write("learner,exercise,answer,note\n")
        while fh.tell() < 200 * 2**20:
            ex, answer = ("head-split", "ab"[rows % 2]) if rows % 3 else ("broadcast-loss", "(3, 3)")
            fh.write(f"learner{rows % 500},{ex},\"{answer}\",{note}\n")
            rows += 1
    with open(tmp_path / "stdout", "w+") as out, open(tmp_path / "stderr", "w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "tutor.cli", "grade", "--answers", str(answers), "--exercises",
                                 "head-split,broadcast-loss", "--out", str(tmp_path / "o"), "--device", "cpu", "--json"],
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        peak_kib = _peak_rss_kib(proc)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    assert proc.returncode == 0, stderr[-2000:]
    assert f"graded {rows} rows" in stderr and stderr.count("graded ") >= rows // 1000
    reply = json.loads(stdout)
    assert reply["counts"]["pass"] + reply["counts"]["fail"] == rows and reply["rows_not_shown"] > 0
    assert 0 < peak_kib <= 500 * 1024, f"peak RSS {peak_kib / 1024:.0f} MB"
