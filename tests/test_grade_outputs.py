"""The folder a grading writes: one grader at a time, rows whole or not at all, a failed write is exit 4 and
resumable, and a gradebook whose ``counts`` rows sum to results.json.

These drive the use case (:mod:`tutor.instructor.course`) with the fake runner of test_grade (head-split
observes b, broadcast-loss (3, 3), skip-zero-grad 2, cache-offset no); every figure follows by hand.
"""

from __future__ import annotations

import csv
import errno
import json
import subprocess
import sys

import pytest

from test_grade import FakeRunner, command
from tutor.instructor import course, gradebook, out_folder
from tutor.model.errors import CouldNotSave, UsageError
from tutor.store.progress import ProgressStore

ANSWERS = ("learner,exercise,answer,submitted_at\n"
           "ada,head-split,a,2026-11-29T10:00:00Z\n"      # 2: fail, older
           "ada,head-split,b,2026-11-29T11:00:00Z\n"      # 3: pass, latest: counts
           "ada,broadcast-loss,3x3,\n"                    # 4: pass, untimed: older than line 5
           "ada,broadcast-loss,\"(3,)\",2026-11-29T09:00:00Z\n"  # 5: fail, timed: counts
           "bob,head-split,b,\n"                          # 6: pass, untimed
           "bob,head-split,a,\n"                          # 7: fail, untimed, later line: counts
           "bob,skip-zero-grad,2,\n")                     # 8: pass, not assigned


@pytest.fixture(autouse=True)
def _fresh():
    FakeRunner.made = []


def request(tmp_path, **kw):
    answers = tmp_path / "a.csv"
    answers.write_text(ANSWERS, encoding="utf-8")
    kw = {"out": tmp_path / "o", **kw}
    return course.Request(answers=str(answers), exercises="head-split,broadcast-loss",
                          runner_factory=lambda cat, dev: FakeRunner(cat, dev), **kw)


def notices():
    said = []
    return said, said.append


def test_the_rows_that_count_sum_to_results_json_and_every_view_agrees(tmp_path, catalog):
    said, notice = notices()
    done = course.grade_answers(request(tmp_path), catalog, lambda r: None, notice)
    with open(done.written.gradebook, newline="", encoding="utf-8") as fh:
        book = list(csv.DictReader(fh))
    assert [r["counts"] for r in book] == ["no", "yes", "no", "yes", "no", "yes", "no"]
    assert [r["status"] for r in book] == ["fail", "pass", "pass", "fail", "pass", "fail", "not_assigned"]
    results = json.loads(done.written.results.read_text())
    for learner in results["learners"]:
        who = learner["extra_data"]["learner"]
        summed = sum(float(r["score"]) for r in book if r["learner"] == who and r["counts"] == "yes")
        assert summed == learner["score"], who
        assert [t["extra_data"]["line"] for t in learner["tests"] if t["extra_data"]["line"]] == \
            [int(r["line"]) for r in book if r["learner"] == who and r["counts"] == "yes"]
    assert {e["extra_data"]["learner"]: e["score"] for e in results["learners"]} == {"ada": 1.0, "bob": 0.0}
    rows = [json.loads(line) for line in done.written.rows_file.read_text().splitlines()]
    assert [r["counts"] for r in rows] == [r["counts"] == "yes" for r in book]


def test_progress_keeps_an_untimed_row_older_than_a_timed_one_as_results_json_does(tmp_path, catalog):
    store = ProgressStore(tmp_path / "p")
    course.grade_answers(request(tmp_path, store=store), catalog, lambda r: None, notices()[1])
    ada = store.load("ada")
    latest = ada.exercises["broadcast-loss"].latest  # the same rule: line 5 (timed) over line 4 (untimed)
    assert latest.prediction in ("(3,)", "(3)") and latest.correct is False
    assert ada.exercises["head-split"].latest.correct is True


def test_a_second_grader_of_one_folder_is_refused_in_one_sentence(tmp_path, catalog):
    (tmp_path / "o").mkdir()
    held = out_folder.hold(tmp_path / "o")
    try:
        with pytest.raises(UsageError, match=r"another grader is writing to .* now; .* its own --out$"):
            course.grade_answers(request(tmp_path), catalog, lambda r: None, notices()[1])
        assert FakeRunner.made == []  # nothing ran
        assert not (tmp_path / "o" / gradebook.ROWS).exists()
    finally:
        held.release()
    course.grade_answers(request(tmp_path), catalog, lambda r: None, notices()[1])  # free again


def test_a_second_grader_of_one_progress_folder_and_shard_is_refused(tmp_path, catalog):
    store = ProgressStore(tmp_path / "p")
    store.folder.mkdir()
    held = out_folder.progress_lock(store.folder, "1/2")
    try:
        with pytest.raises(UsageError, match="another grader of shard 1/2 is saving to"):
            course.grade_answers(request(tmp_path, store=store, shard="1/2"), catalog, lambda r: None, notices()[1])
        course.grade_answers(request(tmp_path, store=store, shard="2/2", out=tmp_path / "o2"), catalog, lambda r: None,
                             notices()[1])  # another shard shares the folder
    finally:
        held.release()


def test_two_graders_at_once_on_the_command_line_one_exits_2(tmp_path):
    answers = tmp_path / "a.csv"
    answers.write_text(ANSWERS, encoding="utf-8")
    (tmp_path / "o").mkdir()
    code = ("import sys, time, filelock; l = filelock.FileLock(sys.argv[1], timeout=0); l.acquire(); "
            "print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "o" / out_folder.LOCK)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        reply = subprocess.run([sys.executable, "-m", "tutor.cli", "grade", "--answers", str(answers), "--exercises",
                                "head-split", "--out", str(tmp_path / "o"), "--json"], capture_output=True,
                               text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert reply.returncode == 2 and "another grader is writing to" in json.loads(reply.stdout)["error"]


