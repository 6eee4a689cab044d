"""Wide LMS exports read as their LMS writes them, the learner's LMS identity kept, the LMS's own dates read,
and names with quoted nicknames or invisible characters graded under a reported stem.

The fixtures in tests/lms/ carry the real headers of Canvas's quiz "Student Analysis" report and Moodle's
quiz "Responses" report. The fake runner of test_grade observes head-split b, broadcast-loss (3, 3) and
cache-offset no, so every status below is derived by hand.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from test_grade import FakeRunner, read_answers
from tutor.instructor import course, wide
from tutor.instructor.answer_rows import _time
from tutor.model.errors import UsageError

LMS = Path(__file__).parent / "lms"
THREE = "head-split,broadcast-loss,cache-offset"

@pytest.fixture(autouse=True)
def _fresh():
    FakeRunner.made = []


def grade(tmp_path, name, **kw):
    answers = tmp_path / name
    shutil.copy(LMS / name, answers)
    req = course.Request(answers=str(answers), out=tmp_path / "o", runner_factory=lambda c, d: FakeRunner(c, d), **kw)
    done = course.grade_answers(req, course_catalog(), lambda r: None, lambda s: None)
    with open(done.written.gradebook, newline="", encoding="utf-8") as fh:
        return done, list(csv.DictReader(fh)), json.loads(done.written.results.read_text())


def course_catalog():
    from tutor.store.catalog_cache import load_catalog
    return load_catalog()


def test_a_canvas_student_analysis_export_is_read_by_question_id_or_title(tmp_path):
    done, book, results = grade(tmp_path, "canvas_student_analysis.csv", exercises=THREE)
    got = [(r["learner"], r["exercise"], r["answer"], r["status"]) for r in book]
    assert got == [("Lovelace, Ada", "head-split", "b", "pass"), ("Lovelace, Ada", "broadcast-loss", "(3,)", "fail"),
                   ("Lovelace, Ada", "cache-offset", "no", "pass"),
                   ("Robert (Bob) Smith", "head-split", "a", "fail"),
                   ("Robert (Bob) Smith", "broadcast-loss", "(3, 3)", "pass"),  # cache-offset left empty: no row
                   ("Zoë García", "head-split", "b", "pass"), ("Zoë García", "broadcast-loss", "3x3", "pass"),
                   ("Zoë García", "cache-offset", "yes", "fail")]
    ada = book[0]
    assert (ada["sis_id"], ada["student_id"], ada["section"]) == ("S-1001", "40123", "CS 231 Section 01")
    assert ada["submitted_at"] == "2026-11-29T10:00:00+00:00"
    by = {e["extra_data"]["learner"]: e for e in results["learners"]}
    assert by["Lovelace, Ada"]["extra_data"]["sis_id"] == "S-1001" and by["Lovelace, Ada"]["score"] == 2.0
    assert by["Zoë García"]["extra_data"]["sis_id"] is None and by["Zoë García"]["score"] == 2.0
    assert results["unattributed_rows"] == []  # the nickname's row has its learner


def test_a_moodle_responses_export_maps_response_n_to_the_assignments_nth_exercise(tmp_path):
    done, book, results = grade(tmp_path, "moodle_responses.csv", exercises=THREE)
    got = [(r["learner"], r["exercise"], r["answer"], r["status"], r["submitted_at"]) for r in book]
    assert got == [("ada@uni.edu", "head-split", "b", "pass", "2026-11-29T10:00:00+00:00"),
                   ("ada@uni.edu", "broadcast-loss", "(3,)", "fail", "2026-11-29T10:00:00+00:00"),
                   ("ada@uni.edu", "cache-offset", "no", "pass", "2026-11-29T10:00:00+00:00"),
                   ("bob@uni.edu", "head-split", "a", "fail", "2026-11-29T11:30:00+00:00"),
                   ("bob@uni.edu", "broadcast-loss", "(3, 3)", "pass", "2026-11-29T11:30:00+00:00"),
                   ("zoe@uni.edu", "head-split", "b", "pass", "")]  # in progress: no completion time
    assert book[0]["student_id"] == "S-1001"
    assert {e["extra_data"]["learner"]: e["score"] for e in results["learners"]} == \
        {"ada@uni.edu": 2.0, "bob@uni.edu": 1.0, "zoe@uni.edu": 1.0}


def test_a_wide_export_is_detected_or_forced_and_an_unmapped_question_is_refused(tmp_path, catalog):
    header = next(csv.reader(open(LMS / "canvas_student_analysis.csv", encoding="utf-8")))
    assert wide.detect(header) == "canvas"
    assert wide.detect(next(csv.reader(open(LMS / "moodle_responses.csv", encoding="utf-8")))) == "moodle"
    assert wide.detect(["learner", "exercise", "answer"]) is None
    from tutor.instructor import assignment as assignments
    two = assignments.from_ids("head-split,cache-offset", catalog)
    with pytest.raises(UsageError, match=r"'2718282: A perfect prediction with a nonzero loss' .* names no exercise "
                                         "of the assignment"):
        read_answers(LMS / "canvas_student_analysis.csv", catalog, assignment=two)
    with pytest.raises(UsageError, match="'Response 3' but the assignment lists 2 exercises"):
        read_answers(LMS / "moodle_responses.csv", catalog, assignment=two)
    with pytest.raises(UsageError, match="give --assignment listing the quiz's exercises"):
        read_answers(LMS / "moodle_responses.csv", catalog)
    long = tmp_path / "long.csv"
    long.write_text("learner,exercise,answer\nada,head-split,b\n")
    with pytest.raises(UsageError, match="is not a wide export"):
        read_answers(long, catalog, layout="wide")
    rows = read_answers(LMS / "canvas_student_analysis.csv", catalog)  # no assignment: by the catalog's ids and titles
    assert [r.exercise for r in rows[:3]] == ["head-split", "broadcast-loss", "cache-offset"]


@pytest.mark.parametrize("text, iso", [
    ("29 November 2026  10:00 AM", "2026-11-29T10:00:00+00:00"),   # Moodle
    ("29 November 2026 2:05 PM", "2026-11-29T14:05:00+00:00"),
    ("Sunday, 29 November 2026, 10:00 AM", "2026-11-29T10:00:00+00:00"),
    ("2026-11-29 10:00:00 UTC", "2026-11-29T10:00:00+00:00"),      # Canvas
    ("2026-11-29T10:00:00-05:00", "2026-11-29T15:00:00+00:00"),
])
def test_the_lms_own_date_formsread_answers(text, iso):
    assert _time(text) == (iso, None)


def test_a_time_that_does_not_read_is_a_warning_and_the_row_untimed():
    when, warning = _time("yesterday")
    assert when is None and "graded without a time" in warning


def test_a_nickname_or_an_invisible_character_is_graded_under_a_reported_name(tmp_path, catalog):
    answers = tmp_path / "a.csv"
    answers.write_text('learner,exercise,answer\n"Robert ""Bob"" Smith",head-split,b\n'
                       "Ada\u200b Lovelace,head-split,a\nAda\u00a0Lovelace,cache-offset,no\n", encoding="utf-8")
    rows = read_answers(answers, catalog)
    assert [(r.learner, r.problem) for r in rows] == [("Robert (Bob) Smith", None), ("Ada Lovelace", None),
                                                       ("Ada Lovelace", None)]
    assert "graded as 'Robert (Bob) Smith'" in rows[0].warnings[0]
    assert "graded as 'Ada Lovelace'" in rows[1].warnings[0]
    from tutor.store.names import file_stem
    assert file_stem(rows[1].learner) == "ada%20lovelace" and rows[1].key == rows[2].key
