"""``tutor grade``: reading answers, every row its result, the gradebook, Gradescope-style results, saving.

Most tests grade with a fake runner (the real ``grade`` function over hand-made
worker answers: head-split observes b, broadcast-loss (3, 3), skip-zero-grad 2,
cache-offset no), so the counts below are derived by hand; the last tests run
the real worker through the command line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import threading
import types

import pytest

from tutor.cli.replies import CouldNotRun, UsageError
from tutor.instructor.answer_rows import AnswerRow, iter_answers
from tutor.instructor.grade import RunnerPool, gradebook_csv, grade_rows, results_json
from tutor.instructor.saving import save_results
from tutor.store.files import spreadsheet_safe
from tutor.cli.parser import build_parser
from tutor.store.progress import ProgressStore
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import WorkerError, grade

OBSERVED = {"head-split": {"clean": "a", "faulted": "b"}, "broadcast-loss": {"clean": [3], "faulted": [3, 3]},
            "skip-zero-grad": {"clean": 1.0, "faulted": 2.0}, "cache-offset": {"clean": True, "faulted": False}}


def read_answers(*args, **kwargs) -> list[AnswerRow]:
    """An answers file's rows as one list (a class's grading takes them one at a time)."""
    return list(iter_answers(*args, **kwargs))


class FakeRunner:
    """Answers each run with the observations above, graded by the real ``grade``; counts its runs."""

    made = []

    def __init__(self, catalog, device="cpu", status="ok", raises=None):
        self.status, self.raises, self.runs, self.closed = status, raises, [], False
        self.threads = set()
        FakeRunner.made.append(self)

    def warm_up(self):
        return {}

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None):
        if self.raises is not None:
            raise self.raises
        self.runs.append((exercise.id, prediction, seed))
        self.threads.add(threading.current_thread().name)
        sides_ = {name: SideResult(status="ok", observed=value, duration_s=0.1) if self.status == "ok" else
                  SideResult(status=self.status, error="the check did not finish within 2 s and was stopped")
                  for name, value in OBSERVED[exercise.id].items()}
        return grade(exercise, Answer(job=1, torch="t", device="cpu", duration_s=0.25, sides=sides_), prediction, seed)

    def cancel(self):
        pass

    def close(self):
        self.closed = True


@pytest.fixture(autouse=True)
def _fresh_fakes():
    FakeRunner.made = []


#: A class's answers: the statuses and counts below follow from OBSERVED by hand.
CLASS_CSV = """\ufeffLearner,Exercise,Answer,Note,Submitted At,Email
ada,head-split,b,the reshape mixes positions,2026-11-29T10:00:00Z,a@x
ADA,broadcast-loss,"(3,)",,2026-11-29T10:05:00,a@x
Zoë,head-split,a,,,
Ada Lovelace,skip-zero-grad,-1/4,,,
bob/x,head-split,b,,,
bob,nope,b,,,
bob,cache-offset,maybe,,,
bob,cache-offset,no,,2026-11-29 11:00,
zoë,broadcast-loss,3x3,,,
"""
#: line -> status, derived by hand (the header is line 1).
CLASS_STATUS = {2: "pass", 3: "fail", 4: "fail", 5: "fail", 6: "unreadable", 7: "unreadable", 8: "unreadable",
                9: "pass", 10: "pass"}


@pytest.fixture()
def answers_csv(tmp_path):
    path = tmp_path / "week1.csv"
    path.write_text(CLASS_CSV, encoding="utf-8")
    return path


def pool(catalog, jobs=1, **kwargs):
    return RunnerPool(catalog, "cpu", jobs, lambda cat, dev: FakeRunner(cat, dev, **kwargs))


# --- reading ------------------------------------------------------------------------------------

def test_a_csv_is_read_with_its_header_in_any_case_and_every_row_checked(answers_csv, catalog):
    rows = read_answers(answers_csv, catalog)
    assert [r.line for r in rows] == list(range(2, 11))
    first = rows[0]
    assert (first.learner, first.key, first.exercise, first.answer, first.note, first.submitted_at) == \
        ("ada", "ada", "head-split", "b", "the reshape mixes positions", "2026-11-29T10:00:00+00:00")
    assert rows[1].key == "ada" and rows[1].submitted_at == "2026-11-29T10:05:00+00:00"  # no offset: read as UTC
    assert rows[2].learner == "Zoë" and rows[8].key == "zoë"  # one learner, whatever the case
    assert rows[3].answer == "-1/4" and rows[3].problem is None
    assert rows[4].problem.startswith("the learner name 'bob/x' is not allowed")
    assert rows[5].problem == "there is no exercise 'nope'; did you mean no-crop?"
    assert rows[6].problem == "cannot read 'maybe' as yes/no; expected yes or no"
    assert rows[7].submitted_at == "2026-11-29T11:00:00+00:00"


def test_json_lines_take_numbers_booleans_and_lists_as_answers(tmp_path, catalog):
    path = tmp_path / "answers.jsonl"
    path.write_text('{"learner": "ada", "exercise": "skip-zero-grad", "answer": -0.25}\n'
                    '\n'
                    '{"learner": "ada", "exercise": "cache-offset", "answer": false, "seed": 2}\n'
                    '{"learner": "ada", "exercise": "broadcast-loss", "answer": [3, 3]}\n'
                    'not json\n'
                    '["a list"]\n'
                    '{"learner": "ada", "exercise": "head-split"}\n')
    rows = read_answers(path, catalog)
    assert [(r.line, r.answer, r.problem) for r in rows[:3]] == [(1, "-0.25", None), (3, "no", None),
                                                                 (4, "[3, 3]", None)]
    assert rows[1].seed == 2
    assert rows[3].problem.startswith("line 5 is not a JSON object (")
    assert rows[4].problem == "line 6 is not a JSON object"
    assert rows[5].problem.startswith("the answer is empty")


@pytest.mark.parametrize("text, sentence", [
    ("learner,answer\nada,b\n", "has no column exercise in its header (it has learner, answer)"),
    ("", "holds no answers"),
    ("learner,exercise,answer\n", "holds no answers"),
])
def test_a_file_that_holds_no_usable_answers_is_a_usage_error(tmp_path, catalog, text, sentence):
    path = tmp_path / "a.csv"
    path.write_text(text)
    with pytest.raises(UsageError, match=sentence.replace("(", r"\(").replace(")", r"\)")):
        read_answers(path, catalog)


def test_a_missing_or_binary_answers_file_is_one_sentence(tmp_path, catalog):
    with pytest.raises(UsageError, match="there is no answers file"):
        read_answers(tmp_path / "nope.csv", catalog)
    (tmp_path / "bin.csv").write_bytes(b"learner,exercise,answer\n\xff\xfe\n")
    with pytest.raises(UsageError, match="is not UTF-8 text"):
        read_answers(tmp_path / "bin.csv", catalog)


@pytest.mark.parametrize("field, value, warning", [
    ("seed", "-1", "the seed '-1' is not a whole number 0 or more; graded with seed 0"),
    ("submitted_at", "yesterday", "submitted_at 'yesterday' is not a date and time"),
])
def test_a_time_or_seed_that_does_not_read_is_a_warning_and_the_answer_is_graded(tmp_path, catalog, field, value,
                                                                                  warning):
    row = {"learner": "ada", "exercise": "head-split", "answer": "b", "seed": "0", "submitted_at": ""}
    row[field] = value
    path = tmp_path / "a.csv"
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n")
    [read] = read_answers(path, catalog)
    assert read.problem is None and read.warnings[0].startswith(warning)
    assert (read.seed, read.submitted_at) == (0, None)
    [result] = grade_rows(catalog, [read], pool(catalog))
    assert (result.status, result.score) == ("pass", 1)  # a right answer scores, whatever its timestamp
    assert result.to_dict()["warnings"] == read.warnings


@pytest.mark.parametrize("field, value, problem", [
    ("learner", "", "the row names no learner"),
    ("exercise", "", "the row names no exercise"),
])
def test_each_unreadable_field_is_named(tmp_path, catalog, field, value, problem):
    row = {"learner": "ada", "exercise": "head-split", "answer": "b", "seed": "0", "submitted_at": ""}
    row[field] = value
    path = tmp_path / "a.csv"
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n")
    assert read_answers(path, catalog)[0].problem.startswith(problem)


# --- grading ------------------------------------------------------------------------------------

def test_every_row_gets_its_result_on_one_warm_worker(answers_csv, catalog):
    rows = read_answers(answers_csv, catalog)
    seen = []
    results = grade_rows(catalog, rows, pool(catalog), seen.append)
    assert {r.row.line: r.status for r in results} == CLASS_STATUS
    assert [r.row.line for r in seen] == list(range(2, 11))  # one worker: in the file's order
    [runner] = FakeRunner.made
    # six readable rows over four exercises: each distinct check runs once, ungraded, and every row is
    # graded against its exercise's one measurement
    assert sorted(runner.runs) == [("broadcast-loss", None, 0), ("cache-offset", None, 0), ("head-split", None, 0),
                                   ("skip-zero-grad", None, 0)]
    assert [r.reused for r in results if r.result is not None] == [False, False, True, False, False, True]
    unreadable = [r for r in results if r.status == "unreadable"]
    assert all(r.reason and r.result is None and r.score == 0 for r in unreadable)


def test_a_reused_measurement_takes_no_time_of_its_own(answers_csv, catalog):
    """A row graded against a measurement another row made says 0 s: the rows' durations sum to the checks'."""
    results = grade_rows(catalog, read_answers(answers_csv, catalog), pool(catalog))
    rows = [r.to_dict() for r in results if r.result is not None]
    assert [d["duration_s"] for d in rows if d["reused"]] == [0.0, 0.0]
    measured = [d["duration_s"] for d in rows if not d["reused"]]
    assert len(measured) == 4 and all(d > 0 for d in measured)


def test_two_workers_share_the_rows_and_the_order_is_kept(answers_csv, catalog):
    rows = read_answers(answers_csv, catalog) * 4
    results = grade_rows(catalog, rows, pool(catalog, jobs=2))
    assert [r.row.line for r in results] == [r.line for r in rows]
    assert [r.status for r in results] == [CLASS_STATUS[r.line] for r in rows]
    assert len(FakeRunner.made) == 2 and sum(len(r.runs) for r in FakeRunner.made) == 4  # each check once


def test_a_check_that_could_not_finish_is_its_status_with_the_reason(answers_csv, catalog):
    results = grade_rows(catalog, read_answers(answers_csv, catalog), pool(catalog, status="timeout"))
    ran = [r for r in results if r.result is not None]
    assert {r.status for r in ran} == {"timeout"}
    assert all("did not finish within 2 s" in r.reason and r.score == 0 for r in ran)


def test_a_worker_that_cannot_start_stops_the_grading(answers_csv, catalog):
    with pytest.raises(CouldNotRun, match="did not start"):
        grade_rows(catalog, read_answers(answers_csv, catalog),
                   pool(catalog, raises=WorkerError("the check worker did not start")))



class DiesOnce(FakeRunner):
    """A runner whose worker said hello, then died once while a check of ``dies_on`` ran (killed from outside;
    a fresh one starts for the next check)."""

    def __init__(self, catalog, device="cpu", dies_on="broadcast-loss"):
        super().__init__(catalog, device)
        self.worker = types.SimpleNamespace(hello=object())
        self.dies_on = dies_on

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None):
        if exercise.id == self.dies_on:
            self.dies_on = None
            raise WorkerError("the check worker did not start: Killed")
        return super().run(exercise, prediction, on_progress, seed, sides)


def test_a_worker_that_dies_during_one_row_costs_that_row_alone(answers_csv, catalog):
    results = grade_rows(catalog, read_answers(answers_csv, catalog),
                         RunnerPool(catalog, "cpu", 1, lambda cat, dev: DiesOnce(cat, dev)))
    died = [r for r in results if r.reason and r.reason.startswith("could not run: the check worker died")]
    assert [(r.row.line, r.row.learner, r.status, r.score) for r in died] == [(3, "ADA", "error", 0)]
    assert died[0].verdict == "could not run"  # --resume grades it again
    assert {r.row.line: r.status for r in results if r.row.line != 3} == \
        {line: status for line, status in CLASS_STATUS.items() if line != 3}  # line 10's broadcast-loss ran afresh
    assert FakeRunner.made[0].closed  # the dead worker let go: the next check starts a fresh one


# --- the files ----------------------------------------------------------------------------------

def test_the_gradebook_has_one_line_per_row_in_the_files_order(answers_csv, catalog):
    results = grade_rows(catalog, read_answers(answers_csv, catalog), pool(catalog))
    book = list(csv.DictReader(io.StringIO(gradebook_csv(results))))
    assert [int(r["line"]) for r in book] == list(range(2, 11))
    assert [r["status"] for r in book] == list(CLASS_STATUS.values())
    assert [int(r["score"]) for r in book] == [1, 0, 0, 0, 0, 0, 0, 1, 1]
    ada = book[0]
    assert (ada["learner"], ada["exercise"], ada["answer"], ada["prediction"], ada["observed"]) == \
        ("ada", "head-split", "b", "b", "b")
    assert book[3]["answer"] == "'-1/4" and book[3]["prediction"] == "-0.25" and book[3]["observed"] == "2"
    assert book[6]["reason"] == "cannot read 'maybe' as yes/no; expected yes or no"
    assert book[2]["saved"] == "no"


def test_results_are_gradescope_style_with_the_last_submission_counting(answers_csv, catalog):
    results = grade_rows(catalog, read_answers(answers_csv, catalog), pool(catalog))
    data = results_json(catalog, results, str(answers_csv))
    assert data["exercises"] == ["broadcast-loss", "head-split", "cache-offset", "skip-zero-grad"]
    by_learner = {e["extra_data"]["learner"]: e for e in data["learners"]}
    assert set(by_learner) == {"ada", "Ada Lovelace", "bob", "Zoë"}
    ada = by_learner["ada"]
    assert (ada["score"], ada["extra_data"]["max_score"]) == (1.0, 4.0)
    tests = {t["extra_data"]["exercise"]: t for t in ada["tests"]}
    assert tests["head-split"]["status"] == "passed" and tests["head-split"]["score"] == 1.0
    assert tests["head-split"]["output"] == "You predicted b. The check observed b. Your prediction matched."
    assert tests["broadcast-loss"]["output"].endswith("did not match.")
    assert tests["cache-offset"]["output"] == "No answer was submitted for this exercise."
    # bob's first cache-offset answer did not read; his later one passed, and the later one counts
    bob = {t["extra_data"]["exercise"]: t for t in by_learner["bob"]["tests"]}
    assert bob["cache-offset"]["score"] == 1.0 and bob["cache-offset"]["extra_data"]["line"] == 9
    assert by_learner["Zoë"]["score"] == 1.0  # Zoë's head-split failed, zoë's broadcast-loss passed: one learner
    assert [r["line"] for r in data["unattributed_rows"]] == [6, 7]


def test_a_later_submitted_at_wins_over_the_files_order(tmp_path, catalog):
    path = tmp_path / "a.csv"
    path.write_text("learner,exercise,answer,submitted_at\n"
                    "ada,head-split,b,2026-11-29T12:00:00Z\n"
                    "ada,head-split,a,2026-11-29T09:00:00Z\n")
    data = results_json(catalog, grade_rows(catalog, read_answers(path, catalog), pool(catalog)), str(path))
    assert data["learners"][0]["score"] == 1.0


@pytest.mark.parametrize("cell, shown", [("=HYPERLINK(1)", "'=HYPERLINK(1)"), ("+1+cmd|x", "'+1+cmd|x"),
                                         ("@sum", "'@sum"), ("-1/4", "'-1/4"), ("-0.25", "-0.25"), ("-1e-3", "-1e-3"),
                                         ("-1+3", "'-1+3"), ("+5", "+5"), ("\tx", "'\tx"), ("\r=1", "'\r=1"),
                                         ("(3, 3)", "(3, 3)"), ("-x", "'-x"), (3, 3)])
def test_a_gradebook_cell_is_never_a_formula(cell, shown):
    assert spreadsheet_safe(cell) == shown


# --- saving ---------------------------------------------------------------------------------------

def test_saving_records_graded_rows_in_order_with_their_time_and_note(answers_csv, catalog, tmp_path):
    store = ProgressStore(tmp_path / "progress")
    results = grade_rows(catalog, read_answers(answers_csv, catalog), pool(catalog))
    notices = []
    save_results(catalog, results, store, notices.append)
    assert notices == []
    assert sorted(p.name for p in store.folder.glob("*.toml")) == \
        ["ada%20lovelace.toml", "ada.toml", "bob.toml", "zo%C3%AB.toml"]
    ada = store.load("ADA")
    assert ada.learner == "ada"  # the name the file was first written with
    [hs] = ada.of("head-split").attempts
    assert (hs.prediction, hs.correct, hs.time) == ("b", True, "2026-11-29T10:00:00+00:00")
    assert ada.of("head-split").note == "the reshape mixes positions"
    assert ada.of("broadcast-loss").attempts[0].time == "2026-11-29T10:05:00+00:00"
    bob = store.load("bob").of("cache-offset").attempts
    assert [a.prediction for a in bob] == ["no"]  # the unreadable "maybe" is in the gradebook, not an attempt
    saved = [r for r in results if r.saved_to is not None]
    assert len(saved) == 6 and all(r.status in ("pass", "fail") for r in saved)
    assert results[0].note_saved and not results[1].note_saved


def test_checks_that_could_not_finish_are_not_saved(answers_csv, catalog, tmp_path):
    store = ProgressStore(tmp_path / "progress")
    results = grade_rows(catalog, read_answers(answers_csv, catalog), pool(catalog, status="error"))
    save_results(catalog, results, store, lambda s: None)
    assert store.learners() == [] and all(r.saved_to is None for r in results)


def test_a_damaged_progress_file_is_moved_aside_and_said(answers_csv, catalog, tmp_path):
    folder = tmp_path / "progress"
    folder.mkdir()
    (folder / "bob.toml").write_text("format_version = 1\n[exercises.x\n")
    notices = []
    save_results(catalog, grade_rows(catalog, read_answers(answers_csv, catalog), pool(catalog)),
                 ProgressStore(folder), notices.append)
    assert len(notices) == 1 and notices[0].startswith("bob.toml could not be used because it is not valid TOML")
    assert len(list(folder.glob("bob.toml.corrupt-*"))) == 1


# --- the command, in process with the fake runner ----------------------------------------------------

class Events:
    def __init__(self):
        self.notices, self.rows = [], []

    def notice(self, sentence):
        self.notices.append(sentence)

    def checked(self, *args):
        pass

    def graded(self, row):
        self.rows.append(row)


def command(argv, **fake):
    from tutor.cli.instructor import grade as grade_command
    args = build_parser().parse_args(argv)
    args.runner_factory = lambda cat, dev: FakeRunner(cat, dev, **fake)
    events = Events()
    return grade_command(args, events), events


def test_the_command_writes_both_files_beside_the_answers(answers_csv, tmp_path):
    reply, events = command(["grade", "--answers", str(answers_csv), "--save", "--progress-dir",
                             str(tmp_path / "progress")])
    out = tmp_path / "week1-graded"
    assert reply.code == 0 and "error" not in reply.data
    assert (out / "gradebook.csv").is_file() and json.loads((out / "results.json").read_text())["schema_version"] == 2
    assert reply.data["counts"] == {"pass": 3, "fail": 3, "unreadable": 3}
    assert reply.data["saved"] == 6 and reply.data["learners"] == 4
    assert len(events.rows) == 9 and events.notices == []
    assert not list(out.glob(".*.tmp"))


def test_the_command_exits_3_when_a_check_could_not_finish_and_still_writes_the_gradebook(answers_csv, tmp_path):
    reply, _ = command(["grade", "--answers", str(answers_csv), "--out", str(tmp_path / "out")], status="timeout")
    assert reply.code == 3 and reply.data["error"].startswith("the check of 6 rows could not finish (lines 2, 3, 4, 5,")
    assert (tmp_path / "out" / "gradebook.csv").is_file()


def test_more_workers_than_cores_is_said_and_capped(answers_csv, tmp_path, monkeypatch):
    import tutor.instructor.grade
    monkeypatch.setattr(tutor.instructor.grade, "usable_cores", lambda: 2)
    reply, events = command(["grade", "--answers", str(answers_csv), "-j", "8", "--out", str(tmp_path / "o")])
    assert reply.data["workers"] == 2 and len(FakeRunner.made) == 2
    assert events.notices == ["-j 8 asks for more check workers than this machine's 2 cores; using 2"]


def test_an_unwritable_out_folder_is_refused_before_any_check(answers_csv, tmp_path):
    target = "/proc/tutor-cannot-write-here" if os.geteuid() == 0 else str(tmp_path / "ro" / "x")
    if os.geteuid() != 0:
        os.mkdir(tmp_path / "ro", 0o500)
    with pytest.raises(UsageError, match="cannot write the gradebook to"):
        command(["grade", "--answers", str(answers_csv), "--out", target])
    assert FakeRunner.made == [] or all(not r.runs for r in FakeRunner.made)


def test_standard_input_needs_an_out_folder():
    with pytest.raises(UsageError, match="--answers - reads standard input; say where the gradebook goes"):
        command(["grade", "--answers", "-"])


# --- through the command line, with the real worker -------------------------------------------------

def test_grade_through_the_command_line_with_the_real_worker(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"learner": "Ada Lovelace", "exercise": "head-split", "answer": "b"}\n'
                       '{"learner": "ada lovelace", "exercise": "broadcast-loss", "answer": "(3,)"}\n'
                       '{"learner": "Zoë", "exercise": "skip-zero-grad", "answer": "-1/4"}\n'
                       '{"learner": "Zoë", "exercise": "cache-offset", "answer": "perhaps"}\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "tutor.cli", "grade", "--answers", str(answers), "--device", "cpu",
                           "--json", "--save", "--progress-dir", str(tmp_path / "progress")],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    data = json.loads(proc.stdout)
    assert [r["status"] for r in data["rows"]] == ["pass", "fail", "fail", "unreadable"]
    assert data["rows"][1]["observed"] == [3, 3] and data["rows"][2]["observed"] == 2.0
    assert data["rows"][3]["reason"] == "cannot read 'perhaps' as yes/no; expected yes or no"
    assert (data["workers"], data["saved"], data["learners"], data["exit_code"]) == (1, 3, 2, 0)
    assert sorted(p.name for p in (tmp_path / "progress").glob("*.toml")) == ["ada%20lovelace.toml", "zo%C3%AB.toml"]
    assert (tmp_path / "answers-graded" / "gradebook.csv").read_text(encoding="utf-8").count("\n") == 5