def test_a_full_disk_mid_grade_is_exit_4_with_whole_lines_and_resumes(tmp_path, catalog, monkeypatch):
    real, calls = gradebook.write_all, []

    def full_after_three_rows(fd, data):
        calls.append(len(data))
        if len(calls) == 10:  # the header pair, three rows' pairs, then the fourth row's gradebook line fails
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(gradebook, "write_all", full_after_three_rows)
    with pytest.raises(CouldNotSave, match=r"could not be written \(No space left on device\); .* --resume$"):
        course.grade_answers(request(tmp_path), catalog, lambda r: None, notices()[1])
    lines = (tmp_path / "o" / gradebook.ROWS).read_text().splitlines()
    assert [json.loads(line)["line"] for line in lines] == [2, 3, 4]  # whole rows only, the fourth rolled back
    with open(tmp_path / "o" / gradebook.GRADEBOOK, newline="", encoding="utf-8") as fh:
        assert [r["line"] for r in csv.DictReader(fh)] == ["2", "3", "4"]
    monkeypatch.setattr(gradebook, "write_all", real)
    done = course.grade_answers(request(tmp_path, resume=True), catalog, lambda r: None, notices()[1])
    assert done.resumed == 3 and [r.row.line for r in done.graded] == [5, 6, 7, 8]
    assert done.written.rows == 7


def test_a_failed_write_of_the_last_files_is_exit_4_and_keeps_every_row(tmp_path, monkeypatch):
    import tutor.instructor.tail as tail

    def no_room(path):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tail, "open_atomically", no_room)
    answers = tmp_path / "a.csv"
    answers.write_text(ANSWERS, encoding="utf-8")
    with pytest.raises(CouldNotSave) as refused:
        command(["grade", "--answers", str(answers), "--exercises", "head-split", "--out", str(tmp_path / "o")])
    assert len((tmp_path / "o" / gradebook.ROWS).read_text().splitlines()) == 7  # every graded row kept
    import tutor.cli as cli
    monkeypatch.setitem(cli.COMMANDS, "grade", lambda args, events: (_ for _ in ()).throw(refused.value))
    assert cli.main(["grade", "--answers", str(answers), "--json"]) == 4


def test_a_note_too_long_to_save_is_a_warning_and_the_grading_still_exits_0(tmp_path, catalog):
    answers = tmp_path / "a.csv"
    answers.write_text("learner,exercise,answer,note\nada,head-split,b," + "x" * 20001 + "\n", encoding="utf-8")
    reply, _ = command(["grade", "--answers", str(answers), "--exercises", "head-split", "--out", str(tmp_path / "o"),
                        "--save", "--progress-dir", str(tmp_path / "p")])
    [row] = reply.data["rows"]
    assert reply.code == 0 and row["saved"] and row["save_error"] is None and not row["note_saved"]
    assert any("note" in w for w in row["warnings"])


def test_a_read_only_progress_folder_names_the_fix_grading_has(tmp_path, catalog):
    import os
    answers = tmp_path / "a.csv"
    answers.write_text("learner,exercise,answer\nada,head-split,b\n", encoding="utf-8")
    (tmp_path / "p").mkdir()
    os.chmod(tmp_path / "p", 0o500)
    try:
        if os.access(tmp_path / "p", os.W_OK):
            pytest.skip("this user writes anywhere (root): a read-only folder cannot be made")
        with pytest.raises(UsageError) as refused:
            command(["grade", "--answers", str(answers), "--exercises", "head-split", "--out", str(tmp_path / "o"),
                     "--save", "--progress-dir", str(tmp_path / "p")])
        assert "--no-save" not in str(refused.value) and "without --save" in str(refused.value)
    finally:
        os.chmod(tmp_path / "p", 0o700)


def test_rows_stream_from_the_file_as_they_are_graded(tmp_path, catalog, monkeypatch):
    from tutor.instructor import answer_rows
    answers = tmp_path / "big.csv"
    answers.write_text("learner,exercise,answer\n" + "".join(f"l{n},head-split,b\n" for n in range(60)),
                       encoding="utf-8")
    read, at_first_grade = [0], []
    checked = answer_rows.Checker.__call__

    def counting(self, line, fields):
        read[0] += 1
        return checked(self, line, fields)

    monkeypatch.setattr(answer_rows.Checker, "__call__", counting)

    def graded(outcome):
        if not at_first_grade:
            at_first_grade.append(read[0])

    req = course.Request(answers=str(answers), out=tmp_path / "o", exercises="head-split",
                         runner_factory=lambda cat, dev: FakeRunner(cat, dev))
    done = course.grade_answers(req, catalog, graded, lambda s: None)
    assert done.written.rows == 60 and read[0] == 60
    assert at_first_grade[0] <= 3  # the first row was graded long before the file was read


def test_progress_on_a_pipe_is_a_line_of_counts_now_and_then_and_at_the_end(monkeypatch):
    import io
    from types import SimpleNamespace
    from tutor.cli.instructor import Progress
    monkeypatch.setattr(Progress, "EVERY", 2)
    err = io.StringIO()
    with Progress(err) as progress:
        for status in ("pass", "fail", "pass", "unreadable", "pass"):
            progress.graded(SimpleNamespace(status=status))
    assert err.getvalue().splitlines() == ["graded 2 rows: 1 fail, 1 pass", "graded 4 rows: 1 fail, 2 pass, 1 unreadable",
                                           "graded 5 rows: 1 fail, 3 pass, 1 unreadable"]
