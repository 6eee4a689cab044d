"""Grading a real course: an assignment sets what is scored, LMS exports are read without guessing, the
gradebook survives any answer and any kill, each submission is saved once, one rule says which attempt
counts, and a failed save is exit 4.

The fake runner of test_grade answers head-split b, broadcast-loss (3, 3), skip-zero-grad 2 and
cache-offset no; every count below follows from those by hand.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from proctree import alive, descendants
from test_grade import FakeRunner, command, pool
from tutor.cli.replies import UsageError
from test_grade import read_answers
from tutor.instructor.grade import grade_rows, results_json
from tutor.instructor import assignment as assignments
from tutor.instructor import gradebook
from tutor.instructor.columns import parse_columns
from tutor.store.files import NUMBER
from tutor.model.attempts import Attempt, ProgressError
from tutor.store.names import file_stem, validate_learner
from tutor.store.progress import ProgressStore


@pytest.fixture(autouse=True)
def _fresh_fakes():
    FakeRunner.made = []


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the assignment ------------------------------------------------------------------------------

WEEK1 = """name = "Week 1"
[[exercises]]
id = "head-split"
points = 2
[[exercises]]
id = "broadcast-loss"
"""


def test_max_score_comes_from_the_assignment_and_other_exercises_are_reported_not_scored(tmp_path):
    answers = write(tmp_path, "a.csv", "learner,exercise,answer\nada,head-split,b\nada,skip-zero-grad,2\n"
                                       "bob,broadcast-loss,3x3\naudit,a\n")
    plan = write(tmp_path, "week1.toml", WEEK1)
    reply, _ = command(["grade", "--answers", str(answers), "--assignment", str(plan), "--out", str(tmp_path / "o")])
    assert reply.code == 0 and reply.data["max_score"] == 3.0 and reply.data["inferred"] is False
    statuses = [r["status"] for r in reply.data["rows"]]
    assert statuses == ["pass", "not_assigned", "pass", "unreadable"]
    assert reply.data["rows"][1]["score"] == 0 and "not in the assignment Week 1" in reply.data["rows"][1]["reason"]
    assert [r.runs for r in FakeRunner.made] == [[("head-split", None, 0), ("broadcast-loss", None, 0)]]  # not run
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    by = {e["extra_data"]["learner"]: e for e in results["learners"]}
    assert (by["ada"]["score"], by["ada"]["extra_data"]["max_score"]) == (2.0, 3.0)  # head-split is worth 2; skip-zero-grad 0
    assert (by["bob"]["score"], by["bob"]["extra_data"]["max_score"]) == (1.0, 3.0)
    assert [t["max_score"] for t in by["ada"]["tests"]] == [2.0, 1.0]


def test_without_an_assignment_the_inferred_one_is_said_and_unreadable_rows_never_add_to_it(tmp_path):
    answers = write(tmp_path, "a.csv", "learner,exercise,answer\nada,head-split,b\nbob,head-split,a\naudit,a\n"
                                       "bob,no-such-exercise,1\n")
    reply, _ = command(["grade", "--answers", str(answers), "--out", str(tmp_path / "o")])
    assert reply.data["inferred"] is True and reply.data["exercises"] == ["head-split"]
    assert reply.data["max_score"] == 1.0  # the stray audit,a row and the unknown exercise add nothing
    assert reply.summary.inferred and reply.summary.exercises == ["head-split"]
    from rich.console import Console
    from tutor.cli.output import show_summary
    console = Console(file=io.StringIO(), width=200)
    show_summary(console, reply)
    assert "Assignment inferred from the rows: head-split." in console.file.getvalue()


def test_exercises_on_the_command_line_are_the_assignment(tmp_path, catalog):
    answers = write(tmp_path, "a.csv", "learner,exercise,answer\nada,head-split,b\n")
    reply, _ = command(["grade", "--answers", str(answers), "--exercises", "head-split,cache-offset",
                        "--out", str(tmp_path / "o")])
    assert reply.data["max_score"] == 2.0 and reply.data["exercises"] == ["head-split", "cache-offset"]
    with pytest.raises(UsageError, match="'nope', which is not an exercise"):
        assignments.from_ids("head-split,nope", catalog)


@pytest.mark.parametrize("text, sentence", [
    ('exercises = []\n', "lists no exercises"),
    ('[[exercises]]\nid = "head-split"\npoints = -1\n', r"must be a number, 0 \(practice\) or more"),
    ('exercises = ["head-splt"]\n', "did you mean head-split"),
    ('[[exercises]]\nid = "head-split"\nhidden_seeds = [-1]\n', "hidden_seeds"),
    ('observations = "after_due_date"\nexercises = ["head-split"]\n', "sets no due"),
    ('colour = 1\nexercises = ["head-split"]\n', "unknown key 'colour'"),
    ('exercises = ["head-split", "head-split"]\n', "twice"),
])
def test_an_assignment_that_does_not_read_is_one_sentence(tmp_path, catalog, text, sentence):
    with pytest.raises(UsageError, match=sentence):
        assignments.load(write(tmp_path, "a.toml", text), catalog)


def test_a_practice_exercise_of_0_points_is_graded_and_never_scored(tmp_path, catalog):
    plan = assignments.load(write(tmp_path, "a.toml", '[[exercises]]\nid = "head-split"\npoints = 0\n'
                                                      '[[exercises]]\nid = "cache-offset"\n'), catalog)
    assert plan.max_score == 1.0 and plan.get("head-split").points == 0


def test_an_assignment_reads_its_due_time_points_and_hidden_seeds(tmp_path, catalog):
    plan = assignments.load(write(tmp_path, "a.toml", 'due = 2026-12-05T23:59:00Z\nobservations = "after_due_date"\n'
                                                      '[[exercises]]\nid = "head-split"\npoints = 2.5\n'
                                                      'hidden_seeds = [7, 11]\nvisibility = "hidden"\n'), catalog)
    [hs] = plan.exercises
    assert (hs.points, hs.hidden_seeds, hs.visibility, plan.max_score) == (2.5, (7, 11), "hidden", 2.5)
    assert plan.due.isoformat() == "2026-12-05T23:59:00+00:00"
    import datetime as dt
    assert not plan.shows_observations(dt.datetime(2026, 12, 5, tzinfo=dt.timezone.utc))
    assert plan.shows_observations(dt.datetime(2026, 12, 6, tzinfo=dt.timezone.utc))


# --- the gradebook ------------------------------------------------------------------------------

NASTY = ["b\rb", "line\nbreak", 'say "b"', "b, c", "=HYPERLINK(\"x\")", "-1+3", "+cmd", "@sum(1)", "\tb",
         "-0.25", "   b  "]


def test_every_cell_round_trips_through_csv_reader_and_the_rows_json(tmp_path):
    rows = ["learner,exercise,answer,note"]
    for n, answer in enumerate(NASTY):
        quoted = '"' + answer.replace('"', '""') + '"'
        rows.append(f'"Learner, {n} (=1+1)",head-split,{quoted},"note\r\n{n}"')
    answers = write(tmp_path, "a.csv", "\n".join(rows) + "\n")
    reply, _ = command(["grade", "--answers", str(answers), "--out", str(tmp_path / "o")])
    raw = (tmp_path / "o" / "gradebook.csv").read_bytes().decode("utf-8")
    records = list(csv.reader(io.StringIO(raw, newline="")))
    assert records[0] == list(gradebook.COLUMNS) and len(records) == len(NASTY) + 1  # no row split in two
    as_json = gradebook.read_rows(tmp_path / "o")
    assert len(as_json) == len(NASTY)
    for cells, row in zip(records[1:], as_json):
        assert cells == gradebook.cells(row)
        for column, cell in zip(gradebook.COLUMNS, cells):
            if cell and cell[0] in "=+-@\t\r":
                assert column in ("score", "points", "seed", "duration_s") or NUMBER.fullmatch(cell), cell
        answer = cells[gradebook.COLUMNS.index("answer")]
        assert answer == gradebook.spreadsheet_safe(row["answer"])
    answers_out = [c[gradebook.COLUMNS.index("answer")] for c in records[1:]]
    assert answers_out[:6] == ["b\rb", "line\nbreak", 'say "b"', "b, c", "'=HYPERLINK(\"x\")", "'-1+3"]
    assert answers_out[9] == "-0.25"  # a number stays a number
    assert all(line.startswith('"') for line in raw.split("\r\n") if line and line[0] != "\n")


def test_a_formula_in_any_text_cell_is_neutralised(tmp_path):
    answers = write(tmp_path, "a.csv", "learner,exercise,answer\nada,=cmd,b\n")
    command(["grade", "--answers", str(answers), "--out", str(tmp_path / "o")])
    [_, row] = list(csv.reader(io.StringIO((tmp_path / "o" / "gradebook.csv").read_text(), newline="")))
    assert row[gradebook.COLUMNS.index("exercise")] == "'=cmd"
    assert row[gradebook.COLUMNS.index("reason")].startswith("there is no exercise")


# --- LMS exports ----------------------------------------------------------------------------------

def test_columns_name_an_lms_exports_fields(tmp_path, catalog):
    answers = write(tmp_path, "lms.csv", "Email,Question,Response,Student Number,Time\n"
                                         "ada@uni.edu,head-split,b,123,00:05:00\n")
    [row] = read_answers(answers, catalog, parse_columns("learner=Email,exercise=Question,answer=Response,"
                                                        "submitted_at=-"))
    assert (row.learner, row.exercise, row.answer, row.problem) == ("ada@uni.edu", "head-split", "b", None)


@pytest.mark.parametrize("header, named", [
    ("learner,exercise,answer,id", "'id'"),
    ("student,name,exercise,answer", "'student' and 'name'"),
    ("learner,exercise,answer,time", "'time'"),
    ("learner,exercise,answer,prediction", "'answer' and 'prediction'"),
])
def test_an_ambiguous_or_aliased_header_is_a_usage_error_naming_the_columns(tmp_path, catalog, header, named):
    answers = write(tmp_path, "a.csv", header + "\n" + ",".join(["ada", "head-split", "b", "1"]) + "\n")
    with pytest.raises(UsageError) as caught:
        read_answers(answers, catalog)
    assert named in str(caught.value) and "--columns" in str(caught.value)


def test_an_ambiguous_header_exits_2_through_the_command_line(tmp_path):
    from tutor.cli import main
    answers = write(tmp_path, "a.csv", "id,exercise,learner,answer\n7,head-split,ada,b\n")
    assert main(["grade", "--answers", str(answers), "--out", str(tmp_path / "o"), "--json"]) == 2


def test_a_column_named_with_columns_must_be_there(tmp_path, catalog):
    answers = write(tmp_path, "a.csv", "learner,exercise,answer\nada,head-split,b\n")
    with pytest.raises(UsageError, match="names the column 'Email' for learner, but the answers file"):
        read_answers(answers, catalog, parse_columns("learner=Email"))
    with pytest.raises(UsageError, match="FIELD=COLUMN"):
        parse_columns("learner")


@pytest.mark.parametrize("name", ["ada.lovelace@uni.edu", "García, José", "Lee (TA)", "a+b@x.org"])
def test_lms_learner_ids_are_names_and_their_file_stem_stays_safe(name):
    assert validate_learner(name) == name
    stem = file_stem(name)
    assert stem.isascii() and all(ch.isalnum() or ch in "._-%" for ch in stem)


def test_an_email_learner_is_graded_and_saved(tmp_path):
    answers = write(tmp_path, "a.csv", 'learner,exercise,answer\n"García, José",head-split,b\nada@uni.edu,head-split,a\n')
    reply, _ = command(["grade", "--answers", str(answers), "--out", str(tmp_path / "o"), "--save",
                        "--progress-dir", str(tmp_path / "p")])
    assert [r["status"] for r in reply.data["rows"]] == ["pass", "fail"] and reply.data["saved"] == 2
    assert sorted(p.name for p in (tmp_path / "p").glob("*.toml")) == ["ada%40uni.edu.toml", "garc%C3%ADa%2C%20jos%C3%A9.toml"]


# --- which attempt counts --------------------------------------------------------------------------

OUT_OF_ORDER = ("learner,exercise,answer,submitted_at\n"
                "ada,head-split,b,2026-11-29T12:00:00Z\n"     # the latest: it counts
                "ada,head-split,a,2026-11-29T09:00:00Z\n"     # the first in time: the first try
                "ada,head-split,A,2026-11-29T10:00:00+01:00\n")  # 09:00 UTC: a tie, the file's order decides


def test_one_rule_for_which_attempt_counts_in_results_progress_and_report(tmp_path, catalog):
    from tutor.model.attempts import counting, in_time_order
    from tutor.instructor.report import build_report
    answers = write(tmp_path, "a.csv", OUT_OF_ORDER)
    reply, _ = command(["grade", "--answers", str(answers), "--out", str(tmp_path / "o"), "--save",
                        "--progress-dir", str(tmp_path / "p")])
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    [test] = results["learners"][0]["tests"]
    assert (test["score"], test["extra_data"]["line"]) == (1.0, 2)  # results.json: the latest submitted_at
    progress = ProgressStore(tmp_path / "p").load("ada")
    assert progress.of("head-split").latest.prediction == "b"  # tutor progress: the same attempt
    report = build_report(tmp_path / "p", catalog)
    [hs] = report.exercises
    assert (hs.solved_first, hs.solved_latest, hs.ever_solved) == (0, 1, 1)  # the report: first in time failed
    assert hs.median_attempts_to_solve == 3.0
    stamps = ["2026-11-29T12:00:00Z", "2026-11-29T09:00:00Z", "2026-11-29T10:00:00+01:00", None]
    assert in_time_order(list(range(4)), lambda i: stamps[i]) == [3, 1, 2, 0]
    assert counting([], lambda i: None) is None


def test_tutor_progress_shows_the_attempt_that_counts(tmp_path):
    store = ProgressStore(tmp_path)
    for when, prediction in (("2026-11-29T12:00:00+00:00", "b"), ("2026-11-29T09:00:00+00:00", "a")):
        store.record_attempt("ada", "head-split", Attempt(time=when, prediction=prediction, observed="b",
                                                          correct=prediction == "b", status="pass", device="cpu",
                                                          engine_hash="x"))
    from tutor.cli import main
    import contextlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["progress", "--progress-dir", str(tmp_path), "--learner", "ada"])
    line = next(l for l in out.getvalue().splitlines() if "head-split" in l)
    assert "│ b " in line.replace("┃", "│") or " b " in line  # the latest (12:00) answer, not the last saved


# --- killed, resumed, saved once --------------------------------------------------------------------

class Killed(KeyboardInterrupt):
    pass


def test_the_gradebook_is_appended_row_by_row_so_a_kill_loses_only_the_row_in_flight(tmp_path, monkeypatch):
    text = "learner,exercise,answer\n" + "".join(f"l{n},{ex}\n" for n, ex in
                                                  enumerate(["head-split,b", "cache-offset,no", "broadcast-loss,3",
                                                             "skip-zero-grad,2", "head-split,a"]))
    answers = write(tmp_path, "a.csv", text)
    calls = []
    real_run = FakeRunner.run

    def run(self, exercise, *args, **kwargs):
        calls.append(exercise.id)
        if exercise.id == "skip-zero-grad":
            raise Killed()  # the process dies while the fourth row's check runs
        return real_run(self, exercise, *args, **kwargs)
    monkeypatch.setattr(FakeRunner, "run", run)
    with pytest.raises(KeyboardInterrupt):
        command(["grade", "--answers", str(answers), "--out", str(tmp_path / "o")])
    kept = gradebook.read_rows(tmp_path / "o")
    assert [r["line"] for r in kept] == [2, 3, 4]  # every row before the one in flight
    book = list(csv.reader(io.StringIO((tmp_path / "o" / "gradebook.csv").read_text(), newline="")))
    assert len(book) == 4
    with open(tmp_path / "o" / gradebook.ROWS, "a") as fh:
        fh.write('{"line": 5, "cut sh')  # a line the kill cut short
    monkeypatch.setattr(FakeRunner, "run", real_run)
    FakeRunner.made = []
    reply, _ = command(["grade", "--answers", str(answers), "--out", str(tmp_path / "o"), "--resume"])
    assert reply.data["resumed_rows"] == 3 and [r["line"] for r in reply.data["rows"]] == [5, 6]
    assert [r.runs for r in FakeRunner.made] == [[("skip-zero-grad", None, 0), ("head-split", None, 0)]]
    book = list(csv.DictReader(io.StringIO((tmp_path / "o" / "gradebook.csv").read_text(), newline="")))
    assert [int(r["line"]) for r in book] == [2, 3, 4, 5, 6]
    assert len(gradebook.read_rows(tmp_path / "o")) == 5


def test_grading_the_same_file_twice_saves_each_attempt_once(tmp_path):
    answers = write(tmp_path, "a.csv", "learner,exercise,answer,submitted_at\nada,head-split,b,2026-11-29T10:00Z\n"
                                       "ada,head-split,a,2026-11-29T11:00Z\nbob,cache-offset,no,\n")
    args = ["grade", "--answers", str(answers), "--out", str(tmp_path / "o"), "--save", "--progress-dir",
            str(tmp_path / "p")]
    first, _ = command(args)
    second, _ = command(args)
    assert first.data["saved"] == 3 and second.data["saved"] == 0
    assert all(r["saved"] for r in second.data["rows"])  # saved already, by the first grading
    store = ProgressStore(tmp_path / "p")
    assert len(store.load("ada").of("head-split").attempts) == 2 and len(store.load("bob").of("cache-offset").attempts) == 1
    ids = {a.submission for a in store.load("ada").of("head-split").attempts}
    assert ids == {r["submission"] for r in first.data["rows"] if r["learner"] == "ada"} and len(ids) == 2


def test_a_save_that_fails_is_exit_4(tmp_path, monkeypatch):
    answers = write(tmp_path, "a.csv", "learner,exercise,answer\nada,head-split,b\n")

    def full(*args, **kwargs):
        raise ProgressError("cannot write progress to p (No space left on device)")
    monkeypatch.setattr(ProgressStore, "record_attempt", full)
    reply, events = command(["grade", "--answers", str(answers), "--out", str(tmp_path / "o"), "--save",
                             "--progress-dir", str(tmp_path / "p")])
    assert reply.code == 4 and "could not be saved" in reply.data["error"]
    assert any("No space left" in n for n in events.notices)


@pytest.mark.parametrize("argv", [["run", "head-split", "--predict", "b"],
                                  ["fix", "head-split", "--file", "SUBJECT"]])
def test_run_and_fix_exit_4_when_the_save_fails(tmp_path, monkeypatch, argv):
    import tutor.cli.common
    from tutor.cli import main
    from exercises.faults import source_root
    monkeypatch.setattr(tutor.cli.common, "make_runner", lambda cat, *a, **k: FakeRunner(cat))

    def full(*args, **kwargs):
        raise ProgressError("cannot write progress to p (No space left on device)")
    monkeypatch.setattr(ProgressStore, "record_attempt", full)
    if "SUBJECT" in argv:
        pytest.importorskip("exercises.faults")
        from tutor.store.catalog_cache import load_catalog
        cat = load_catalog()
        fault = cat.fault_of(cat.get("head-split"))
        argv = [a if a != "SUBJECT" else str(source_root() / fault.file) for a in argv]
    code = main([*argv, "--progress-dir", str(tmp_path / "p"), "--learner", "ada", "--json"])
    assert code == 4


# --- progress files in a folder -------------------------------------------------------------------

def an_attempt(prediction="b"):
    return Attempt(time="2026-11-29T10:00:00+00:00", prediction=prediction, observed="b", correct=True,
                   status="pass", device="cpu", engine_hash="x")


def test_no_lock_file_is_left_beside_each_progress_file(tmp_path):
    for name in ("ada", "bob", "zoë"):
        ProgressStore(tmp_path).record_attempt(name, "head-split", an_attempt())
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == \
        ["ada.toml", "bob.toml", "zo%C3%AB.toml"]
    assert [p.name for p in tmp_path.glob("*.lock")] == [".tutor.lock"]  # one for the folder


def test_a_byte_order_mark_in_a_progress_file_is_read_not_damage(tmp_path, catalog):
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "head-split", an_attempt())
    path = tmp_path / "ada.toml"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert store.load("ada", move_aside=False).of("head-split").attempts[0].prediction == "b"
    from tutor.instructor.report import build_report
    report = build_report(tmp_path, catalog)
    assert report.damaged == [] and report.learners == 1


def test_a_newer_format_file_is_named_never_an_empty_learner(tmp_path):
    import contextlib
    from tutor.cli import main
    ProgressStore(tmp_path).record_attempt("ada", "head-split", an_attempt())
    (tmp_path / "bob.toml").write_text('format_version = 99\nexercises = "a new shape"\n')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["progress", "--all", "--json", "--progress-dir", str(tmp_path)])
    data = json.loads(out.getvalue())
    bob = next(r for r in data["learners"] if r["file"].endswith("bob.toml"))
    assert "newer tutor (format 99)" in bob["error"] and "tried" not in bob
    assert code == 2


# --- SIGTERM ----------------------------------------------------------------------------------------

def _workers_of(pid):
    import os
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if int(fields[1]) == pid and b"tutor" in cmd and b"worker" in cmd:
            found.append(int(entry))
    return found


@pytest.mark.skipif(not __import__("os").path.isdir("/proc"), reason="reads /proc to find the worker")
def test_sigterm_ends_the_grading_and_its_worker_within_the_deadline(tmp_path, runner):
    """Within a second of the grader's SIGTERM on a machine of the reference speed, scaled by the speed this
    machine's worker measured, as every check's limit is."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from tutor.sandbox import speed
    runner.warm_up()
    limit_s = 1.0 * speed.probe_scale(runner.speed.factor if runner.speed is not None else 1.0)
    answers = write(tmp_path, "a.csv", "learner,exercise,answer\nada,head-split,b\n")
    proc = subprocess.Popen([sys.executable, "-m", "tutor.cli", "grade", "--answers", str(answers), "--out",
                             str(tmp_path / "o"), "--device", "cpu"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        workers = []
        while not workers and time.monotonic() < deadline and proc.poll() is None:
            workers = _workers_of(proc.pid)
            time.sleep(0.05)
        assert workers, "the grading started no worker"
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        while any(alive(w) for w in workers) and time.monotonic() - sent < 10 * limit_s:
            time.sleep(0.05)
        took = time.monotonic() - sent
        assert not any(alive(w) for w in workers) and took <= limit_s, \
            f"the worker outlived SIGTERM by {took:.1f} s (the deadline here: {limit_s:.1f} s)"
        assert proc.returncode != 0
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in _workers_of(proc.pid):
            try:
                os.killpg(w, signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.skipif(not __import__("os").path.isdir("/proc"), reason="reads /proc to find the worker")
def test_a_grader_killed_mid_batch_leaves_no_worker_or_side_behind(tmp_path, runner):
    """kill -9 of the grading CLI while it is between rows: its worker and every process under it are gone
    within a second on a machine of the reference speed, scaled by the speed this machine's worker measured,
    as every check's limit is (the count of survivors is what is asserted, at that deadline)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from tutor.sandbox import speed
    runner.warm_up()
    limit_s = 1.0 * speed.probe_scale(runner.speed.factor if runner.speed is not None else 1.0)
    rows = "".join(f"ada,head-split,b,{seed}\n" for seed in range(1, 200))  # each seed its own check: a long batch
    answers = write(tmp_path, "a.csv", "learner,exercise,answer,seed\n" + rows)
    proc = subprocess.Popen([sys.executable, "-m", "tutor.cli", "grade", "--answers", str(answers), "--out",
                             str(tmp_path / "o"), "--device", "cpu", "--exercises", "head-split"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    below = []
    try:
        deadline = time.monotonic() + 180
        graded = tmp_path / "o" / "rows.jsonl"
        while time.monotonic() < deadline and proc.poll() is None and not (
                graded.is_file() and graded.read_bytes().count(b"\n") >= 2):
            time.sleep(0.05)
        assert proc.poll() is None, "the grading ended before it could be killed mid-batch"
        below = descendants(proc.pid)
        assert _workers_of(proc.pid), "the grading started no worker"
        sent = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        while any(alive(p) for p in below) and time.monotonic() - sent < limit_s:
            time.sleep(0.02)
        left = [p for p in below if alive(p)]
        assert left == [], f"{len(left)} of {len(below)} processes outlived the killed grader by {limit_s:.1f} s"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in below:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
