"""The class's grading piece by piece: each pure function of tutor/instructor against inputs made by hand.

The end-to-end tests (test_grade*.py) drive these through a whole grading; here each rule is pinned where it
lives, so a one-line change to it fails a test that names the rule (scripts/mutation.sh scores them).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest

from exercises.faults import Fault
from test_grade import OBSERVED, FakeRunner
from test_mutants_rules import _result as _measured  # a worker's RunResult of head-split, as the rules tests make it
from tutor.instructor import columns, memo, shard, wide
from tutor.instructor.gradescope import _OnePool  # the pool over one runner that already exists
from tutor.model.errors import UsageError
from tutor.sandbox.protocol import Side
from tutor.sandbox.result import RunResult


# --- memo: which measurements a class shares ----------------------------------------------------------------

def test_the_source_hashes_digest_each_packages_python_files_by_path_and_bytes(tmp_path, monkeypatch):
    for rel, text in {"engine/model.py": "A = 1\n", "engine/sub/part.py": "B = 2\n", "engine/notes.txt": "x",
                      "exercises/checks.py": "C = 3\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    monkeypatch.setattr(memo, "source_root", lambda: tmp_path)
    by_hand = hashlib.sha256(b"engine/model.pyA = 1\nengine/sub/part.pyB = 2\n").hexdigest()[:12]
    exercises = hashlib.sha256(b"exercises/checks.pyC = 3\n").hexdigest()[:12]
    assert memo.source_hashes.__wrapped__() == (by_hand, exercises)  # the .txt is not source
    (tmp_path / "engine/notes.txt").write_text("changed")
    (tmp_path / "engine/sub/part.py").write_text("B = 3\n")
    assert memo.source_hashes.__wrapped__()[0] != by_hand


def test_the_torch_version_comes_from_metadata_and_is_a_question_mark_without_torch(monkeypatch):
    assert memo.torch_version.__wrapped__() == metadata.version("torch")

    def missing(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(memo.metadata, "version", missing)
    assert memo.torch_version.__wrapped__() == "?"


def test_a_sides_digest_is_of_names_faults_and_file_contents_in_order():
    fault = Fault(id="f", file="engine/model.py", before="a", after="b", summary="s")
    sides = [Side("clean"), Side("learner", fault, (("engine/model.py", "x = 1\udcff"),))]
    by_hand = hashlib.sha256()
    by_hand.update(repr(("clean", None)).encode())
    by_hand.update(repr(("learner", fault)).encode())
    by_hand.update(b"engine/model.py\0x = 1\xed\xb3\xbf\0")
    assert memo.sides_digest(sides) == by_hand.hexdigest()[:16]
    variants = [sides[::-1], [sides[0]], [Side("clean"), replace(sides[1], name="other")],
                [Side("clean"), replace(sides[1], files=(("engine/model.py", "x = 2"),))],
                [Side("clean"), replace(sides[1], fault=None)]]
    assert len({memo.sides_digest(sides)} | {memo.sides_digest(v) for v in variants}) == 6


def test_a_memo_key_is_everything_a_measurement_depends_on_and_nothing_of_the_learner():
    engine, exercises = memo.source_hashes()
    sides = [Side("clean")]
    assert memo.key("head-split", 7, sides, "cpu") == \
        ("head-split", 7, memo.sides_digest(sides), engine, exercises, memo.torch_version(), "cpu")
    assert len(engine) == len(exercises) == 12


def test_new_observations_have_measured_and_reused_nothing():
    fresh = memo.Observations()
    assert (fresh.measured, fresh.reused, fresh._kept, fresh._running) == (0, 0, {}, {})


def test_observations_count_every_reuse_and_keep_nothing_without_a_status():
    observations = memo.Observations()
    observations.get(("k",), lambda: _measured("ok"))
    for _ in range(3):
        observations.get(("k",), lambda: _measured("error"))
    assert (observations.measured, observations.reused) == (1, 3)
    assert observations.get(("other",), lambda: None) == (None, False)  # nothing to keep: measured again
    assert observations.get(("other",), lambda: "again") == ("again", False)
    assert (observations.measured, observations.reused, observations._running) == (3, 3, {})


@pytest.mark.parametrize("prediction, status", [("b", "pass"), ("a", "fail")])
def test_graded_grades_a_kept_measurement_without_changing_it(catalog, prediction, status):
    exercise = catalog.get("head-split")
    measured = _measured("ok", observed="b", evidence={"shape": [1]}, errors={"e": 1}, output={"clean": "o"},
                         observations={"clean": "b"})
    result = memo.graded(exercise, measured, prediction)
    assert (result.status, result.correct, result.prediction, result.prediction_text) == \
        (status, status == "pass", prediction, exercise.kind.show_prediction(exercise.kind.parse(prediction)))
    for field in ("evidence", "errors", "output", "observations"):
        assert getattr(result, field) == getattr(measured, field)
        assert getattr(result, field) is not getattr(measured, field)  # a copy: the next row's grading is its own
    assert (measured.status, measured.correct, measured.prediction) == ("ok", None, None)


def test_graded_leaves_a_measurement_that_raised_ungraded(catalog):
    result = memo.graded(catalog.get("head-split"), _measured("error", errors={"clean": "boom"}), "b")
    assert (result.status, result.correct, result.prediction) == ("error", None, "b")


# --- shard: a class across machines ------------------------------------------------------------------------

@pytest.mark.parametrize("text, part", [(None, None), ("1/4", (1, 4)), (" 2 / 3 ", (2, 3)), ("4/4", (4, 4)),
                                        ("1/1", (1, 1)), ("12/20", (12, 20))])
def test_a_shard_reads_as_k_of_n(text, part):
    assert shard.parse(text) == part


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/b", "1/4/2", "", "-1/4", "1 4"])
def test_a_shard_that_is_not_k_of_n_is_refused_with_an_example(text):
    with pytest.raises(UsageError) as caught:
        shard.parse(text)
    assert str(caught.value) == ("--shard takes K/N with 1 <= K <= N, such as 1/4 for the first of four shards; "
                                 f"{text!r} is not one")


def test_a_learner_lands_on_the_shard_of_the_first_eight_bytes_of_their_keys_hash():
    for key in ("ada", "grace", "émile", "x\udcff"):
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        expected = int.from_bytes(digest[:8], "big") % 5 + 1
        assert shard.number(key, 5) == expected
        assert [shard.belongs(key, (k, 5)) for k in range(1, 6)] == [k == expected for k in range(1, 6)]
    assert shard.number("ada", 1) == 1
    assert {shard.number(f"learner{i}", 4) for i in range(100)} == {1, 2, 3, 4}


def _rows_file(folder, rows):
    folder.mkdir()
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_merged_rows_keep_each_submission_once_in_the_folders_order(tmp_path):
    _rows_file(tmp_path / "a", [{"submission": "s1", "line": 2}, {"submission": "s2", "line": 3}])
    _rows_file(tmp_path / "b", [{"submission": "s2", "line": 3}, {"submission": "s2", "line": 4},
                                {"submission": "s3", "line": 5}, {"submission": "s9", "line": 2}])
    merged = list(shard.merge_rows([tmp_path / "a", tmp_path / "b"]))
    assert [(r["submission"], r["line"]) for r in merged] == [("s1", 2), ("s2", 3), ("s2", 4), ("s3", 5),
                                                              ("s9", 2)]  # another file's line 2 is another row


def test_merging_a_folder_with_no_graded_rows_names_it_before_giving_any_of_its_rows(tmp_path):
    _rows_file(tmp_path / "a", [{"submission": "s1", "line": 2}])
    (tmp_path / "empty").mkdir()
    found = shard.merge_rows([tmp_path / "a", tmp_path / "empty"])
    assert next(found)["submission"] == "s1"
    with pytest.raises(UsageError) as caught:
        next(found)
    assert str(caught.value) == (f"{tmp_path / 'empty'} holds no graded rows (rows.jsonl); name folders that "
                                 "tutor grade wrote")


# --- columns: which column is which field ------------------------------------------------------------------

@pytest.mark.parametrize("header, normal", [(" Submitted At ", "submitted_at"), ("SIS-User-ID", "sis_user_id"),
                                            ("learner", "learner"), ("Student Number", "student_number")])
def test_a_header_is_compared_trimmed_lower_case_with_underscores(header, normal):
    assert columns.normal(header) == normal


def test_a_mapping_reads_the_cells_a_row_has():
    mapping = columns.Mapping({"learner": 0, "answer": 2, "note": 5})
    assert mapping.fields(["ada", "x", "b"]) == {"learner": "ada", "answer": "b"}


def test_columns_read_field_equals_column_pairs():
    assert columns.parse_columns(None) == columns.parse_columns("") == {}
    assert columns.parse_columns(" Learner = Email ,answer=Response,note=-, submitted-at=When") == \
        {"learner": "Email", "answer": "Response", "note": None, "submitted_at": "When"}
    assert columns.parse_columns("answer=a=b") == {"answer": "a=b"}  # the first = splits


@pytest.mark.parametrize("text, part", [("learner", "learner"), ("pupil=Email", "pupil=Email"),
                                        ("learner=", "learner="), ("learner=Email,, ", ""),
                                        ("answer= ", "answer=")])
def test_columns_that_are_not_field_equals_column_name_the_part(text, part):
    with pytest.raises(UsageError) as caught:
        columns.parse_columns(text)
    assert str(caught.value) == (
        "--columns takes FIELD=COLUMN pairs separated by commas, such as learner=Email,exercise=Question,"
        "answer=Response (fields: learner, exercise, answer, note, submitted_at, seed, sis_id, student_id, "
        f"section); {part!r} is not one")


def test_columns_naming_a_field_twice_are_refused():
    with pytest.raises(UsageError, match="^--columns names the learner column twice; name it once$"):
        columns.parse_columns("learner=Email,Learner=Name")


def test_exact_names_then_synonyms_are_read_and_other_columns_ignored():
    header = ["Student", "Exercise_ID", "Prediction", "Explain", "Submitted", "Score", "SIS User ID", "Seed"]
    assert columns.resolve(header).columns == {"learner": 0, "exercise": 1, "answer": 2, "note": 3,
                                               "submitted_at": 4, "sis_id": 6, "seed": 7}
    assert columns.resolve(["ID number", "learner", "exercise", "answer"]).columns == \
        {"student_id": 0, "learner": 1, "exercise": 2, "answer": 3}


def test_named_columns_win_and_free_the_other_spellings():
    header = ["Email", "Name", "Question", "Response", "learner"]
    named = columns.parse_columns("learner=Email,exercise=Question,answer=Response")
    assert columns.resolve(header, named).columns == {"learner": 0, "exercise": 2, "answer": 3}
    # a named column is matched exactly first, loosely (as normal() reads it) otherwise
    assert columns.resolve([" e-mail ", "exercise", "answer"], {"learner": "E Mail"}).columns == \
        {"learner": 0, "exercise": 1, "answer": 2}
    # FIELD=- : the file has no such column, so an ambiguous one is not that field
    assert columns.resolve(["learner", "exercise", "answer", "time"], {"submitted_at": None}).columns == \
        {"learner": 0, "exercise": 1, "answer": 2}
    # a field said to have no column does not stop the others named after it
    assert columns.resolve(["Email", "exercise", "answer"], {"note": None, "learner": "Email"}).columns == \
        {"learner": 0, "exercise": 1, "answer": 2}
    # an exact match wins over headers that only read alike
    assert columns.resolve(["Q", "q", "learner", "answer"], {"exercise": "q"}).columns == \
        {"exercise": 1, "learner": 2, "answer": 3}
    # the other claims on a named field are passed over, and the fields after them still read
    assert columns.resolve(["Email", "learner", "exercise", "answer"], {"learner": "Email"}).columns == \
        {"learner": 0, "exercise": 2, "answer": 3}


def _refusal(header, named=None, source=None) -> str:
    with pytest.raises(UsageError) as caught:
        columns.resolve(header, named) if source is None else columns.resolve(header, named, source)
    return str(caught.value)


def test_a_named_column_the_header_lacks_is_refused_with_what_it_has():
    assert _refusal(["learner", " ", "answer"], {"exercise": "Question"}, "a.csv") == \
        "--columns names the column 'Question' for exercise, but a.csv has no such column (it has learner, answer)"
    assert _refusal([" "], {"exercise": "Q"}).endswith("(it has nothing)")
    assert len(_refusal(["x" * 150, "y" * 150], {"exercise": "Q"})) == \
        len("--columns names the column 'Q' for exercise, but the answers file has no such column (it has )") + 200


def test_a_named_column_the_header_has_twice_is_refused():
    assert _refusal(["Q", "Q", "learner", "answer"], {"exercise": "Q"}) == (
        "the answers file has 2 columns called 'Q'; rename one so that --columns exercise=Q names one column")


def test_two_columns_for_one_field_are_refused_naming_both():
    assert _refusal(["learner", "Student", "exercise", "answer"]) == (
        "the answers file has 2 columns that may be the learner ('learner' and 'Student'); say which with "
        "--columns learner=learner")


@pytest.mark.parametrize("column, field, other", [("ID", "exercise", "a student number"),
                                                  ("Name", "learner", "an exercise's name"),
                                                  ("Time", "submitted_at", "the time spent")])
def test_an_ambiguous_column_is_never_guessed(column, field, other):
    header = [h for h in ["learner", "exercise", "answer"] if h != field] + [column]
    # a field every row needs cannot be said absent ("=-"): the advice names the column form instead
    instead = f"--columns {field}=-" if field == "submitted_at" else \
        f"--columns {field}=COLUMN naming the column that holds it"
    assert _refusal(header) == (
        f"the column {column!r} of the answers file may be the {field} or {other}, so it is not guessed; say "
        f"which with --columns {field}={column} or {instead} (the header has {', '.join(header)})")


def test_a_header_without_the_required_fields_says_which_are_missing():
    assert _refusal(["learner", "note"]) == (
        "the answers file has no column exercise, answer in its header (it has learner, note); the header needs "
        "learner, exercise and answer, or name the columns with --columns learner=COLUMN,exercise=COLUMN,"
        "answer=COLUMN")


# --- wide: one row per student turned into one row per answer ----------------------------------------------

def _catalog():
    exercises = [SimpleNamespace(id="head-split", title="Splitting heads"),
                 SimpleNamespace(id="head", title="Heads"),
                 SimpleNamespace(id="heads-up", title="Heads up"),
                 SimpleNamespace(id="cache-offset", title="The cache offset")]
    by_id = {e.id: e for e in exercises}
    return SimpleNamespace(exercises=exercises, get=by_id.__getitem__)


CANVAS = ["name", "id", "sis_id", "section", "submitted", "attempt", "101: head-split", "1.0",
          "102: Splitting Heads  and more", "1.0", "103: the cache offset", "1.0", "n correct", "score"]
MOODLE = ["Surname", "First name", "ID number", "Email address", "Department", "State", "Completed",
          "Grade/2.00", "Response 1", "Right answer 1", "Response 2"]


@pytest.mark.parametrize("header, layout", [
    (CANVAS, "canvas"), (MOODLE, "moodle"), ([h.replace("Surname", "Last  Name") for h in MOODLE], "moodle"),
    ([h for h in CANVAS if h != "sis_id"], None), ([h for h in CANVAS if ":" not in h], None),
    ([h for h in MOODLE if h != "First name"], None), ([h for h in MOODLE if h != "Surname"], None),
    ([h for h in MOODLE if not h.startswith("Response")], None), (["learner", "exercise", "answer"], None)])
def test_a_wide_layout_is_found_by_its_header(header, layout):
    assert wide.detect(header) == layout


def test_a_canvas_export_gives_a_row_per_answered_question_with_the_lms_identity():
    rows = [(2, ["Ada L", "17", "S-1", "Sec A", "2026-11-29 10:00:00 UTC", "1", " b ", "1", "(2, 3)", "0", "", "0"]),
            (3, ["Grace", "18", "", "", "", "1", "a", "1", "-", "0", "no"])]
    out = list(wide.expand(CANVAS, iter(rows), "canvas", _catalog(), None, "q.csv"))
    ada = {"learner": "Ada L", "sis_id": "S-1", "student_id": "17", "section": "Sec A",
           "submitted_at": "2026-11-29 10:00:00 UTC"}
    assert out == [(2, {**ada, "exercise": "head-split", "answer": " b "}),
                   (2, {**ada, "exercise": "head-split", "answer": "(2, 3)"}),
                   (3, {"learner": "Grace", "student_id": "18", "exercise": "head-split", "answer": "a"}),
                   (3, {"learner": "Grace", "student_id": "18", "exercise": "cache-offset", "answer": "no"})]


@pytest.mark.parametrize("text, exercise", [("head-split", "head-split"), ("HEAD-SPLIT", "head-split"),
                                            ("splitting   heads", "head-split"), ("heads", "head"),
                                            ("Splitting heads: reshape or view?", "head-split"),
                                            ("head-split2", "head"), ("headsup", None), ("head-splits", "head"),
                                            ("heads up: which?", "heads-up"), ("head-splitx!", "head"), ("head", "head"),
                                            ("the cache offset (KV cache)", "cache-offset"), ("nothing", None)])
def test_a_canvas_question_names_its_exercise_by_id_or_title_at_the_start(text, exercise):
    found = wide._canvas_exercise(text, _catalog().exercises)
    assert (found.id if found else None) == exercise


def test_a_canvas_question_naming_no_exercise_is_refused():
    header = ["name", "sis_id", "submitted", "7: what is a tensor?"]
    with pytest.raises(UsageError) as caught:
        list(wide.expand(header, iter([]), "canvas", _catalog(), None, "q.csv"))
    assert str(caught.value) == ("the question column '7: what is a tensor?' of q.csv names no exercise of the "
                                 "catalog; start each question's text with its exercise id or title (such as "
                                 "'12345: head-split')")
    long = "7: " + "a" * 80
    with pytest.raises(UsageError) as caught:
        list(wide.expand(["name", "sis_id", "submitted", long], iter([]), "canvas", _catalog(), None, "q.csv"))
    assert str(caught.value).startswith(f"the question column {long[:60]!r} of q.csv names no exercise")
    assignment = SimpleNamespace(exercises=[SimpleNamespace(id="cache-offset")])
    with pytest.raises(UsageError, match="^the question column '101: head-split' of q.csv names no exercise of "
                                         "the assignment;"):
        list(wide.expand(CANVAS, iter([]), "canvas", _catalog(), assignment, "q.csv"))


def test_a_moodle_export_maps_response_n_to_the_assignments_nth_exercise():
    assignment = SimpleNamespace(exercises=[SimpleNamespace(id="cache-offset"), SimpleNamespace(id="head-split")])
    rows = [(2, ["Lovelace", "Ada", "ID7", "ada@x.org", "Maths", "Finished", "29 November 2026  10:00 AM", "2",
                 "yes", "no", "b"]),
            (3, ["Hopper", "Grace", "", "", "", "Finished", "-", "1", "-", "", " "]),
            (4, ["Turing", "Alan", "", "", "", "Finished", "", "1", "no"]),
            (5, ["Overall average", "", "", "", "", "", "", "1.5", "0.50", "", "0.75"]),
            (6, ["", "", "", "", "", "", "", "", "yes", "", ""]),
            (7, ["Hopper", "Grace", "", "", "", "Finished", "-", "1", "no", "", "a"])]
    header = [h if h != "Email address" else "Institution" for h in MOODLE]
    out = list(wide.expand(MOODLE, iter(rows), "moodle", _catalog(), assignment, "r.csv"))
    ada = {"learner": "ada@x.org", "student_id": "ID7", "section": "Maths",
           "submitted_at": "29 November 2026  10:00 AM"}
    assert out == [(2, {**ada, "exercise": "cache-offset", "answer": "yes"}),
                   (2, {**ada, "exercise": "head-split", "answer": "b"})]
    named = list(wide.expand(header, iter(rows), "moodle", _catalog(), assignment, "r.csv"))
    assert [(line, r["learner"], r["exercise"]) for line, r in named] == [
        (2, "Ada Lovelace", "cache-offset"), (2, "Ada Lovelace", "head-split"), (4, "Alan Turing", "cache-offset"),
        (7, "Grace Hopper", "cache-offset"), (7, "Grace Hopper", "head-split")]  # the average row is no learner's
    assert "submitted_at" not in named[2][1] and "submitted_at" not in named[3][1]  # "-": not completed
    no_completed = [h for h in header if h != "Completed"]
    cells = ["Lovelace", "Ada", "", "", "", "Finished", "2", "yes", "", "b"]
    assert list(wide.expand(no_completed, iter([(2, cells)]), "moodle", _catalog(), assignment, "r.csv")) == [
        (2, {"learner": "Ada Lovelace", "exercise": "cache-offset", "answer": "yes"}),
        (2, {"learner": "Ada Lovelace", "exercise": "head-split", "answer": "b"})]


def test_a_moodle_export_needs_an_assignment_with_an_exercise_per_response():
    with pytest.raises(UsageError) as caught:
        list(wide.expand(MOODLE, iter([]), "moodle", _catalog(), None, "r.csv"))
    assert str(caught.value) == ("r.csv is a Moodle Responses export, whose questions are numbered, not named; "
                                 "give --assignment listing the quiz's exercises in its order")
    for listed, plural in ((["cache-offset"], ""), ([], "s")):
        assignment = SimpleNamespace(exercises=[SimpleNamespace(id=i) for i in listed])
        with pytest.raises(UsageError) as caught:
            list(wide.expand(MOODLE, iter([]), "moodle", _catalog(), assignment, "r.csv"))
        assert str(caught.value) == (f"r.csv has the column {'Response 2' if listed else 'Response 1'!r} but the "
                                     f"assignment lists {len(listed)} exercise{plural}; list one per question, in "
                                     "the quiz's order")


def test_cells_a_short_row_lacks_are_empty_and_left_out():
    header = ["name", "sis_id", "submitted", "101: head-split", "1.0", "103: the cache offset", "section"]
    rows = [(2, ["Ada", "S-1", "2026-11-29 10:00:00 UTC", "b", "1", "no"]),  # no section cell
            (3, ["Grace", "S-2", "", "a", "0"])]                           # the last question's cell is missing too
    assert list(wide.expand(header, iter(rows), "canvas", _catalog(), None, "q.csv")) == [
        (2, {"learner": "Ada", "sis_id": "S-1", "submitted_at": "2026-11-29 10:00:00 UTC", "exercise": "head-split",
             "answer": "b"}),
        (2, {"learner": "Ada", "sis_id": "S-1", "submitted_at": "2026-11-29 10:00:00 UTC",
             "exercise": "cache-offset", "answer": "no"}),
        (3, {"learner": "Grace", "sis_id": "S-2", "exercise": "head-split", "answer": "a"})]


# --- saving: each graded row recorded in its learner's file -------------------------------------------------

def _row(status: str = "pass", learner: str = "ada", answer: str = "b", line: int = 2, note: str | None = None):
    from tutor.instructor.answer_rows import AnswerRow
    from tutor.instructor.grade import RowResult
    row = AnswerRow(line=line, learner=learner, key=learner, exercise="head-split", answer=answer, note=note,
                    submitted_at="2026-11-30T09:00:00+00:00")
    result = _measured(status, prediction=answer, prediction_text=answer,
                       **({"observed": "b", "correct": answer == "b"} if status in ("pass", "fail") else {}))
    return RowResult(row=row, status=status, result=result)


class CountingStore:
    """A ProgressStore that counts its loads and can refuse to record."""

    def __init__(self, root, refuse: str | None = None):
        from tutor.store.progress import ProgressStore
        self.inner, self.loads, self.refuse = ProgressStore(root), [], refuse

    def load(self, learner, move_aside=True):
        self.loads.append(learner)
        return self.inner.load(learner, move_aside=move_aside)

    def record_attempt(self, *args, **kwargs):
        from tutor.model.attempts import ProgressError
        if self.refuse:
            raise ProgressError(self.refuse)
        return self.inner.record_attempt(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_learners_file_is_read_once_and_their_session_kept(tmp_path, catalog):
    from tutor.instructor.saving import Saver
    store, notices = CountingStore(tmp_path), []
    saver = Saver(catalog, store, notices.append)
    rows = [_row(answer="b"), _row(answer="a", line=3), _row(learner="grace"), _row(answer="c", line=4)]
    saver(rows[0])
    session = saver.sessions["ada"]
    for r in rows[1:]:
        saver(r)
    assert store.loads == ["ada", "grace"] and saver.sessions["ada"] is session  # one session per learner
    assert [r.saved_to for r in rows] == [store.path("ada")] * 2 + [store.path("grace"), store.path("ada")]
    assert sorted(saver.sessions) == ["ada", "grace"] and saver.sessions["ada"].catalog is catalog
    with pytest.raises(RuntimeError, match="^this session only records$"):
        saver.sessions["ada"].runner.run(catalog.get("head-split"))
    runner = saver.sessions["ada"].runner
    assert (runner.warm_up(), runner.cancel(), runner.close()) == ({}, None, None)
    assert [a.prediction for a in store.load("ada").of("head-split").attempts] == ["b", "a", "c"]
    assert notices == []


def test_a_submission_the_file_holds_already_is_not_saved_again(tmp_path, catalog):
    from tutor.instructor.saving import Saver
    store = CountingStore(tmp_path)
    first = _row()
    Saver(catalog, store, lambda _: None)(first)
    assert (first.already_saved, first.saved_to) == (False, store.path("ada"))
    again, twice = _row(), _row()
    saver = Saver(catalog, store, lambda _: None)
    saver(again)
    saver(twice)
    assert (again.already_saved, again.saved_to, twice.already_saved) == (True, None, True)
    assert len(store.load("ada").of("head-split").attempts) == 1
    fresh = Saver(catalog, store, lambda _: None)
    one, same = _row(learner="grace"), _row(learner="grace")
    fresh(one)
    fresh(same)  # saved a moment ago by this saver: the same submission
    assert (one.already_saved, same.already_saved, len(store.load("grace").of("head-split").attempts)) == \
        (False, True, 1)


def test_a_note_too_long_to_save_is_a_warning_on_a_saved_row(tmp_path, catalog):
    from tutor.instructor.saving import Saver
    from tutor.store.progress import MAX_NOTE_CHARS
    store, notices = CountingStore(tmp_path), []
    row = _row(note="n" * (MAX_NOTE_CHARS + 1))
    Saver(catalog, store, notices.append)(row)
    [warning] = row.row.warnings
    assert warning.startswith("the attempt was saved but its note was not: ")
    assert (row.saved_to, row.save_error, row.note_saved) == (store.path("ada"), None, False)
    assert notices == [f"line 2 (ada, head-split): {warning}"]
    assert len(store.load("ada").of("head-split").attempts) == 1


def test_an_attempt_that_cannot_be_saved_is_said_on_the_row_and_to_the_instructor(tmp_path, catalog):
    from tutor.instructor.saving import Saver
    store, notices = CountingStore(tmp_path, refuse="the disk is full"), []
    row, later = _row(), _row(line=3)  # the same submission, on another line
    saver = Saver(catalog, store, notices.append)
    saver(row)
    saver(later)
    assert (row.saved_to, row.save_error, row.row.warnings) == (None, "the disk is full", [])
    assert later.already_saved is False  # not saved, so not held: the next row tries again
    assert notices == ["line 2 (ada, head-split): the attempt was not saved: the disk is full",
                       "line 3 (ada, head-split): the attempt was not saved: the disk is full"]


# --- gradebook: gradebook.csv and rows.jsonl, a whole row at a time ---------------------------------------

def test_a_rows_cells_follow_the_columns_as_text_a_spreadsheet_shows_and_never_runs():
    from tutor.instructor import gradebook
    row = {"line": 2, "learner": "=ada", "exercise": "head-split", "answer": "-1+3", "status": "pass",
           "prediction": "raw", "prediction_text": "b", "observed": "raw", "observed_text": "(2, 3)",
           "warnings": ["late", "seed"], "same_as": [], "score": 0.5, "points": -0.25, "duration_s": 1.23456,
           "confined": True, "reused": False, "saved": None, "seed": 0}
    cells = dict(zip(gradebook.COLUMNS, gradebook.cells(row)))
    assert len(gradebook.cells(row)) == len(gradebook.COLUMNS) == 27
    assert (cells["line"], cells["learner"], cells["answer"], cells["prediction"], cells["observed"]) == \
        ("2", "'=ada", "'-1+3", "b", "(2, 3)")
    assert (cells["warnings"], cells["same_as"], cells["score"], cells["points"], cells["duration_s"]) == \
        ("late | seed", "", "0.5", "-0.25", "1.235")
    assert (cells["confined"], cells["reused"], cells["saved"], cells["seed"], cells["sis_id"]) == \
        ("yes", "no", "", "0", "")
    assert gradebook.cells({"duration_s": 2})[gradebook.COLUMNS.index("duration_s")] == "2.000"
    assert gradebook.cells({"score": 1e-7})[gradebook.COLUMNS.index("score")] == "1e-07"


def test_the_gradebook_text_quotes_every_cell_and_ends_lines_with_crlf():
    from tutor.instructor import gradebook
    text = gradebook.to_csv([{"line": 2, "answer": 'a "b",\nc'}])
    header, rest = text.split("\r\n", 1)
    assert header == ",".join(f'"{c}"' for c in gradebook.COLUMNS)
    assert rest.startswith('"2","","","","","","","a ""b"",\nc",') and rest.endswith('"\r\n')
    assert gradebook.header_line() == (header + "\r\n").encode()
    assert gradebook.row_line({"line": 2, "answer": "é"}) == text.replace('a "b",\nc', "é").split("\r\n", 1)[1] \
        .replace('a ""b"",\nc', "é").encode("utf-8")


def _jsonl(folder, text: bytes):
    folder.mkdir(exist_ok=True)
    (folder / "rows.jsonl").write_bytes(text)
    return folder


def test_the_rows_so_far_count_each_submission_and_end_at_the_last_whole_row(tmp_path):
    from tutor.instructor import gradebook
    assert gradebook.graded_so_far(tmp_path / "none") == gradebook.Earlier({}, 0, 0, True)
    lines = [b'{"submission": "s1", "line": 2}\n', b'[1, 2]\n', b'{"submission": "s1", "line": 3}\n',
             b'{"line": 4}\n']
    folder = _jsonl(tmp_path / "a", b"".join(lines) + b'{"submission": "s2", "li')
    earlier = gradebook.graded_so_far(folder)
    assert (earlier.held, earlier.rows, earlier.end, earlier.newline) == \
        ({"s1": 2, "": 1}, 3, sum(map(len, lines)), True)
    assert [r.get("line") for r in gradebook.read_rows(folder)] == [2, 3, 4]
    with open(folder / "rows.jsonl", "rb") as fh:
        assert [offset for offset, _ in gradebook.rows_with_offsets(fh)] == \
            [0, len(lines[0]) + len(lines[1]), sum(map(len, lines[:3]))]
    no_newline = _jsonl(tmp_path / "b", lines[0] + b'{"submission": "s3"}')
    earlier = gradebook.graded_so_far(no_newline)
    assert (earlier.held, earlier.rows, earlier.end, earlier.newline) == \
        ({"s1": 1, "s3": 1}, 2, len(lines[0]) + len(b'{"submission": "s3"}'), False)


def test_every_byte_is_written_even_when_the_system_writes_a_few_at_a_time(tmp_path, monkeypatch):
    import os
    from tutor.instructor import gradebook
    calls, real = [], os.write
    monkeypatch.setattr(gradebook.os, "write", lambda fd, data: calls.append(len(data)) or real(fd, data[:3]))
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        gradebook.write_all(fd, b"0123456789")
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"0123456789" and calls == [10, 7, 4, 1]


def test_a_writer_appends_whole_rows_and_cuts_both_files_back_when_a_write_fails(tmp_path, monkeypatch):
    from tutor.instructor import gradebook
    writer = gradebook.Writer(tmp_path)
    writer.append({"line": 2, "submission": "s1"})
    rows, book = (tmp_path / "rows.jsonl").read_bytes(), (tmp_path / "gradebook.csv").read_bytes()
    assert rows == b'{"line": 2, "submission": "s1"}\n'
    assert book == gradebook.header_line() + gradebook.row_line({"line": 2, "submission": "s1"})
    real, seen = gradebook.write_all, []

    def fails_on_the_gradebook(fd, data):  # the disk fills up part way through the gradebook's line
        seen.append(data)
        if len(seen) == 2:
            real(fd, data[:5])
            raise OSError(28, "No space left on device")
        real(fd, data)
    monkeypatch.setattr(gradebook, "write_all", fails_on_the_gradebook)
    with pytest.raises(OSError, match="No space left"):
        writer.append({"line": 3, "learner": "é"})
    monkeypatch.setattr(gradebook, "write_all", real)
    assert (tmp_path / "rows.jsonl").read_bytes() == rows and (tmp_path / "gradebook.csv").read_bytes() == book
    writer.append({"line": 4, "learner": "é"})  # written where the whole rows end
    assert (tmp_path / "rows.jsonl").read_bytes() == rows + '{"line": 4, "learner": "é"}\n'.encode()
    writer.close()
    writer.close()  # closing twice is harmless
    assert writer._fds == []
    import stat
    for name in ("rows.jsonl", "gradebook.csv"):  # data, never a program: no execute bit for anyone
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) & 0o111 == 0


@pytest.mark.parametrize("tail, joiner", [(b"\n", b""), (b"", b"\n")])
def test_a_resumed_writer_keeps_the_whole_rows_and_writes_the_gradebook_again(tmp_path, tail, joiner):
    from tutor.instructor import gradebook
    whole = b'{"line": 2, "submission": "s1"}' + tail
    # killed with a row in flight (longer than the row written after it), or between a row and its newline
    _jsonl(tmp_path, whole + (b'{"line": 3, "submission": "s2", "answer": "a long answer, cut sh' if tail else b""))
    (tmp_path / "gradebook.csv").write_bytes(b"stale")
    writer = gradebook.Writer(tmp_path, gradebook.graded_so_far(tmp_path))
    writer.append({"line": 3, "submission": "s2"})
    kept = (tmp_path / "rows.jsonl").read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gradebook, "write_all", lambda fd, data: (_ for _ in ()).throw(OSError(28, "full")))
        with pytest.raises(OSError):
            writer.append({"line": 4})
    assert (tmp_path / "rows.jsonl").read_bytes() == kept  # cut back to the rows kept and written, no further
    writer.close()
    assert kept == whole + joiner + b'{"line": 3, "submission": "s2"}\n'
    assert (tmp_path / "gradebook.csv").read_bytes() == gradebook.header_line() + \
        gradebook.row_line({"line": 2, "submission": "s1"}) + gradebook.row_line({"line": 3, "submission": "s2"})
    fresh = gradebook.Writer(tmp_path, gradebook.Earlier())  # nothing kept: both files start empty
    fresh.close()
    assert (tmp_path / "rows.jsonl").read_bytes() == b"" and \
        (tmp_path / "gradebook.csv").read_bytes() == gradebook.header_line()


# --- json_items: an array read a chunk at a time --------------------------------------------------------------

def _items(text: str, monkeypatch=None, chunk: int | None = None, cap: int | None = None):
    import io
    from tutor.instructor import json_items
    if chunk is not None:
        monkeypatch.setattr(json_items, "JSON_CHUNK", chunk)
    if cap is not None:
        monkeypatch.setattr(json_items, "MAX_JSON_ITEM", cap)
    return list(json_items.items(io.StringIO(text), "a.json"))


def _array_refusal(text, monkeypatch, chunk=None, cap=None) -> str:
    with pytest.raises(UsageError) as caught:
        _items(text, monkeypatch, chunk, cap)
    return str(caught.value)


def _refused(msg: str, line: int) -> str:
    return (f"a.json is not a JSON array of objects ({msg}, line {line}); fix it, or write one object per line "
            "(JSON lines)")


def test_an_array_with_nothing_before_its_bracket_reads_from_its_first_item():
    assert _items("[1, 2]") == [(1, 1), (2, 2)]
    assert _items('[{"a": 1}]') == [(1, {"a": 1})]
    assert _items("[]") == _items("  []  \n") == _items("[\n]") == []


@pytest.mark.parametrize("chunk", [1, 3, 4, 65536])
@pytest.mark.parametrize("text, msg, line", [
    ('[\n{"a": 1},\n{"b": 2}\n{"c": 3}]', "Expecting ',' delimiter", 4),
    ('[\n{"a": 1},\n\n{"b": }]\n\n', "Expecting value", 4),
    ("[1]\n\nx\n", "Extra data", 3),
    ("[]x", "Extra data", 1),
    ('[\n{"a": 1}\n\n', "Expecting ',' delimiter", 4),
    ("[1,\n X2]", "Expecting value", 2),
    ('[\n{"a": 1}\n{"c": 3}\n\n]\n', "Expecting ',' delimiter", 3)])
def test_an_array_that_does_not_parse_names_the_line_wherever_the_chunks_fall(monkeypatch, chunk, text, msg, line):
    assert _array_refusal(text, monkeypatch, chunk=chunk) == _refused(msg, line)


def test_the_cap_is_on_what_one_item_holds_unparsed_not_on_the_items_read_before_it(monkeypatch):
    many = "[" + ", ".join(f'"item{i:04d}"' for i in range(40)) + "]"
    assert [item for _, item in _items(many, monkeypatch, chunk=64, cap=100)] == [f"item{i:04d}" for i in range(40)]
    # held unparsed as the buffer grows: 3, 7, 15 characters; refused only once more than the cap is held
    assert _items('["xxxxxx"]', monkeypatch, chunk=4, cap=7) == [(1, "xxxxxx")]
    assert _array_refusal('[\n"xxxxxxxxxxxxxxxxxxxxxx"]', monkeypatch, chunk=4, cap=7) == \
        _refused("item 1 is longer than 0 MiB or does not end", 2)
    # the line is where the item starts, whatever newlines the held text has after it
    assert _array_refusal('[\n"xxxxxxxxxx\nxx\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]', monkeypatch, chunk=4, cap=7) == \
        _refused("item 1 is longer than 0 MiB or does not end", 2)


def test_an_item_longer_than_the_cap_is_refused_in_mebibytes(monkeypatch):
    text = '[{"a": 1},\n"' + "x" * (5 * 2**20) + '"]'
    assert _array_refusal(text, monkeypatch, cap=3 * 2**20) == \
        _refused("item 2 is longer than 3 MiB or does not end", 2)


@pytest.mark.parametrize("text, first", [("", ""), (" \n\t\r ", ""), ("\ufeff [1]", "["), ("XX[", "X"),
                                         (" " * 5000 + "{", "{"), ("\ufeff" * 3 + "\n{}", "{")])
def test_the_first_character_passes_over_spaces_and_byte_order_marks_and_rewinds(text, first):
    import io
    from tutor.instructor import json_items
    fh = io.StringIO(text)
    fh.read(1)
    assert json_items.first_char(fh) == first and fh.tell() == 0


def test_reading_the_rows_stops_at_a_line_that_is_not_utf_8_json(tmp_path):
    from tutor.instructor import gradebook
    _jsonl(tmp_path, b'{"line": 2}\n{"answer": "\xff"}\n{"line": 4}\n')
    assert gradebook.read_rows(tmp_path) == [{"line": 2}]


def test_a_file_whose_only_whole_line_is_one_byte_is_kept_as_it_lay(tmp_path):
    from tutor.instructor import gradebook
    _jsonl(tmp_path, b"7")
    earlier = gradebook.graded_so_far(tmp_path)
    assert (earlier.rows, earlier.end, earlier.newline) == (0, 1, False)
    gradebook.Writer(tmp_path, earlier).close()
    assert (tmp_path / "rows.jsonl").read_bytes() == b"7\n"


# --- tail: the class's files again from rows.jsonl, a row at a time -------------------------------------------

def _plan():
    from tutor.instructor.assignment import Assigned, Assignment
    return Assignment((Assigned("head-split"), Assigned("cache-offset", points=2.0)), name="hw1")


#: rows in the order the workers finished, not the answers file's; the expected flags are worked out by hand
FINISHED = [
    {"line": 3, "key": "ada", "learner": "Ada", "exercise": "head-split", "status": "pass", "confined": True,
     "submitted_at": "2026-11-30T10:00:00+00:00", "duration_s": 1.5, "submission": "a3", "warnings": ["seed"]},
    {"line": 2, "key": "ada", "learner": "Ada L", "exercise": "head-split", "status": "fail", "confined": True,
     "submitted_at": "2026-11-30T11:00:00+00:00", "duration_s": 1.0, "submission": "a2"},  # later: it counts
    {"line": 5, "key": "grace", "learner": "Grace", "exercise": "cache-offset", "status": "pass", "confined": False,
     "reused": True, "duration_s": 2.0, "submission": "g5"},
    {"line": 4, "key": None, "learner": None, "exercise": "head-split", "status": "unreadable",
     "reason": "no learner", "submission": "x4"},
    {"line": 6, "key": "grace", "learner": "Grace", "exercise": "mystery", "status": "not_assigned",
     "reason": "not assigned", "submission": "g6"},
    {"line": 1, "key": "ada", "learner": "Ada Lovelace", "exercise": "cache-offset", "status": "timeout",
     "warnings": ["late"], "submission": "a1"},
    # graded when the exercise was not assigned (a grading resumed with another assignment): never counts
    {"line": 7, "key": "grace", "learner": "Grace", "exercise": "head-split", "status": "not_assigned",
     "reason": "not assigned", "submission": "g7"}]


def _scanned(tmp_path, rows):
    from tutor.instructor import tail
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    fh = open(tmp_path / "rows.jsonl", "rb")
    return fh, tail.scan(fh, _plan())


def test_the_first_pass_counts_statuses_and_finds_the_row_that_counts(tmp_path):
    fh, found = _scanned(tmp_path, FINISHED)
    with fh:
        assert (found.in_order, list(found.lines), found.counts, found.warnings, found.ran, found.confined) == \
            (False, [3, 2, 5, 4, 6, 1, 7], {"pass": 2, "fail": 1, "unreadable": 1, "not_assigned": 2, "timeout": 1},
             2, 3, 2)
        offsets = list(found.offsets)
        assert offsets[0] == 0 and offsets == sorted(offsets)
        assert {k: v[2] for k, v in found.best.items()} == {("ada", "head-split"): offsets[1],
                                                            ("grace", "cache-offset"): offsets[2],
                                                            ("ada", "cache-offset"): offsets[5]}
        assert [(u[0], u[2], u[3]) for u in found.unattributed] == [(4, "unreadable", "no learner"),
                                                                   (6, "not_assigned", "not assigned")]
        assert sorted(found.learners) == ["ada", "grace"]
        assert found.learners["ada"].attempts == {"head-split": 2, "cache-offset": 1}
        assert found.learners["grace"].attempts == {"cache-offset": 1}  # the unassigned row is no attempt
    in_order = sorted(FINISHED, key=lambda r: r["line"])
    fh, found = _scanned(tmp_path, in_order)
    with fh:
        assert found.in_order is True
    fh, found = _scanned(tmp_path, [{"line": 1, "status": "pass"}, {"line": 1, "status": "fail"},
                                    {"line": 2, "status": "pass"}])
    with fh:
        assert found.in_order is True  # a tie is in order: nothing to sort
    fh, found = _scanned(tmp_path, [{"line": 2, "status": "pass", "key": "a", "exercise": "head-split"},
                                    {"status": "unreadable", "key": None, "reason": "no line"}])
    with fh:
        assert (found.in_order, list(found.lines), [u[0] for u in found.unattributed]) == (False, [2, 0], [0])


def test_the_second_pass_writes_the_rows_in_line_order_and_results_as_the_in_memory_grading_does(tmp_path):
    import datetime as dt
    from tutor.instructor import gradebook, results, tail
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
    titles = {"head-split": "Splitting heads", "cache-offset": "The cache offset"}
    fh, found = _scanned(tmp_path, FINISHED)
    with fh:
        tail.write(tmp_path, fh, found, _plan(), titles, "answers.csv", now)
    written = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    in_order = sorted(FINISHED, key=lambda r: r["line"])
    assert [r["line"] for r in written] == [1, 2, 3, 4, 5, 6, 7]
    assert [r["counts"] for r in written] == [True, True, False, False, True, False, False]
    assert [{k: v for k, v in r.items() if k != "counts"} for r in written] == in_order
    assert (tmp_path / "gradebook.csv").read_bytes() == \
        gradebook.header_line() + b"".join(gradebook.row_line(r) for r in written)
    expected = results.class_results(in_order, _plan(), titles, "answers.csv", now)
    assert json.loads((tmp_path / "results.json").read_text()) == expected
    assert expected["confined"] is False and [e["extra_data"]["learner"] for e in expected["learners"]] == \
        ["Ada Lovelace", "Grace"]  # the name of the learner's first line, whatever order the rows finished in


def test_results_say_nothing_of_confinement_when_no_check_ran_and_list_no_learner(tmp_path):
    import datetime as dt
    from tutor.instructor import tail
    fh, found = _scanned(tmp_path, [FINISHED[3]])
    with fh:
        tail.write(tmp_path, fh, found, _plan(), {}, "a.csv", dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    out = json.loads((tmp_path / "results.json").read_text())
    assert (out["confined"], out["learners"], out["unattributed_rows"]) == \
        (None, [], [{"line": 4, "status": "unreadable", "reason": "no learner"}])
    assert '"learners": [],' in (tmp_path / "results.json").read_text()


# --- assignment: which exercises are graded, for how many points, and when observations show ----------------

def _parsed(data, catalog, where="w.toml"):
    from tutor.instructor import assignment
    return assignment.parse(data, catalog, where)


def _assignment_refusal(data, catalog) -> str:
    with pytest.raises(UsageError) as caught:
        _parsed(data, catalog)
    return str(caught.value)


def test_an_assignment_reads_its_exercises_points_seeds_and_visibility(catalog):
    import datetime as dt
    from tutor.instructor.assignment import Assigned
    plan = _parsed({"name": "Week 1", "due": "2026-12-05T23:59:00Z", "observations": "after_due_date",
                    "visibility": "hidden",
                    "exercises": [{"id": " Head-Split ", "points": 2}, "broadcast-loss",
                                  {"id": "cache-offset", "hidden_seeds": [7, 0], "visibility": "visible",
                                   "points": 0.5}]}, catalog)
    assert plan.exercises == (Assigned("head-split", 2.0, (), "hidden"), Assigned("broadcast-loss", 1.0, (), "hidden"),
                              Assigned("cache-offset", 0.5, (7, 0), "visible"))
    assert (plan.name, plan.due, plan.observations, plan.source, plan.inferred) == \
        ("Week 1", dt.datetime(2026, 12, 5, 23, 59, tzinfo=dt.timezone.utc), "after_due_date", "w.toml", False)
    assert (plan.ids, plan.max_score, plan.get("broadcast-loss").points, plan.get("nope")) == \
        (["head-split", "broadcast-loss", "cache-offset"], 3.5, 1.0, None)
    assert plan.to_dict() == {"name": "Week 1", "source": "w.toml", "inferred": False, "due": "2026-12-05T23:59:00+00:00",
                              "observations": "after_due_date", "max_score": 3.5, "exercises": [
                                  {"id": "head-split", "points": 2.0, "hidden_seeds": 0, "visibility": "hidden"},
                                  {"id": "broadcast-loss", "points": 1.0, "hidden_seeds": 0, "visibility": "hidden"},
                                  {"id": "cache-offset", "points": 0.5, "hidden_seeds": 2, "visibility": "visible"}]}
    short = _parsed({"exercises": ["head-split"]}, catalog)
    assert (short.name, short.due, short.observations, short.exercises[0].visibility) == ("", None, "visible", "visible")
    assert short.to_dict()["due"] is None


def test_observations_show_when_visible_or_once_due():
    import datetime as dt
    from tutor.instructor.assignment import Assigned, Assignment
    due = dt.datetime(2026, 12, 5, tzinfo=dt.timezone.utc)
    later = Assignment((Assigned("a"),), due=due, observations="after_due_date")
    assert [later.shows_observations(due + dt.timedelta(seconds=s)) for s in (-1, 0, 1)] == [False, True, True]
    assert Assignment((Assigned("a"),), observations="after_due_date").shows_observations(due) is False
    assert Assignment((Assigned("a"),)).shows_observations(due) is True


@pytest.mark.parametrize("due, read", [
    ("2026-12-05T23:59:00+02:00", (2026, 12, 5, 21, 59, 0)), (" 2026-12-05T23:59 ", (2026, 12, 5, 23, 59, 0)),
    ("2026-12-05", (2026, 12, 5, 0, 0, 0))])
def test_a_due_time_reads_as_utc(catalog, due, read):
    import datetime as dt
    assert _parsed({"due": due, "exercises": ["head-split"]}, catalog).due == \
        dt.datetime(*read, tzinfo=dt.timezone.utc)


def test_a_toml_date_is_due_at_the_end_of_its_day_and_a_toml_time_is_utc(catalog):
    import datetime as dt
    from tutor.instructor import assignment
    assert assignment._due(dt.date(2026, 12, 5), "w") == dt.datetime(2026, 12, 5, 23, 59, 59, tzinfo=dt.timezone.utc)
    assert assignment._due(dt.datetime(2026, 12, 5, 8), "w") == dt.datetime(2026, 12, 5, 8, tzinfo=dt.timezone.utc)
    assert assignment._due(None, "w") is None


@pytest.mark.parametrize("data, sentence", [
    ({"exercises": ["head-split"], "title": "x"},
     "w.toml has the unknown key 'title'; its keys are due, exercises, name, observations, visibility"),
    ({"name": 3, "exercises": ["head-split"]}, "the name in w.toml must be text"),
    ({"visibility": "public", "exercises": ["head-split"]},
     "the visibility 'public' in w.toml is not one of visible, hidden, after_due_date, after_published"),
    ({"observations": "never", "exercises": ["head-split"]},
     "observations = 'never' in w.toml is not one of visible, after_due_date"),
    ({"observations": "after_due_date", "exercises": ["head-split"]},
     "w.toml hides observations until the due date but sets no due; add due = 2026-12-05T23:59:00Z"),
    ({"due": "Friday", "exercises": ["head-split"]},
     "the due 'Friday' in w.toml is not a date and time such as 2026-12-05T23:59:00Z"),
    ({"due": 5, "exercises": ["head-split"]},
     "the due in w.toml is not a date and time such as 2026-12-05T23:59:00Z"),
    ({}, 'w.toml lists no exercises; add [[exercises]] tables with an id each, or exercises = ["head-split", ...]'),
    ({"exercises": []}, 'w.toml lists no exercises; add [[exercises]] tables with an id each, or exercises = '
                        '["head-split", ...]'),
    ({"exercises": "head-split"}, 'w.toml lists no exercises; add [[exercises]] tables with an id each, or '
                                  'exercises = ["head-split", ...]'),
    ({"exercises": ["head-split", {"points": 1}]}, 'exercise 2 of w.toml has no id; write id = "head-split"'),
    ({"exercises": [3]}, 'exercise 1 of w.toml has no id; write id = "head-split"'),
    ({"exercises": [{"id": "head-split", "weight": 2}]},
     "exercise 'head-split' of w.toml has the unknown key 'weight'; its keys are id, points, hidden_seeds, visibility"),
    ({"exercises": [{"id": "head-split", "points": True}]},
     "the points of 'head-split' in w.toml must be a number, 0 (practice) or more"),
    ({"exercises": [{"id": "head-split", "points": "2"}]},
     "the points of 'head-split' in w.toml must be a number, 0 (practice) or more"),
    ({"exercises": [{"id": "head-split", "points": -1}]},
     "the points of 'head-split' in w.toml must be a number, 0 (practice) or more"),
    ({"exercises": [{"id": "head-split", "points": float("nan")}]},
     "the points of 'head-split' in w.toml must be a number, 0 (practice) or more"),
    ({"exercises": [{"id": "head-split", "hidden_seeds": 7}]},
     "the hidden_seeds of 'head-split' in w.toml must be a list of whole numbers 0 or more"),
    ({"exercises": [{"id": "head-split", "hidden_seeds": [1, -1]}]},
     "the hidden_seeds of 'head-split' in w.toml must be a list of whole numbers 0 or more"),
    ({"exercises": [{"id": "head-split", "hidden_seeds": [True]}]},
     "the hidden_seeds of 'head-split' in w.toml must be a list of whole numbers 0 or more"),
    ({"exercises": [{"id": "head-split", "hidden_seeds": [1.5]}]},
     "the hidden_seeds of 'head-split' in w.toml must be a list of whole numbers 0 or more"),
    ({"exercises": [{"id": "head-split", "visibility": "shown"}]},
     "the visibility 'shown' of 'head-split' in w.toml is not one of visible, hidden, after_due_date, after_published"),
    ({"exercises": ["head-split", "HEAD-SPLIT"]}, "w.toml names 'head-split' twice; name each exercise once")])
def test_a_wrong_field_of_an_assignment_is_one_sentence_naming_it(catalog, data, sentence):
    assert _assignment_refusal(data, catalog) == sentence


def test_an_assignment_naming_no_exercise_of_the_catalog_says_which(catalog):
    assert _assignment_refusal({"exercises": ["head-spilt"]}, catalog).startswith(
        "w.toml names 'head-spilt', which is not an exercise (there is no exercise 'head-spilt'; did you mean head-split")


def test_points_of_zero_are_practice_and_seeds_of_zero_are_seeds(catalog):
    plan = _parsed({"exercises": [{"id": "head-split", "points": 0, "hidden_seeds": [0]}]}, catalog)
    assert (plan.exercises[0].points, plan.exercises[0].hidden_seeds, plan.max_score) == (0.0, (0,), 0.0)


def test_exercises_from_the_command_line_are_one_point_each(catalog):
    from tutor.instructor import assignment
    plan = assignment.from_ids(" Head-Split, ,broadcast-loss ", catalog)
    assert (plan.ids, plan.max_score, plan.inferred, plan.name) == (["head-split", "broadcast-loss"], 2.0, False, "")
    for text, sentence in ((" , ", "--exercises needs exercise ids separated by commas, such as "
                                   "head-split,broadcast-loss"),
                           ("head-split,head-split", "--exercises names 'head-split' twice; name each exercise once")):
        with pytest.raises(UsageError) as caught:
            assignment.from_ids(text, catalog)
        assert str(caught.value) == sentence
    with pytest.raises(UsageError, match="^--exercises names 'nope', which is not an exercise"):
        assignment.from_ids("nope", catalog)


def test_an_inferred_assignment_is_the_named_exercises_in_catalog_order(catalog):
    from tutor.instructor import assignment
    ids = [e.id for e in catalog.exercises]
    plan = assignment.inferred(catalog, {ids[5], ids[2], "not-an-exercise"})
    assert (plan.ids, plan.inferred, plan.max_score) == ([ids[2], ids[5]], True, 2.0)


def test_an_assignment_file_is_read_as_toml_or_refused_in_one_sentence(tmp_path, catalog):
    from tutor.instructor import assignment
    good = tmp_path / "w.toml"
    good.write_text('\ufeffname = "W"\ndue = 2026-12-05T23:59:00Z\n[[exercises]]\nid = "head-split"\npoints = 2\n',
                    encoding="utf-8")
    plan = assignment.load(good, catalog)
    assert (plan.name, plan.max_score, plan.source, plan.due.isoformat()) == \
        ("W", 2.0, str(good), "2026-12-05T23:59:00+00:00")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    for path, start in ((tmp_path / "none.toml", f"there is no assignment file {tmp_path / 'none.toml'}; check the "
                                                 "path given to --assignment"),
                        (bad, f"the assignment file {bad} is not valid TOML (Invalid value (at line 1, column 8))"),
                        (binary, f"cannot read the assignment file {binary} ("),
                        (tmp_path, f"cannot read the assignment file {tmp_path} (")):
        with pytest.raises(UsageError) as caught:
            assignment.load(path, catalog)
        assert str(caught.value).startswith(start)


# --- results: each learner's Gradescope result ----------------------------------------------------------------

def test_a_tests_output_says_the_answer_the_observation_and_the_verdict():
    from tutor.instructor.results import output_for
    row = {"status": "pass", "prediction_text": "b", "observed_text": "b"}
    assert output_for(None, True) == "No answer was submitted for this exercise."
    assert output_for(row, True) == "You predicted b. The check observed b. Your prediction matched."
    assert output_for({**row, "status": "fail", "observed_text": "c"}, True) == \
        "You predicted b. The check observed c. Your prediction did not match."
    assert output_for({"status": "unreadable", "answer": "  maybe\nb " + "x" * 100, "reason": "it is no choice"},
                      True) == f"Your answer {('maybe b ' + 'x' * 100)[:80]!r} could not be graded: it is no choice."
    assert output_for({"status": "unreadable", "answer": None, "reason": "empty"}, True) == \
        "Your answer '' could not be graded: empty."
    assert output_for({"status": "timeout", "reason": "the check ran past 60 s"}, False) == \
        "The check could not finish (timeout): the check ran past 60 s. This is not your mistake."


def test_before_the_due_time_an_output_says_only_that_the_answer_was_recorded():
    import datetime as dt
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.results import output_for
    due = Assignment((Assigned("a"),), due=dt.datetime(2026, 12, 5, 23, 59, tzinfo=dt.timezone.utc),
                     observations="after_due_date")
    row = {"status": "fail", "prediction_text": "b", "observed_text": "c"}
    assert output_for(row, False, due) == ("Your prediction b was recorded. Whether it is right, and what the check "
                                           "observed, are shown after the due time (2026-12-05T23:59+00:00).")
    assert output_for({**row, "mode": "fix"}, False) == ("Your repair was recorded. Whether it is right, and what the "
                                                        "check observed, are shown after the due time.")
    assert output_for(row, False, Assignment((Assigned("a"),))).endswith("shown after the due time.")


def test_a_repairs_output_says_fixed_or_why_not_and_what_its_version_observed():
    from tutor.instructor.results import output_for
    fix = {"mode": "fix", "status": "pass"}
    assert output_for(fix, True) == "Your repair: fixed."
    assert output_for({**fix, "verdict": "fixed at every seed", "observed_text": "(2, 3)"}, True) == \
        "Your repair: fixed at every seed. Your version observed (2, 3)."
    assert output_for({**fix, "status": "fail"}, True) == "Your repair: not fixed."
    assert output_for({**fix, "status": "fail", "reason": "seed 7 still fails", "verdict": "not fixed"}, True) == \
        "Your repair: seed 7 still fails."
    assert output_for({**fix, "reason": "ignored when it passes"}, True) == "Your repair: fixed."


@pytest.mark.parametrize("asked, show, shown", [("visible", True, "visible"), ("visible", False, "after_due_date"),
                                                ("hidden", False, "hidden"), ("after_published", False,
                                                                              "after_published"),
                                                ("hidden", True, "hidden")])
def test_a_visible_test_is_held_back_to_the_due_date_while_observations_are(asked, show, shown):
    from tutor.instructor.results import _visibility
    assert _visibility(asked, show) == shown


def test_confinement_is_all_of_the_checks_that_ran_or_none():
    from tutor.instructor.results import _confined
    assert (_confined([]), _confined([{"confined": None}]), _confined([{"confined": True}, {}]),
            _confined([{"confined": True}, {"confined": False}])) == (None, None, True, False)


def test_a_learner_summary_takes_the_first_lines_name_the_last_lines_identity_and_the_seconds_run():
    from tutor.instructor.results import Learner
    summary = Learner()
    summary.take((3, 0), {"learner": "Ada L", "sis_id": "S3", "duration_s": 1.5, "confined": True})
    summary.take((1, 1), {"learner": "Ada", "sis_id": "S1", "section": "A", "reused": True, "duration_s": 9.0,
                          "confined": False})
    summary.take((2, 2), {"learner": "", "student_id": "7", "duration_s": None})
    summary.take((4, 3), {"sis_id": "", "section": "B", "duration_s": 0.25})
    assert (summary.name, summary.identity, summary.elapsed, summary.ran, summary.confined, summary.all_confined) == \
        ("Ada", {"sis_id": "S3", "student_id": "7", "section": "B"}, 1.75, 2, 1, False)
    assert Learner().all_confined is None and Learner(ran=2, confined=2).all_confined is True


def test_the_row_that_counts_is_the_latest_submitted_the_later_line_at_a_tie_untimed_oldest():
    from tutor.instructor.results import counted
    rows = [{"line": 4, "submitted_at": "2026-11-30T10:00:00Z"}, {"line": 2, "submitted_at": "2026-11-30T11:00:00Z"},
            {"line": 9}, {"line": 3, "submitted_at": "2026-11-30T11:00:00+00:00"}]
    assert counted(rows)["line"] == 3
    assert counted([{"line": 5}, {"line": 2}])["line"] == 5
    assert counted([]) is None


def _graded_rows():
    return [{"line": 2, "learner": "Ada", "key": "ada", "exercise": "head-split", "status": "pass",
             "prediction_text": "b", "observed_text": "b", "submission": "s2", "confined": True, "duration_s": 1.0},
            {"line": 3, "learner": "Ada", "key": "ada", "exercise": "cache-offset", "status": "fail",
             "prediction_text": "no", "observed_text": "yes", "submission": "s3", "confined": True, "duration_s": 0.5},
            {"line": 4, "learner": "Ada", "key": "ada", "exercise": "cache-offset", "status": "not_assigned",
             "submission": "s4"}]


def test_a_learners_result_scores_each_assigned_exercise_by_its_counting_row():
    import datetime as dt
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.results import learner_result
    plan = Assignment((Assigned("head-split", 2.0), Assigned("cache-offset"), Assigned("broadcast-loss", 0.5,
                                                                                       visibility="hidden")), name="hw")
    out = learner_result(_graded_rows(), plan, {"head-split": "Splitting heads"},
                         dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    assert (out["score"], out["execution_time"], out["visibility"], out["stdout_visibility"]) == \
        (2.0, 1.5, "visible", "hidden")
    assert out["output"] == "Ada: 2 of 3.5 points: 1 of 3 exercises matched what their checks observed."
    assert out["extra_data"] == {"learner": "Ada", "sis_id": None, "student_id": None, "section": None,
                                 "max_score": 3.5, "assignment": "hw", "inferred_assignment": False, "confined": True}
    first, second, third = out["tests"]
    assert first == {"name": "head-split · Splitting heads", "number": "1", "score": 2.0, "max_score": 2.0,
                     "status": "passed", "output": "You predicted b. The check observed b. Your prediction matched.",
                     "visibility": "visible", "extra_data": {"exercise": "head-split", "status": "pass", "line": 2,
                                                             "submission": "s2", "confined": True, "attempts": 1}}
    assert (second["name"], second["score"], second["status"], second["extra_data"]["attempts"],
            second["extra_data"]["line"]) == ("cache-offset", 0.0, "failed", 1, 3)
    assert (third["score"], third["max_score"], third["status"], third["visibility"], third["extra_data"]) == \
        (0.0, 0.5, "failed", "hidden", {"exercise": "broadcast-loss", "status": "missing", "line": None,
                                         "submission": None, "confined": None, "attempts": 0})
    assert learner_result(_graded_rows(), plan, {}, name="Ada Lovelace")["output"].startswith("Ada Lovelace: 2 of")
    assert learner_result([{"line": 2, "exercise": "x", "status": "pass"}], plan, {})["output"].startswith("0 of 3.5")


def test_a_row_the_machine_could_not_run_is_not_one_of_the_learners_attempts():
    from tutor.instructor import gradebook
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.results import learner_result
    died = {"line": 1, "exercise": "head-split", "status": "error", "verdict": gradebook.COULD_NOT_RUN}
    regraded = {"line": 2, "exercise": "head-split", "status": "pass", "verdict": "fixed"}
    out = learner_result([died, regraded], Assignment((Assigned("head-split"),), name="hw"), {})
    assert (out["score"], out["tests"][0]["extra_data"]["attempts"]) == (1.0, 1)
    alone = learner_result([died], Assignment((Assigned("head-split"),), name="hw"), {})
    assert (alone["score"], alone["tests"][0]["extra_data"]["attempts"]) == (0.0, 0)


def test_before_the_due_time_a_result_says_how_many_were_recorded_and_no_grade():
    import datetime as dt
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.results import learner_result
    due = dt.datetime(2026, 12, 5, tzinfo=dt.timezone.utc)
    plan = Assignment((Assigned("head-split"), Assigned("cache-offset"), Assigned("broadcast-loss")), due=due,
                      observations="after_due_date")
    early = learner_result(_graded_rows(), plan, {}, due - dt.timedelta(seconds=1))
    assert early["output"] == ("Ada: 2 of 3 exercises answered and recorded; the scores and what the checks observed "
                               "are shown after the due time.")
    assert (early["visibility"], [t["visibility"] for t in early["tests"]],
            [t["extra_data"]["status"] for t in early["tests"]]) == \
        ("after_due_date", ["after_due_date"] * 3, ["recorded", "recorded", "missing"])
    timed_out = learner_result([{**_graded_rows()[0], "status": "timeout"}], plan, {}, due - dt.timedelta(days=1))
    assert timed_out["tests"][0]["extra_data"]["status"] == "timeout"  # not a verdict: nothing to keep back
    late = learner_result(_graded_rows(), plan, {}, due)
    assert late["visibility"] == "visible" and late["tests"][0]["extra_data"]["status"] == "pass"


def test_class_results_are_every_learner_sorted_and_the_rows_no_one_owns():
    import datetime as dt
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.results import class_results
    now = dt.datetime(2026, 12, 1, 9, 30, 15, 999, tzinfo=dt.timezone.utc)
    rows = [{**_graded_rows()[0], "key": "zoe", "learner": "Zoe"}, *_graded_rows(),
            {"line": 9, "key": None, "exercise": "head-split", "status": "unreadable", "reason": "no learner"}]
    plan = Assignment((Assigned("head-split"),), name="hw")
    data = class_results(rows, plan, {}, "a.csv", now)
    assert {k: v for k, v in data.items() if k != "learners"} == {
        "schema_version": 2, "answers": "a.csv", "graded_at": "2026-12-01T09:30:15+00:00",
        "assignment": plan.to_dict(), "exercises": ["head-split"], "max_score": 1.0, "inferred_assignment": False,
        "confined": True, "unattributed_rows": [
            {"line": 3, "status": "fail", "reason": None}, {"line": 4, "status": "not_assigned", "reason": None},
            {"line": 9, "status": "unreadable", "reason": "no learner"}]}
    assert [entry["extra_data"]["learner"] for entry in data["learners"]] == ["Ada", "Zoe"]


# --- answer_rows: an answers file read into rows that are checked, not run ------------------------------------

def test_a_submission_id_is_16_hex_digits_of_the_sha256_of_who_what_answer_when_and_mode():
    from tutor.instructor.answer_rows import AnswerRow
    row = AnswerRow(line=2, learner="Ada", key="ada", exercise="head-split", answer="b",
                    submitted_at="2026-11-30T09:00:00+00:00")
    by_hand = hashlib.sha256("ada\x1fhead-split\x1fb\x1f2026-11-30T09:00:00+00:00\x1fpredict".encode()).hexdigest()
    assert row.submission == by_hand[:16]
    assert AnswerRow(line=3, learner="Ada").submission == \
        hashlib.sha256("Ada\x1f\x1f\x1f\x1fpredict".encode()).hexdigest()[:16]
    assert AnswerRow(line=3).submission == hashlib.sha256("\x1f\x1f\x1f\x1fpredict".encode()).hexdigest()[:16]
    assert AnswerRow(line=3, answer="\udcff").submission == \
        hashlib.sha256("\x1f\x1f\udcff\x1f\x1fpredict".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    assert replace(row, line=9).submission == row.submission  # where it lies in the file is not what was handed in
    assert replace(row, mode="fix").submission != row.submission


@pytest.mark.parametrize("text, name", [
    ('Robert "Bob" Smith', "Robert (Bob) Smith"), ("Robert \u201c Bob \u201d Smith", "Robert (Bob) Smith"),
    ("\u00abAda\u00bb", "(Ada)"), ("\u201eAda\u201c x", "Ada x"), ('Ada "', "Ada "), ("A\u200bda\ufeff", "Ada"),
    ("Ada\u00a0Lovelace", "Ada Lovelace"), ("Ada\u00adL", "AdaL"), ("Ada\tL", "Ada\tL"), ("plain", "plain")])
def test_a_name_as_an_lms_writes_it_keeps_a_nickname_in_parentheses_and_drops_invisible_characters(text, name):
    from tutor.instructor.answer_rows import plain_name
    assert plain_name(text) == name


@pytest.mark.parametrize("text, when", [
    ("2026-11-29T10:00:00+00:00", "2026-11-29T10:00:00+00:00"), ("2026-11-29T10:00:00Z", "2026-11-29T10:00:00+00:00"),
    ("2026-11-29t10:00:00z", "2026-11-29T10:00:00+00:00"), (" 2026-11-29T12:00:30.9+02:00 ", "2026-11-29T10:00:30+00:00"),
    ("2026-11-29 10:00", "2026-11-29T10:00:00+00:00"), ("2026-11-29 10:00:00 UTC", "2026-11-29T10:00:00+00:00"),
    ("2026-11-29  10:00 UTC", "2026-11-29T10:00:00+00:00"), ("29 November 2026  10:00 AM", "2026-11-29T10:00:00+00:00"),
    ("Sunday, 29 November 2026, 10:00 PM", "2026-11-29T22:00:00+00:00"),
    ("29 November 2026, 10:00 AM", "2026-11-29T10:00:00+00:00"), ("29 Nov 2026 12:05 AM", "2026-11-29T00:05:00+00:00")])
def test_a_submission_time_reads_in_iso_form_or_as_an_lms_writes_it_and_is_kept_in_utc(text, when):
    from tutor.instructor.answer_rows import _time
    assert _time(text) == (when, None)


def test_a_submission_time_that_does_not_read_is_a_warning_naming_it():
    from tutor.instructor.answer_rows import _time
    assert _time("last Tuesday at noon, more or less, or so they say") == (None, (
        "submitted_at 'last Tuesday at noon, more or less, or s' is not a date and time such as "
        "2026-11-29T10:00:00+00:00; graded without a time"))


def test_resume_grades_each_submission_as_often_as_the_file_has_it_less_what_is_held():
    from tutor.instructor.answer_rows import AnswerRow, not_yet_graded, still_to_grade
    a, b = AnswerRow(line=2, learner="a", answer="x"), AnswerRow(line=3, learner="b", answer="y")
    again = AnswerRow(line=4, learner="a", answer="x")  # the same submission a second time
    held = {a.submission: 1, "other": 5}
    assert [r.line for r in not_yet_graded([a, b, again], held)] == [3, 4]
    assert held == {a.submission: 1, "other": 5}  # not changed
    assert [r.line for r in still_to_grade(iter([a, b, again]), {a.submission: 2, b.submission: 1})] == []
    assert [r.line for r in not_yet_graded([a, b, again], {})] == [2, 3, 4]


def test_the_tail_keeps_text_as_written_and_grades_at_the_time_it_is_given(tmp_path):
    import datetime as dt
    from tutor.instructor import tail
    from tutor.instructor.assignment import Assigned, Assignment
    plan = Assignment((Assigned("head-split"),), due=dt.datetime(2020, 1, 2, tzinfo=dt.timezone.utc),
                      observations="after_due_date")
    row = {"line": 2, "key": "emile", "learner": "Émile", "exercise": "head-split", "status": "pass",
           "prediction_text": "b", "observed_text": "b", "submission": "e2"}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    with open(tmp_path / "rows.jsonl", "rb") as fh:
        found = tail.scan(fh, plan)
        tail.write(tmp_path, fh, found, plan, {}, "réponses.csv", dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
    assert '"learner": "Émile"' in (tmp_path / "rows.jsonl").read_text(encoding="utf-8")
    text = (tmp_path / "results.json").read_text(encoding="utf-8")
    assert '"answers": "réponses.csv"' in text and '"learner": "Émile"' in text
    [entry] = json.loads(text)["learners"]
    assert entry["visibility"] == "after_due_date"  # graded a day before the due time: held back


def test_a_due_time_without_an_offset_is_utc_whatever_the_machines_zone(catalog, new_york):
    plan = _parsed({"due": "2026-12-05T23:59", "exercises": ["head-split"]}, catalog)
    assert plan.to_dict()["due"] == "2026-12-05T23:59:00+00:00"
    assert _parsed({"due": "2026-12-05T23:59:00-05:00", "exercises": ["head-split"]}, catalog).to_dict()["due"] == \
        "2026-12-06T04:59:00+00:00"


def test_an_assignment_given_without_a_file_is_called_the_assignment(catalog):
    from tutor.instructor import assignment
    with pytest.raises(UsageError, match="^the assignment lists no exercises;"):
        assignment.parse({}, catalog)
    assert assignment.parse({"exercises": ["head-split"]}, catalog).source == "the assignment"


def test_now_is_in_utc():
    import datetime as dt
    from tutor.instructor.results import utc_now
    assert utc_now().utcoffset() == dt.timedelta(0)


def test_a_learners_name_is_their_lowest_lines_whatever_order_the_rows_come_in():
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.results import learner_result
    plan = Assignment((Assigned("head-split"),))
    rows = [{"line": 5, "learner": "Ada L", "exercise": "head-split", "status": "pass"},
            {"line": 2, "learner": "Ada", "exercise": "head-split", "status": "pass"}]
    assert learner_result(rows, plan, {})["extra_data"]["learner"] == "Ada"
    unlined = [{"line": 1, "learner": "B", "exercise": "x"}, {"learner": "A", "exercise": "x"}]
    assert learner_result(unlined, plan, {})["extra_data"]["learner"] == "A"  # no line: before line 1


def test_a_result_without_a_name_starts_with_the_count_and_rounds_its_seconds_to_milliseconds():
    import datetime as dt
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.results import learner_result
    due = dt.datetime(2026, 12, 5, tzinfo=dt.timezone.utc)
    plan = Assignment((Assigned("head-split"),), due=due, observations="after_due_date")
    row = {"line": 2, "exercise": "head-split", "status": "pass", "duration_s": 1.23456, "confined": True}
    out = learner_result([row], plan, {}, due - dt.timedelta(days=1))
    assert out["output"].startswith("1 of 1 exercises answered and recorded;")
    assert out["execution_time"] == 1.235


def test_at_a_tie_a_row_with_a_line_counts_over_one_without():
    from tutor.instructor.results import counted
    when = "2026-11-30T10:00:00+00:00"
    assert counted([{"line": 1, "submitted_at": when, "id": "x"}, {"submitted_at": when, "id": "y"}])["id"] == "x"


def test_class_results_are_graded_at_the_time_given():
    import datetime as dt
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.results import class_results
    plan = Assignment((Assigned("head-split"),), due=dt.datetime(2020, 1, 2, tzinfo=dt.timezone.utc),
                      observations="after_due_date")
    rows = [{"line": 2, "key": "ada", "learner": "Ada", "exercise": "head-split", "status": "pass"}]
    data = class_results(rows, plan, {}, "a.csv", dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
    assert data["learners"][0]["visibility"] == "after_due_date"


def _answers(tmp_path, name: str, text, catalog, **kw):
    from tutor.instructor.answer_rows import iter_answers
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return list(iter_answers(path, catalog, **kw))


def _answers_refusal(tmp_path, name, text, catalog, **kw) -> str:
    with pytest.raises(UsageError) as caught:
        _answers(tmp_path, name, text, catalog, **kw)
    return str(caught.value)


CSV_TEXT = "learner,exercise,answer\nada,head-split,b\n"
JSON_TEXT = '{"learner": "ada", "exercise": "head-split", "answer": "b"}\n'


def test_an_answers_file_that_cannot_be_opened_is_named_as_given(tmp_path, catalog):
    from tutor.instructor.answer_rows import iter_answers
    for name, shown in ((None, str(tmp_path / "none.csv")), ("-", "-")):
        with pytest.raises(UsageError) as caught:
            list(iter_answers(tmp_path / "none.csv", catalog, name=name))
        assert str(caught.value) == f"there is no answers file {shown}; check the path given to --answers"
    with pytest.raises(UsageError) as caught:
        list(iter_answers(tmp_path, catalog))
    assert str(caught.value) == f"cannot read the answers file {tmp_path} (Is a directory)"


def test_an_answers_file_with_no_rows_says_what_a_row_needs(tmp_path, catalog):
    for text in ("", "learner,exercise,answer\n", "learner,exercise,answer\n , , \n"):
        assert _answers_refusal(tmp_path, "a.csv", text, catalog) == (
            f"{tmp_path / 'a.csv'} holds no answers; write one row per answer with the columns learner, exercise "
            "and answer")


def test_an_answers_file_that_is_not_utf8_says_how_to_go_on(tmp_path, catalog):
    bad = b"learner,exercise,answer\nada,head-split,\xff\n"
    assert _answers_refusal(tmp_path, "a.csv", bad, catalog) == (
        f"the answers file {tmp_path / 'a.csv'} is not UTF-8 text; save it as UTF-8, then grade again")
    late = CSV_TEXT.encode() + b"ada,head-split,b\n" * 2000 + b"ada,head-split,\xff\n"  # rows graded before it
    assert _answers_refusal(tmp_path, "b.csv", late, catalog) == (
        f"the answers file {tmp_path / 'b.csv'} is not UTF-8 text; save it as UTF-8, then grade again with --resume")


@pytest.mark.parametrize("name, text, as_json", [
    ("a.jsonl", CSV_TEXT, True), ("a.NDJSON", CSV_TEXT, True), ("a.Json", CSV_TEXT, True), ("a.txt", JSON_TEXT, True),
    ("a.txt", "[" + JSON_TEXT + "]", True), ("a.txt", CSV_TEXT, False), ("a", CSV_TEXT, False), ("a.CSV", CSV_TEXT, False)])
def test_json_is_known_by_its_suffix_else_by_its_first_character(tmp_path, catalog, name, text, as_json):
    rows = _answers(tmp_path, name, text, catalog)
    if as_json and text == CSV_TEXT:  # CSV read as JSON lines: no line is an object
        assert [r.problem for r in rows] == ["line 1 is not a JSON object (Expecting value)",
                                             "line 2 is not a JSON object (Expecting value)"]
    else:
        assert [(r.learner, r.exercise, r.answer, r.problem) for r in rows] == [("ada", "head-split", "b", None)]


def test_a_csv_file_is_read_as_csv_whatever_its_first_character(tmp_path, catalog):
    assert _answers_refusal(tmp_path, "a.csv", JSON_TEXT, catalog).startswith(
        f"the answers file {tmp_path / 'a.csv'} has no column learner, exercise, answer in its header")


def test_columns_name_the_fields_in_csv_and_json(tmp_path, catalog):
    named = {"learner": "Email", "exercise": "Q", "answer": "R"}
    csv_rows = _answers(tmp_path, "a.csv", "Email,Q,R\nada@x.org,head-split,b\n", catalog, columns=named)
    json_rows = _answers(tmp_path, "a.jsonl", '{"Email": "ada@x.org", "Q": "head-split", "R": "b"}\n', catalog,
                         columns=named)
    assert [(r.learner, r.exercise, r.answer) for r in csv_rows + json_rows] == [("ada@x.org", "head-split", "b")] * 2


def test_a_header_or_an_array_that_fails_names_the_answers_file(tmp_path, catalog):
    assert _answers_refusal(tmp_path, "a.jsonl", '{"learner": "ada"}\n', catalog).startswith(
        f"the answers file {tmp_path / 'a.jsonl'} has no column exercise, answer in its header")
    assert _answers_refusal(tmp_path, "a.json", "[" + JSON_TEXT + ",", catalog).startswith(
        f"the answers file {tmp_path / 'a.json'} is not a JSON array of objects (")
    assert _answers_refusal(tmp_path, "h.csv", "x" * 200_000 + "\n", catalog) == (
        f"the answers file {tmp_path / 'h.csv'} is not CSV (field larger than field limit (131072))")


def test_json_values_read_as_a_learner_would_type_them(tmp_path, catalog):
    lines = ['{"learner": "ada", "exercise": "cache-offset", "answer": true}',
             '{"learner": "bob", "exercise": "cache-offset", "answer": false, "seed": 7}',
             '{"learner": "cy", "exercise": "head-split", "answer": "b", "note": null}', "3"]
    rows = _answers(tmp_path, "a.jsonl", "\n".join(lines) + "\n", catalog)
    assert [(r.learner, r.answer, r.seed, r.note, r.problem) for r in rows] == [
        ("ada", "yes", 0, None, None), ("bob", "no", 7, None, None), ("cy", "b", 0, None, None),
        (None, None, 0, None, "line 4 is not a JSON object")]
    nothing = _answers(tmp_path, "n.jsonl", "1\n[2]\n", catalog)
    assert [r.problem for r in nothing] == ["line 1 is not a JSON object", "line 2 is not a JSON object"]


def test_a_json_row_without_a_learner_names_none(tmp_path, catalog):
    rows = _answers(tmp_path, "a.jsonl", '{"exercise": "head-split", "answer": "b"}\n' + JSON_TEXT, catalog)
    assert [(r.learner, r.problem) for r in rows] == [(None, "the row names no learner"), ("ada", None)]


def test_a_quoted_answer_keeps_its_line_breaks_and_spaces_as_typed(tmp_path, catalog):
    from tutor.instructor.answer_rows import _csv_rows
    text = 'learner,exercise,answer,note\n" ada ",head-split," b ","two\r\nlines "\n'
    [row] = _answers(tmp_path, "a.csv", text, catalog)
    assert (row.learner, row.answer, row.note, row.problem) == ("ada", " b ", "two\r\nlines ", None)
    assert list(_csv_rows(text.replace("\n", "\r\n"), None, "s")) == [
        (2, {"learner": " ada ", "exercise": "head-split", "answer": " b ", "note": "two\r\r\nlines "})]


def test_wide_and_long_layouts_are_read_as_asked(tmp_path, catalog):
    canvas = "name,id,sis_id,submitted,101: head-split,1.0\nAda,1,S1,,b,1\n"
    [row] = _answers(tmp_path, "c.csv", canvas, catalog)
    assert (row.learner, row.exercise, row.answer, row.identity) == ("Ada", "head-split", "b",
                                                                     {"sis_id": "S1", "student_id": "1"})
    assert _answers_refusal(tmp_path, "c.csv", canvas, catalog, layout="long").startswith(
        f"the column 'name' of the answers file {tmp_path / 'c.csv'} may be the learner or an exercise's name")
    assert _answers_refusal(tmp_path, "l.csv", CSV_TEXT, catalog, layout="wide") == (
        f"the answers file {tmp_path / 'l.csv'} is not a wide export this tutor reads (Canvas's Student Analysis or "
        "Moodle's Responses report, their header as the LMS writes it); without --layout wide it is read as one row "
        "per answer")
    assert _answers_refusal(tmp_path, "q.csv", canvas.replace("101: head-split", "7: tensors"), catalog).startswith(
        f"the question column '7: tensors' of the answers file {tmp_path / 'q.csv'} names no exercise")


def test_a_row_that_is_not_csv_or_has_too_many_cells_is_a_problem_and_the_rows_after_it_read(tmp_path, catalog):
    text = CSV_TEXT + "bob,head-split," + "x" * 200_000 + "\n" + "cy,head-split,b,extra\n" + "di,head-split,a\n"
    rows = _answers(tmp_path, "a.csv", text, catalog)
    assert [(r.line, r.learner, r.problem) for r in rows] == [
        (2, "ada", None), (3, None, "line 3 is not CSV (field larger than field limit (131072))"),
        (4, "cy", "line 4 has 4 cells but the header names 3"), (5, "di", None)]


def test_a_tidied_name_a_long_seed_and_a_naive_time_are_read_with_warnings(tmp_path, catalog, new_york):
    name = 'Robert "Bob" Smith of the very long family name'
    text = ("learner,exercise,answer,seed,submitted_at\n"
            f'"{name.replace(chr(34), chr(34) * 2)}",head-split,b,{"9" * 30}x,2026-11-29 10:00\n'
            "Ada Lovelace,head-split,b,,\n")
    tidied, plain = _answers(tmp_path, "a.csv", text, catalog)
    assert tidied.learner == "Robert (Bob) Smith of the very long family name"
    assert tidied.warnings == [
        f"the learner name {name[:40]!r} is graded as {tidied.learner!r} (a name keeps no quotes or invisible "
        "characters)",
        f"the seed {('9' * 30 + 'x')[:20]!r} is not a whole number 0 or more; graded with seed 0"]
    assert (tidied.seed, tidied.submitted_at) == (0, "2026-11-29T10:00:00+00:00")  # no offset: UTC, not local time
    assert (plain.learner, plain.warnings) == ("Ada Lovelace", [])


def test_every_field_but_the_answer_and_the_note_is_read_without_the_spaces_around_it(tmp_path, catalog):
    text = 'learner,exercise,answer,sis_id,seed\n" ada "," Head-Split "," b "," S1 "," 7 "\n'
    [row] = _answers(tmp_path, "a.csv", text, catalog)
    assert (row.learner, row.exercise, row.answer, row.identity, row.seed, row.problem) == \
        ("ada", "head-split", " b ", {"sis_id": "S1"}, 7, None)


# --- out_folder: one grader at a time, whole lines, one tail ---------------------------------------------------

def test_holding_an_out_folder_makes_it_and_leaves_only_its_lock(tmp_path):
    from tutor.instructor import out_folder
    out = tmp_path / "a" / "b"
    lock = out_folder.hold(out)
    try:
        assert lock.is_locked and [p.name for p in out.iterdir()] == [".tutor-grade.lock"]
        with pytest.raises(UsageError) as caught:
            out_folder.hold(out)
        assert str(caught.value) == (f"another grader is writing to {out} now; wait for it to finish, or give this "
                                     "grading its own --out")
    finally:
        lock.release()


def test_an_out_folder_that_cannot_be_made_or_written_is_refused_before_any_check(tmp_path, monkeypatch):
    from tutor.instructor import out_folder
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError) as caught:
        out_folder.hold(tmp_path / "file" / "out")
    assert str(caught.value) == (f"cannot write the gradebook to {tmp_path / 'file' / 'out'} (Not a directory); "
                                 "choose another --out")
    refusing = tmp_path / "read-only"
    real = out_folder.tempfile.mkstemp

    def mkstemp(prefix=None, dir=None):  # a folder that takes no new file (as a read-only mount would)
        if dir is not None and Path(dir) == refusing:
            raise PermissionError(13, "Permission denied")
        return real(prefix=prefix, dir=dir)
    monkeypatch.setattr(out_folder.tempfile, "mkstemp", mkstemp)
    with pytest.raises(UsageError, match="^cannot write the gradebook to .*read-only \\(Permission denied\\); "):
        out_folder.hold(refusing)


@pytest.mark.parametrize("shard, name, who", [(None, ".tutor-grading.lock", "another grader"),
                                              ("2/4", ".tutor-grading-2-of-4.lock", "another grader of shard 2/4")])
def test_one_grader_of_a_shard_saves_into_a_progress_folder_at_a_time(tmp_path, shard, name, who):
    from tutor.instructor import out_folder
    lock = out_folder.progress_lock(tmp_path, shard)
    other = out_folder.progress_lock(tmp_path, "3/4")  # another shard of the class may share the folder
    try:
        assert (tmp_path / name).exists()
        with pytest.raises(UsageError) as caught:
            out_folder.progress_lock(tmp_path, shard)
        assert str(caught.value) == (f"{who} is saving to {tmp_path} now; wait for it to finish, or save this "
                                     "grading to another --progress-dir")
    finally:
        lock.release()
        other.release()


def _could_not_save(folder, why: str) -> str:
    return (f"the gradebook in {folder} could not be written ({why}); the rows graded so far are kept whole: free "
            "space or fix the folder, then run the same command with --resume")


def test_rows_that_cannot_be_written_say_what_is_kept_and_how_to_go_on(tmp_path, monkeypatch):
    from tutor.instructor import out_folder
    from tutor.model.errors import CouldNotSave
    with pytest.raises(CouldNotSave) as caught:
        out_folder.Rows(tmp_path / "missing")
    assert str(caught.value) == _could_not_save(tmp_path / "missing", "No such file or directory")
    rows = out_folder.Rows(tmp_path)
    rows.append({"line": 2})
    monkeypatch.setattr(rows._writer, "append", lambda row: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(CouldNotSave) as caught:
        rows.append({"line": 3})
    assert str(caught.value) == _could_not_save(tmp_path, "No space left on device")
    rows.close()
    assert (tmp_path / "rows.jsonl").read_text() == '{"line": 2}\n'


def test_the_tail_writes_the_three_files_and_counts_what_it_read(tmp_path):
    import datetime as dt
    from tutor.instructor import out_folder
    out_folder.write_rows(tmp_path, FINISHED)
    assert (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines() == \
        [json.dumps(r, ensure_ascii=False) for r in FINISHED]
    (tmp_path / "merged").mkdir()
    out_folder.write_rows(tmp_path / "merged", iter([{"learner": "Émile"}]))
    assert (tmp_path / "merged" / "rows.jsonl").read_bytes() == '{"learner": "Émile"}\n'.encode("utf-8")
    now = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.timezone.utc)
    written = out_folder.finish(tmp_path, _plan(), {}, "réponses.csv", now)
    assert (written.rows, written.learners, written.warnings, written.counts) == \
        (7, 2, 2, {"pass": 2, "fail": 1, "unreadable": 1, "not_assigned": 2, "timeout": 1})
    assert (written.gradebook, written.results, written.rows_file) == \
        (tmp_path / "gradebook.csv", tmp_path / "results.json", tmp_path / "rows.jsonl")
    results = json.loads(written.results.read_text(encoding="utf-8"))
    assert (results["answers"], results["graded_at"]) == ("réponses.csv", "2026-12-01T09:00:00+00:00")
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = out_folder.finish(empty, _plan(), {}, "a.csv", now)
    assert (nothing.rows, nothing.learners, nothing.warnings, nothing.counts) == (0, 0, 0, {})


def test_a_tail_or_merged_rows_that_cannot_be_written_say_so(tmp_path):
    from tutor.instructor import out_folder
    from tutor.model.errors import CouldNotSave
    missing = tmp_path / "missing"
    with pytest.raises(CouldNotSave) as caught:
        out_folder.finish(missing, _plan(), {}, "a.csv")
    assert str(caught.value) == _could_not_save(missing, "No such file or directory")
    with pytest.raises(CouldNotSave) as caught:
        out_folder.write_rows(missing, [{"line": 2}])
    assert str(caught.value).startswith(f"the gradebook in {missing} could not be written (")


# --- grade: every row its result, on warm workers -----------------------------------------------------------

class RecordingRunner:
    """A runner whose run says what it was given, and raises when told to."""

    def __init__(self, raises=None):
        self.raises, self.calls = raises, []

    def run(self, exercise, prediction=None, seed=0, sides=None):
        self.calls.append((exercise.id, prediction, seed, sides))
        if self.raises is not None:
            raise self.raises
        if exercise.id not in OBSERVED:  # any other exercise observes 1
            return RunResult(id=exercise.id, status="ok", device="cpu", torch="t", fault=exercise.fault,
                             kind=exercise.kind.name, observed=1.0)
        return FakeRunner(None).run(exercise, prediction, seed=seed)

    def cancel(self):
        pass


class StandInRunner:
    """The runner of a grading whose rows a stand-in grades: it only has to close (noted in ``closed``)."""

    def __init__(self, closed: list | None = None):
        self._closed = closed if closed is not None else []

    def close(self):
        self._closed.append(True)


def _fixed_clock(monkeypatch, module, start: float = 100.0, later: float = 102.5):
    """``module``'s clock: ``start`` at its first reading (a grading's start), ``later`` at every one after."""
    ticks = []

    def clock():
        ticks.append(1)
        return start if len(ticks) == 1 else later
    monkeypatch.setattr(module.time, "perf_counter", clock)


def _answer_row(line, exercise, answer="b", seed=0, problem=None, learner="ada"):
    from tutor.instructor.answer_rows import AnswerRow
    return AnswerRow(line=line, learner=learner, key=learner, exercise=exercise, answer=answer, seed=seed,
                     problem=problem)


def test_each_row_is_graded_against_its_own_measurement_once_per_exercise_and_seed(catalog):
    from tutor.instructor.grade import grade_rows
    from tutor.instructor.memo import Observations
    from tutor.sandbox.runner import standard_sides
    runner, seen = RecordingRunner(), []
    rows = [_answer_row(2, "head-split", "b"), _answer_row(3, "head-split", "a"), _answer_row(4, "cache-offset", "no"),
            _answer_row(5, "head-split", "b", seed=3)]
    kept = Observations()
    out = grade_rows(catalog, rows, _OnePool(runner), seen.append, observations=kept)
    assert [(r.status, r.reused, r.points, r.reason) for r in out] == [
        ("pass", False, 1.0, None), ("fail", True, 1.0, "the prediction a is not what the check observed (b)"),
        ("pass", False, 1.0, None), ("pass", False, 1.0, None)]
    assert seen == out and [r.row for r in out] == rows
    head = catalog.get("head-split")
    assert runner.calls == [("head-split", None, 0, standard_sides(catalog, head)),
                            ("cache-offset", None, 0, standard_sides(catalog, catalog.get("cache-offset"))),
                            ("head-split", None, 3, standard_sides(catalog, head))]
    again = grade_rows(catalog, [_answer_row(6, "head-split", "b")], _OnePool(runner), observations=kept)
    assert again[0].reused is True and len(runner.calls) == 3  # the shared measurements are reused
    other_device = grade_rows(catalog, [_answer_row(7, "head-split", "b")], _OnePool(runner, "cuda"), observations=kept)
    assert other_device[0].reused is False and len(runner.calls) == 4  # another device is another measurement
    assert grade_rows(catalog, rows, _OnePool(runner), keep=False) == []


def test_exercises_that_share_a_fault_are_measured_apart_and_a_pool_without_a_device_is_auto(catalog):
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.grade import grade_rows
    from tutor.instructor.memo import Observations
    one, two = catalog.get("tie-weights"), catalog.get("tied-gradient-rows")
    assert one.fault == two.fault and one.check != two.check  # the same sides, another check
    runner, kept = RecordingRunner(), Observations()

    class NoDevicePool(_OnePool):
        def __init__(self, runner):
            self.runners = [runner]
    plan = Assignment((Assigned("tie-weights", 2.0), Assigned("tied-gradient-rows")))
    out = grade_rows(catalog, [_answer_row(2, one.id, "1"), _answer_row(3, two.id, "1")], NoDevicePool(runner),
                     assignment=plan, observations=kept)
    assert [(r.status, r.reused, r.points) for r in out] == [("pass", False, 2.0), ("pass", False, 1.0)]
    auto = grade_rows(catalog, [_answer_row(4, one.id, "1")], _OnePool(runner, "auto"), observations=kept)
    assert auto[0].reused is True and len(runner.calls) == 2


def test_rows_that_cannot_run_are_their_result_at_once(catalog):
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.grade import grade_rows
    runner = RecordingRunner()
    plan = Assignment((Assigned("head-split", 2.0),), name="week 1")
    rows = [_answer_row(2, "head-split", problem="the answer is empty"), _answer_row(3, "cache-offset"),
            _answer_row(4, None, problem="the row names no exercise")]
    out = grade_rows(catalog, rows, _OnePool(runner), assignment=plan)
    assert [(r.row, r.status, r.points, r.reason, r.result) for r in out] == [
        (rows[0], "unreadable", 2.0, "the answer is empty", None),
        (rows[1], "not_assigned", 0, "cache-offset is not in the assignment week 1; reported, not scored", None),
        (rows[2], "unreadable", 0.0, "the row names no exercise", None)]
    unnamed = grade_rows(catalog, [rows[1]], _OnePool(runner), assignment=Assignment((Assigned("head-split"),)))
    assert unnamed[0].reason == "cache-offset is not in the assignment; reported, not scored"
    assert grade_rows(catalog, [rows[0]], _OnePool(runner))[0].points == 1.0 and runner.calls == []


def test_a_check_that_cannot_run_confined_or_at_all_stops_the_grading_in_one_sentence(catalog):
    from tutor.instructor.grade import grade_rows
    from tutor.model.errors import CouldNotRun
    from tutor.sandbox.runner import DeviceError, UnconfinedError, WorkerError
    for raised, kind in ((UnconfinedError("the checks cannot run confined here"), UsageError),
                         (WorkerError("the worker did not start"), CouldNotRun)):
        with pytest.raises(kind) as caught:
            grade_rows(catalog, [_answer_row(2, "head-split")], _OnePool(RecordingRunner(raised)))
        assert str(caught.value) == str(raised)

    class NoDevice(_OnePool):
        def run(self, *args, **kwargs):
            raise DeviceError("CUDA is not available on this machine; grade with --device cpu")
    with pytest.raises(UsageError, match="^CUDA is not available on this machine; grade with --device cpu$"):
        grade_rows(catalog, [_answer_row(2, "head-split")], NoDevice(RecordingRunner()))


def test_a_rows_points_come_from_the_assignment(catalog):
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.grade import points_for
    plan = Assignment((Assigned("head-split", 2.5),))
    assert (points_for(None, "x"), points_for(plan, "head-split"), points_for(plan, "cache-offset"),
            points_for(plan, None), points_for(plan, "")) == (1.0, 2.5, 0.0, 0.0, 0.0)


def test_a_row_result_as_json_holds_every_field_the_gradebook_and_results_read(catalog):
    from tutor.instructor.answer_rows import AnswerRow
    from tutor.instructor.grade import RowResult
    row = AnswerRow(line=4, learner="Ada", key="ada", exercise="broadcast-loss", answer="(3, 3)", note="n",
                    submitted_at="2026-11-30T09:00:00+00:00", seed=2, warnings=["w"], same_as=["bob"],
                    identity={"sis_id": "S1", "section": "A"}, refused="link")
    result = RunResult(id="broadcast-loss", status="pass", device="cpu", torch="t", fault="f", kind="shape",
                       observed=[3, 3], correct=True, prediction_text="(3, 3)", duration_s=1.23456, confined=True)
    outcome = RowResult(row, "pass", result=result, points=2.0, saved_to=Path("/p/ada.toml"), note_saved=True,
                        verdict="v", reason=None)
    assert outcome.to_dict() == {
        "line": 4, "learner": "Ada", "key": "ada", "sis_id": "S1", "student_id": None, "section": "A",
        "exercise": "broadcast-loss", "answer": "(3, 3)", "mode": "predict", "status": "pass", "score": 2,
        "points": 2, "correct": True, "prediction_text": "(3, 3)", "observed": [3, 3], "observed_text": "(3, 3)",
        "verdict": "v", "reason": None, "warnings": ["w"], "note": "n", "submitted_at": "2026-11-30T09:00:00+00:00",
        "seed": 2, "device": "cpu", "confined": True, "same_as": ["bob"], "refused": "link", "duration_s": 1.235,
        "reused": False, "saved": True, "saved_to": "/p/ada.toml", "save_error": None, "note_saved": True,
        "submission": row.submission}
    half = RowResult(row, "fail", result=result, points=0.5, reused=True, already_saved=True, diff="--- a\n")
    d = half.to_dict()
    assert (d["score"], d["points"], d["duration_s"], d["reused"], d["saved"], d["saved_to"], d["answer"]) == \
        (0, 0.5, 0.0, True, True, None, "--- a\n")
    assert json.dumps([outcome.to_dict()["score"], outcome.to_dict()["points"], d["score"]]) == "[2, 2, 0]"  # whole
    fix = RowResult(replace(row, mode="fix"), "pass", result=result, points=0.5)
    assert (fix.to_dict()["prediction_text"], fix.to_dict()["score"]) == (None, 0.5)
    bare = RowResult(AnswerRow(line=2), "unreadable", reason="r", points=1.0).to_dict()
    assert {k: bare[k] for k in ("correct", "prediction_text", "observed", "observed_text", "device", "confined",
                                 "duration_s", "saved", "note", "warnings", "same_as", "score", "points")} == \
        {"correct": None, "prediction_text": None, "observed": None, "observed_text": None, "device": None,
         "confined": None, "duration_s": None, "saved": False, "note": "", "warnings": [], "same_as": [], "score": 0,
         "points": 1}
    assert (outcome.learner, outcome.exercise, outcome.score, half.score) == ("Ada", "broadcast-loss", 2.0, 0)
    assert RowResult(replace(row, answer=" a\nb "), "pass").answer_text == "a b"
    assert RowResult(AnswerRow(line=2), "pass").answer_text == ""


def test_the_cores_are_those_this_process_may_run_on(monkeypatch):
    import os
    from tutor.instructor import grade
    assert grade.usable_cores() == len(os.sched_getaffinity(0))

    def missing(pid):
        raise AttributeError("no affinity here")
    monkeypatch.setattr(grade.os, "sched_getaffinity", missing)
    monkeypatch.setattr(grade.os, "cpu_count", lambda: 7)
    assert grade.usable_cores() == 7
    monkeypatch.setattr(grade.os, "cpu_count", lambda: None)
    assert grade.usable_cores() == 1


def test_a_grading_runner_is_confined_only_unless_asked_and_scales_its_limits(catalog):
    from tutor.instructor.grade import RunnerPool, runner_factory_for
    strict = runner_factory_for()(catalog, "cpu")
    loose = runner_factory_for(allow_unconfined=True, timeout_scale=2.5)(catalog, "auto")
    assert (strict.allow_unconfined, strict.timeout_scale, strict.requested_device, strict.catalog) == \
        (False, None, "cpu", catalog)
    assert (loose.allow_unconfined, loose.timeout_scale, loose.requested_device) == (True, 2.5, "auto")
    pool = RunnerPool(catalog, "cpu", 0)
    assert (len(pool.runners), pool.device, pool.runners[0].allow_unconfined, pool.runners[0].catalog) == \
        (1, "cpu", False, catalog)
    assert len(RunnerPool(catalog, "cpu", 3, lambda c, d: object()).runners) == 3


def test_a_pool_hands_back_what_failed_first_and_keeps_the_jobs_order(catalog):
    from tutor.instructor.grade import RunnerPool
    pool = RunnerPool(catalog, "cpu", 3, lambda c, d: RecordingRunner())
    assert pool.run(range(20), lambda runner, job: job * 2) == [j * 2 for j in range(20)]
    import threading
    where = pool.run(range(6), lambda runner, job: (threading.current_thread().name, threading.current_thread().daemon))
    assert {name for name, _ in where} <= {"tutor-grade-0", "tutor-grade-1", "tutor-grade-2"}
    assert all(daemon for _, daemon in where)  # a stuck check never keeps the command from exiting
    done = []
    assert pool.run(range(5), lambda runner, job: job, done.append, keep=False) == [] and sorted(done) == [0, 1, 2, 3, 4]

    def full_disk(result):
        raise OSError(28, "No space left on device")
    with pytest.raises(OSError, match="No space left"):
        pool.run(range(5), lambda runner, job: job, full_disk)

    def unreadable():
        yield 1
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    with pytest.raises(UnicodeDecodeError):
        pool.run(unreadable(), lambda runner, job: job)

    def boom(runner, job):
        raise ValueError(f"job {job}")
    with pytest.raises(ValueError, match="^job 0$"):
        RunnerPool(catalog, "cpu", 1, lambda c, d: RecordingRunner()).run(range(3), boom)


def test_results_and_the_inferred_assignment_come_from_the_readable_rows(catalog):
    from tutor.instructor import grade
    from tutor.instructor.grade import RowResult
    rows = [{"line": 2, "key": "ada", "learner": "Ada", "exercise": "cache-offset", "status": "pass"},
            {"line": 3, "key": "ada", "learner": "Ada", "exercise": "head-split", "status": "fail"},
            {"line": 4, "key": "bob", "learner": "Bob", "exercise": "broadcast-loss", "status": "unreadable"},
            {"line": 5, "key": "bob", "learner": "Bob", "exercise": None, "status": "unreadable"}]
    order = [e.id for e in catalog.exercises]
    expected = sorted(["cache-offset", "head-split"], key=order.index)
    assert grade.infer_assignment(catalog, iter(rows)).ids == expected
    assert grade.assignment(catalog, rows) == expected
    assert grade.assignment(catalog, [RowResult(_answer_row(2, "cache-offset"), "pass")]) == ["cache-offset"]
    data = grade.results_json(catalog, rows, "a.csv")
    assert data["answers"] == "a.csv"
    assert (data["exercises"], data["inferred_assignment"], [e["extra_data"]["learner"] for e in data["learners"]]) == \
        (expected, True, ["Ada", "Bob"])
    from tutor.instructor.assignment import Assigned, Assignment
    given = grade.results_json(catalog, [RowResult(_answer_row(2, "cache-offset"), "pass")], "a.csv",
                               Assignment((Assigned("cache-offset", 3.0),)))
    assert (given["max_score"], given["learners"][0]["score"]) == (3.0, 3.0)
    assert grade.titles(catalog)["head-split"] == catalog.get("head-split").title


def test_the_assignment_is_given_once_by_file_or_by_ids(tmp_path, catalog):
    from tutor.instructor.grade import chosen_assignment
    with pytest.raises(UsageError) as caught:
        chosen_assignment("w.toml", "head-split", catalog)
    assert str(caught.value) == ("give the assignment once: --assignment FILE.toml or --exercises ID,..., not both")
    (tmp_path / "w.toml").write_text('exercises = ["head-split"]\n')
    assert chosen_assignment(str(tmp_path / "w.toml"), None, catalog).source == str(tmp_path / "w.toml")
    assert chosen_assignment(None, "head-split,cache-offset", catalog).ids == ["head-split", "cache-offset"]
    assert chosen_assignment(None, None, catalog) is None and chosen_assignment("", "", catalog) is None


# --- gradescope: one submission, as Gradescope's autograder runs it ------------------------------------------

def test_the_metadata_is_a_dict_or_nothing_and_the_submitter_its_first_users_email_or_name(tmp_path):
    from tutor.instructor import gradescope
    assert gradescope.metadata(tmp_path) == {}
    for text in ("not json", "[1, 2]"):
        (tmp_path / "submission_metadata.json").write_text(text)
        assert gradescope.metadata(tmp_path) == {}
    (tmp_path / "submission_metadata.json").write_text('{"users": [{"email": "a@x.org"}], "é": 1}')
    assert gradescope.metadata(tmp_path) == {"users": [{"email": "a@x.org"}], "é": 1}
    for meta, who in (({"users": [{"email": "a@x.org", "name": "Ada"}, {"email": "b@x.org"}]}, "a@x.org"),
                      ({"users": [{"name": "Ada", "email": ""}]}, "Ada"), ({"users": []}, "submission"),
                      ({"users": "ada"}, "submission"), ({"users": ["ada"]}, "submission"), ({}, "submission"),
                      ({"users": {"email": "a@x.org"}}, "submission")):
        assert gradescope.submitter(meta) == who


@pytest.mark.parametrize("name, text, pairs", [
    ("answers.toml", 'head-split = "b"\nbroadcast-loss = [3, 3]\n[extra]\nx = 1\n',
     [("head-split", "b"), ("broadcast-loss", "[3, 3]")]),
    ("answers.toml", '[answers]\nhead-split = "b"\ncache-offset = true\n', [("head-split", "b"), ("cache-offset", "true")]),
    ("answers.csv", " Exercise ,Answer,Note\nhead-split,b,n\nshort\ncache-offset,no,\n",
     [("head-split", "b"), ("cache-offset", "no")]),
    ("answers.csv", "exercise,answer\rhead-split,b\r", [("head-split", "b")]),  # old Mac line ends
    ("answers.csv", 'exercise,answer\nhead-split,"b\r\nc"\n', [("head-split", "b\r\nc")]),
    ("answers.jsonl", '{"exercise": "head-split", "answer": "b"}\n{"exercise": "x"}\n{"exercise": 3, "answer": 1.5}\n',
     [("head-split", "b"), ("3", "1.5")]),
    ("answers.json", '[{"exercise": "head-split", "answer": ["a"]}, 7]', [("head-split", '["a"]')])])
def test_a_submissions_answers_file_reads_as_its_format(tmp_path, name, text, pairs):
    from tutor.instructor import gradescope
    assert gradescope._pairs(tmp_path / name, text) == pairs


@pytest.mark.parametrize("name, text, sentence", [
    ("answers.toml", "head-split = \n", 'answers.toml is not valid TOML (Invalid value (at line 1, column 14)); write '
                                        'one line per exercise such as head-split = "b"'),
    ("answers.csv", "exercise,prediction\nhead-split,b\n", "answers.csv needs the columns exercise and answer in its "
                                                           "header"),
    ("answers.csv", "", "answers.csv needs the columns exercise and answer in its header"),
    ("answers.jsonl", '{"exercise": "head-split", "answer": "b"}\nnot json\n',
     'answers.jsonl: line 2 is not a JSON object (Expecting value); write one object per line such as {"exercise": '
     '"head-split", "answer": "b"}')])
def test_an_answers_file_that_does_not_read_says_how_to_write_it(tmp_path, name, text, sentence):
    from tutor.instructor import gradescope
    with pytest.raises(UsageError) as caught:
        gradescope._pairs(tmp_path / name, text)
    assert str(caught.value) == sentence


def test_a_submission_reads_its_predictions_then_its_repairs_each_row_numbered(tmp_path, catalog):
    from tutor.instructor import gradescope
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "answers.toml").write_text('head-split = "b"\nnope = "x"\n')
    (sub / "answers.csv").write_text("exercise,answer\ncache-offset,no\n")
    (sub / "Head-Split.py").write_bytes(b"x = 1\n")
    (sub / "bogus.diff").write_bytes(b"--- a\n")
    (sub / "notes.txt").write_text("ignored")
    rows = gradescope.read_submission(sub, catalog, "ada@x.org", "2026-11-30T09:00:00+00:00")
    assert [(r.line, r.mode, r.exercise, r.answer, r.submitted_at, r.problem is None) for r in rows] == [
        (1, "predict", "head-split", "b", "2026-11-30T09:00:00+00:00", True),
        (2, "predict", "nope", "x", "2026-11-30T09:00:00+00:00", False),
        (3, "predict", "cache-offset", "no", "2026-11-30T09:00:00+00:00", True),
        (4, "fix", "head-split", "file:" + hashlib.sha256(b"x = 1\n").hexdigest()[:16], "2026-11-30T09:00:00+00:00",
         True),
        (5, "fix", "bogus", "patch:" + hashlib.sha256(b"--- a\n").hexdigest()[:16], "2026-11-30T09:00:00+00:00",
         False)]
    fix = rows[3]
    assert (fix.learner, fix.key, fix.text, fix.note) == ("ada@x.org", rows[0].key, "x = 1\n", "file")
    assert rows[4].problem.startswith("there is no exercise 'bogus'")
    untimed = gradescope.read_submission(sub, catalog, "ada@x.org", None)
    assert {r.submitted_at for r in untimed} == {None}
    (sub / "answers.csv").write_bytes("\ufeffexercise,answer\ncache-offset,n\xf6\n".encode("utf-8")[:-3] + b"\xff\n")
    (sub / "answers.toml").write_bytes("\ufeffhead-split = \"b\"\n".encode("utf-8"))
    marked = gradescope.read_submission(sub, catalog, "ada@x.org", None)
    assert [(r.exercise, r.answer) for r in marked[:2]] == [("head-split", "b"), ("cache-offset", "n\ufffd")]


def test_a_submission_that_cannot_be_read_is_one_sentence(tmp_path, catalog, monkeypatch):
    from tutor.instructor import gradescope
    with pytest.raises(UsageError, match=f"^there is no submission folder {tmp_path / 'none'}$"):
        gradescope.read_submission(tmp_path / "none", catalog, "ada", None)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "readme.txt").write_text("x")
    with pytest.raises(UsageError) as caught:
        gradescope.read_submission(sub, catalog, "ada", None)
    assert str(caught.value) == ("the submission holds nothing to grade: upload answers.toml or answers.csv with "
                                 "your answers, or ID.py / ID.diff repairs")
    key = tmp_path / "key.toml"
    key.write_text('head-split = "b"\n')
    (sub / "answers.toml").symlink_to(key)
    with pytest.raises(UsageError, match="^sub/answers.toml is a symbolic link, not a file of its own;"):
        gradescope.read_submission(sub, catalog, "ada", None)
    (sub / "answers.toml").unlink()
    (sub / "answers.toml").write_text('head-split = "b"\n' * 10)
    monkeypatch.setattr(gradescope, "MAX_ANSWERS_BYTES", 2 * 2**20 - 1)
    (sub / "answers.toml").write_bytes(b"#" * (2 * 2**20))
    with pytest.raises(UsageError) as caught:
        gradescope.read_submission(sub, catalog, "ada", None)
    assert str(caught.value) == ("sub/answers.toml is larger than 1 MiB; it is not graded (a submission's answers are "
                                 "one line per exercise: upload only those)")


def test_a_repair_by_a_bad_learner_name_or_through_a_link_is_a_problem_row(tmp_path, catalog):
    from tutor.instructor import gradescope
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "head-split.py").write_text("x = 1\n")
    from tutor.model.attempts import ProgressError
    from tutor.store.names import validate_learner
    [row] = gradescope._repairs(sub, {"head-split.py"}, catalog, "bad/name")
    with pytest.raises(ProgressError) as refused:
        validate_learner("bad/name")
    assert (row.exercise, row.key, row.learner, row.problem, row.mode) == \
        ("head-split", None, "bad/name", str(refused.value), "fix")
    (sub / "skip-zero-grad.py").write_bytes(b"x = '\xff'\n")
    (tmp_path / "theirs.py").write_text("y = 2\n")
    (sub / "cache-offset.py").symlink_to(tmp_path / "theirs.py")
    linked, later = gradescope._repairs(sub, {"cache-offset.py", "skip-zero-grad.py"}, catalog, "ada")
    assert (linked.exercise, linked.answer, linked.refused, linked.text) == ("cache-offset", "refused",
                                                                             "cache-offset.py", None)
    assert (later.exercise, later.text, later.problem) == ("skip-zero-grad", "x = '\ufffd'\n", None)  # read on
    assert linked.problem.startswith("sub/cache-offset.py is a symbolic link")


def test_a_submission_is_graded_on_its_runner_with_what_was_not_graded_said(catalog, monkeypatch):
    import datetime as dt
    from tutor.instructor import gradescope
    from tutor.instructor.assignment import Assigned, Assignment
    plan = Assignment((Assigned("head-split", 2.0), Assigned("cache-offset")), name="hw")
    rows = [_answer_row(1, "head-split", "b"), _answer_row(2, "broadcast-loss", "(3, 3)"),
            _answer_row(3, "nope", "x", problem="there is no exercise 'nope'")]
    rows += [_answer_row(4, "tie-weights", "1"), _answer_row(5, "other", "x", problem="no such exercise"),
             _answer_row(6, "cache-offset", "", problem="the answer is empty"),
             replace(_answer_row(7, "skip-zero-grad"), mode="fix", text="x = 1\n")]  # a repair outside the plan
    runner = RecordingRunner()
    _fixed_clock(monkeypatch, gradescope, 10.0, 12.34567)
    result = gradescope.grade_submission(catalog, rows, plan, runner, dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    assert result["score"] == 2.0 and [c[0] for c in runner.calls] == ["head-split"]
    assert result["output"] == (
        "ada: 2 of 3 points: 1 of 2 exercises matched what their checks observed. Not graded (not in this assignment): "
        "broadcast-loss, tie-weights, skip-zero-grad. Could not be graded: 'nope': there is no exercise 'nope'; "
        "'other': no such exercise.")
    assert result["execution_time"] == 2.346
    quiet = gradescope.grade_submission(catalog, rows[:1], plan, RecordingRunner())
    assert "Not graded" not in quiet["output"] and "Could not be graded" not in quiet["output"]
    due = Assignment((Assigned("head-split"),), due=dt.datetime(2020, 1, 2, tzinfo=dt.timezone.utc),
                     observations="after_due_date")
    early = gradescope.grade_submission(catalog, rows[:1], due, RecordingRunner(),
                                        dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
    assert early["visibility"] == "after_due_date"  # graded at the time given, not now


def test_one_pool_runs_its_one_runner_in_order():
    pool, done = _OnePool("runner"), []
    assert (pool.runners, pool.device, _OnePool("r", "cpu").device) == (["runner"], "auto", "cpu")
    assert pool.run([1, 2], lambda runner, job: (runner, job), done.append) == [("runner", 1), ("runner", 2)]
    assert pool.run([3], lambda runner, job: job, done.append, keep=False) == [] and done[-1] == 3


def test_a_submission_that_cannot_be_graded_still_has_results_saying_why():
    from tutor.instructor.assignment import Assigned, Assignment
    from tutor.instructor.gradescope import failure, plan_data
    plan = Assignment((Assigned("head-split", 2.0, (7,), "hidden"),), name="hw", observations="visible")
    assert failure("no answers file") == {"score": 0.0, "execution_time": 0.0,
                                          "output": "This submission could not be graded: no answers file",
                                          "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
    assert failure("x", plan)["tests"] == [{"name": "head-split", "number": "1", "score": 0.0, "max_score": 2.0,
                                            "status": "failed", "output": "Not graded: x", "visibility": "hidden"}]
    assert plan_data(plan) == {"name": "hw", "observations": "visible", "exercises": [
        {"id": "head-split", "points": 2.0, "hidden_seeds": [7], "visibility": "hidden"}]}


# --- fixes: a folder of repairs, one folder per learner ---------------------------------------------------------

def _fixes_folder(tmp_path):
    import os
    root = tmp_path / "fixes"
    for learner, files in {"ada": {"head-split.py": b"x = 1\n", "Cache-Offset.diff": b"--- a\n", "notes.md": b"n",
                                   ".hidden.py": b"h"},
                           "bob": {"head-split.py": b"x = 1\n", "nope.py": b"y\n", "broadcast-loss.patch": b"\xff\n"},
                           "bad name!": {"head-split.py": b"z\n"}}.items():
        (root / learner).mkdir(parents=True)
        for name, data in files.items():
            (root / learner / name).write_bytes(data)
    (root / "ada" / "sub").mkdir()
    (root / "ada" / "Aa").mkdir()  # a folder in a learner's folder, sorted first: passed over
    (root / ".git").mkdir()
    (root / "readme.txt").write_text("not a learner")
    os.utime(root / "ada" / "head-split.py", (1_700_000_000, 1_700_000_000))
    return root


def test_a_fixes_folder_gives_a_row_per_learner_and_file_each_read_or_its_reason(tmp_path, catalog):
    from tutor.instructor import fixes
    root = _fixes_folder(tmp_path)
    rows = fixes.find(root, catalog)
    got = [(r.line, r.learner, r.exercise, r.note, r.problem is None) for r in rows]
    assert got == [(1, "ada", "cache-offset", "patch", True), (2, "ada", "head-split", "file", True),
                   (3, "ada", "notes", None, False), (4, "bad name!", "head-split", "file", False),
                   (5, "bob", "broadcast-loss", "patch", False), (6, "bob", "head-split", "file", True),
                   (7, "bob", "nope", "file", False)]
    notes, bad, latin, nope = rows[2], rows[3], rows[4], rows[6]
    assert notes.problem == "notes.md is neither a repaired file (ID.py) nor a patch (ID.diff); name it after the exercise"
    assert bad.key is None and bad.problem.startswith("the learner name")
    assert latin.problem == "broadcast-loss.patch is not UTF-8 text; save it as UTF-8" and latin.text == "\ufffd\n"
    assert nope.problem.startswith("there is no exercise 'nope'")
    ada = rows[1]
    assert (ada.answer, ada.text, ada.submitted_at, ada.key, ada.mode) == (
        "file:" + hashlib.sha256(b"x = 1\n").hexdigest()[:16], "x = 1\n", None, "ada", "fix")  # an mtime is the learner's
    assert (ada.same_as, rows[5].same_as) == (["bob"], ["ada"])  # byte-identical work is flagged on both


def test_a_linked_file_or_learner_folder_is_refused_never_read(tmp_path, catalog):
    from tutor.instructor import fixes
    root = _fixes_folder(tmp_path)
    (root / "ada" / "skip-zero-grad.py").symlink_to(root / "bob" / "head-split.py")
    (root / "ada" / "Broadcast-Loss.py").symlink_to(root / "bob" / "head-split.py")  # refused, sorted first
    (root / "cy").symlink_to(root / "bob")
    rows = {(r.learner, r.exercise): r for r in fixes.find(root, catalog)}
    linked = rows[("ada", "skip-zero-grad")]
    assert (linked.answer, linked.refused, linked.text) == ("refused", "skip-zero-grad.py", None)
    assert linked.problem.startswith("ada/skip-zero-grad.py is a symbolic link, not a file of its own;")
    folder = rows[("cy", None)]
    assert (folder.refused, folder.answer) == ("cy", "refused")
    assert folder.problem.startswith("fixes/cy is a symbolic link")
    assert rows[("ada", "broadcast-loss")].refused == "Broadcast-Loss.py" and ("ada", "head-split") in rows


def test_a_fixes_folder_that_is_none_or_empty_is_one_sentence(tmp_path, catalog):
    from tutor.instructor import fixes
    with pytest.raises(UsageError) as caught:
        fixes.find(tmp_path / "none", catalog)
    assert str(caught.value) == (f"there is no folder {tmp_path / 'none'}; --fixes takes a folder with one folder per "
                                 "learner")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".git").mkdir()
    with pytest.raises(UsageError) as caught:
        fixes.find(tmp_path / "empty", catalog)
    assert str(caught.value) == (f"{tmp_path / 'empty'} holds no learner folders; put each learner's files in a folder "
                                 "named after them")


def test_a_submitted_file_is_read_only_when_it_is_a_plain_file_of_its_own_inside_its_folder(tmp_path):
    import os
    from tutor.instructor import fixes
    mine = tmp_path / "ada"
    mine.mkdir()
    (mine / "a.py").write_bytes(b"x" * 10)
    assert fixes.read_file(mine / "a.py", mine) == (b"x" * 10, None)
    assert fixes.read_file(mine / "a.py", mine, limit=10) == (b"x" * 10, None)  # exactly the cap: read
    (mine / "link.py").symlink_to(mine / "a.py")
    assert fixes.read_file(mine / "link.py", mine) == (None, (
        "ada/link.py is a symbolic link, not a file of its own; it is not graded as this learner's work (hand in a "
        "copy of the file itself)"))
    assert fixes.read_file(mine / "a.py", mine, limit=9, advice="hand in less") == \
        (None, "ada/a.py is larger than 0 MiB; it is not graded (hand in less)")
    assert fixes.read_file(mine / "none.py", mine) == \
        (None, "ada/none.py cannot be read (No such file or directory); it is not graded")
    os.link(mine / "a.py", tmp_path / "theirs.py")
    assert fixes.read_file(mine / "a.py", mine) == (None, (
        "ada/a.py has 2 hard links (it is also another file, perhaps a classmate's); it is not graded as this "
        "learner's work (hand in a copy of the file itself)"))
    os.mkfifo(mine / "pipe.py")
    assert fixes.read_file(mine / "pipe.py", mine) == \
        (None, "ada/pipe.py is not a regular file; it is not graded (hand in a plain .py or .diff file)")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "b.py").write_bytes(b"b")
    assert fixes.read_file(tmp_path / "other" / "b.py", mine) == \
        (None, f"b.py does not lie inside {mine}; it is not graded")
    big = mine / "big.py"
    big.write_bytes(b"y" * (3 << 20))
    assert fixes.read_file(big, mine, limit=2 << 20) == \
        (None, "ada/big.py is larger than 2 MiB; it is not graded (hand in the subject file only)")
    assert fixes.read_file(big, mine)[0] == b"y" * (3 << 20)  # under the 4 MiB default


def test_an_exercise_id_its_hidden_seeds_and_what_lies_inside(catalog):
    from tutor.instructor import fixes
    from tutor.instructor.assignment import Assigned, Assignment
    assert (fixes.exercise_id(catalog, "Head-Split"), fixes.exercise_id(catalog, "nope")) == ("head-split", "nope")
    plan = Assignment((Assigned("head-split", hidden_seeds=(7, 11)), Assigned("cache-offset")))
    assert (fixes.seeds_of(plan, "head-split"), fixes.seeds_of(plan, "cache-offset"), fixes.seeds_of(plan, "x"),
            fixes.seeds_of(None, "head-split")) == ((7, 11), (), (), ())
    assert fixes.read_file(Path("/a/bc/x.py"), Path("/a/b")) == (None, "x.py does not lie inside /a/b; it is not "
                                                                      "graded")


def test_identical_repairs_are_flagged_only_between_learners_of_one_exercise():
    from tutor.instructor import fixes
    from tutor.instructor.answer_rows import AnswerRow

    def fix(learner, exercise, text, key=True, mode="fix"):
        return AnswerRow(line=0, learner=learner, key=learner if key else None, exercise=exercise, text=text, mode=mode)
    rows = [fix("cy", "a", "t"), fix("ada", "a", "t"), fix("bob", "a", "t"), fix("ada", "a", "t"),
            fix("dan", "b", "t"), fix("eve", "a", "t", key=False), fix("fay", "a", None), fix("gus", "a", "t",
                                                                                             mode="predict"),
            fix("hal", None, "t"), fix("ivy", "c", "\udcff"), fix("jo", "c", "\udcff")]
    fixes.mark_identical(rows)
    assert [r.same_as for r in rows] == [["ada", "bob"], ["bob", "cy"], ["ada", "cy"], ["bob", "cy"], [], [], [], [],
                                         [], ["jo"], ["ivy"]]


def test_a_file_swapped_for_a_link_or_a_pipe_after_its_check_is_still_refused(tmp_path, monkeypatch):
    import os
    from tutor.instructor import fixes
    mine = tmp_path / "ada"
    mine.mkdir()
    (mine / "real.py").write_text("x = 1\n")
    (mine / "swapped.py").symlink_to(mine / "real.py")
    os.mkfifo(mine / "pipe.py")
    regular = os.stat(mine / "real.py")
    real_stat = os.stat
    # the check sees a plain file; by the open, it is a link or a pipe (a race with the learner's own process)
    monkeypatch.setattr(fixes.os, "stat", lambda p, *a, **k: regular if Path(p).name in ("swapped.py", "pipe.py")
                        else real_stat(p, *a, **k))
    assert fixes.read_file(mine / "swapped.py", mine) == \
        (None, "ada/swapped.py is a symbolic link, not a file of its own; it is not graded as this learner's work "
               "(hand in a copy of the file itself)")
    assert fixes.read_file(mine / "pipe.py", mine) == \
        (None, "ada/pipe.py is not a regular file; it is not graded (hand in a plain .py or .diff file)")


# --- course: the three gradings as use cases --------------------------------------------------------------------

def test_a_merge_joins_the_shards_folders_into_one_gradebook(tmp_path, catalog):
    from tutor.instructor import course
    from tutor.instructor.out_folder import write_rows
    rows = [r for r in FINISHED if r["status"] != "not_assigned"]
    for name, part in (("a", rows[:3]), ("b", rows[2:])):
        (tmp_path / name).mkdir()
        write_rows(tmp_path / name, part)
    with pytest.raises(UsageError, match="^tutor grade merge needs --out DIR for the joined gradebook and results.json$"):
        course.merge(course.Request(), catalog, [tmp_path / "a"])
    done = course.merge(course.Request(out=tmp_path / "out"), catalog, [tmp_path / "a", tmp_path / "b"])
    assert (done.out, done.plan.ids, done.plan.inferred, done.written.rows, done.graded, done.workers) == \
        (tmp_path / "out", ["head-split", "cache-offset"], True, 5, [], 0)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["answers"] == f"{tmp_path / 'a'}, {tmp_path / 'b'}"
    given = course.merge(course.Request(out=tmp_path / "out2", exercises="head-split"), catalog, [tmp_path / "a"])
    assert (given.plan.ids, given.plan.inferred) == (["head-split"], False)


def test_workers_are_as_asked_but_no_more_than_the_cores_or_the_rows(monkeypatch):
    from tutor.instructor import course
    notices = []
    monkeypatch.setattr(course.grading, "usable_cores", lambda: 4)
    assert (course.workers(2, 10, notices.append), course.workers(3, 2, notices.append),
            course.workers(2, 0, notices.append)) == (2, 2, 1)
    assert notices == []
    assert course.workers(8, 100, notices.append) == 4
    assert notices == ["-j 8 asks for more check workers than this machine's 4 cores; using 4"]
    monkeypatch.setattr(course.grading, "usable_cores", lambda: 1)
    course.workers(2, 100, notices.append)
    assert notices[-1] == "-j 2 asks for more check workers than this machine's 1 core; using 1"


def _outcome(status, line=2, saved_to=None, save_error=None, ran=True):
    from tutor.instructor.grade import RowResult
    return RowResult(_answer_row(line, "head-split"), status, result=_measured(status) if ran else None,
                     saved_to=saved_to, save_error=save_error)


def test_a_tally_counts_what_the_exit_status_and_the_summary_need(monkeypatch):
    from tutor.instructor import course
    monkeypatch.setattr(course, "KEPT_ROWS", 3)
    tally = course.Tally()
    outcomes = [_outcome("pass", saved_to=Path("/p")), _outcome("fail", save_error="full"),
                _outcome("unreadable", ran=False)] + [_outcome("timeout", line=n) for n in range(10, 22)]
    for o in outcomes:
        tally.add(o)
    assert (tally.rows, tally.saved, tally.unsaved, tally.unfinished) == (15, 1, 1, 12)
    assert tally.unfinished_lines == list(range(10, 20)) and tally.kept == outcomes[:3]
    graded = course.Graded(Path("o"), None, None, tally=tally)
    assert (graded.saved, graded.rows_graded) == (1, 15)


def test_what_could_not_finish_or_be_saved_is_the_exit_status_and_one_sentence():
    from tutor.instructor import course
    one = course.Graded(Path("o"), None, None, tally=course.Tally(unfinished=1, unfinished_lines=[4]))
    course._problems(one)
    assert (one.problem_kind, one.problem) == ("check", (
        "the check of 1 row could not finish (lines 4); they score 0 in the gradebook: grade them again when the "
        "machine is quiet"))
    two = course.Graded(Path("o"), None, None, tally=course.Tally(unfinished=2, unfinished_lines=[4, 7], unsaved=2))
    course._problems(two)
    assert (two.problem_kind, two.problem) == ("save", "2 graded answers could not be saved in full to progress; each "
                                                       "row's save_error says why")
    unsaved = course.Graded(Path("o"), None, None, tally=course.Tally(unsaved=1))
    course._problems(unsaved)
    assert unsaved.problem.startswith("1 graded answer could not be saved in full")
    fine = course.Graded(Path("o"), None, None)
    course._problems(fine)
    assert (fine.problem, fine.problem_kind) == (None, None)
    many = course.Graded(Path("o"), None, None, tally=course.Tally(unfinished=2, unfinished_lines=[4, 7]))
    course._problems(many)
    assert many.problem.startswith("the check of 2 rows could not finish (lines 4, 7);")


def test_a_shard_grades_its_learners_and_a_progress_folder_refusal_names_the_graders_fix(tmp_path, catalog):
    from tutor.instructor import course, shard
    from tutor.model.attempts import ProgressError
    rows = [_answer_row(n, "head-split", learner=f"l{n}") for n in range(40)] + \
        [replace(_answer_row(99, "head-split"), key=None, learner=None)]
    mine = list(course._mine(iter(rows), "2/3"))
    assert mine and all(shard.belongs(r.key if r.key else (r.learner or ""), (2, 3)) for r in mine)
    assert len(mine) < len(rows) and list(course._mine(rows, None)) == rows
    assert course.without_no_save(ProgressError("cannot write progress to p (x); choose a writable folder with "
                                                "--progress-dir, or pass --no-save")) == \
        "cannot write progress to p (x); choose a writable folder with --progress-dir, or grade without --save"
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "rows.jsonl").mkdir()  # not a file: what was graded cannot be read
    with pytest.raises(UsageError) as caught:
        course._graded_so_far(tmp_path / "out")
    assert str(caught.value) == (f"cannot read the rows graded so far in {tmp_path / 'out' / 'rows.jsonl'} (Is a "
                                 "directory); fix its permissions, or grade again without --resume")


def test_a_fixes_grading_runs_each_row_says_refusals_and_what_a_side_tried(tmp_path, catalog, monkeypatch):
    from tutor.instructor import course
    from tutor.instructor.grade import RowResult
    from tutor.model.errors import CouldNotRun
    from tutor.sandbox.runner import DeviceError, UnconfinedError, WorkerError
    root = _fixes_folder(tmp_path)
    (root / "ada" / "skip-zero-grad.py").symlink_to(root / "bob" / "head-split.py")
    graded_rows, closed = [], []

    def grade_one(cat, runner, row, plan, store, save, hidden_seeds):
        graded_rows.append((row.learner, row.exercise, hidden_seeds, save))
        result = replace(_measured("pass"), refused={"yours": ["tried to write ~/x: refused"]}) \
            if row.learner == "ada" and row.exercise == "head-split" else _measured("fail")
        return RowResult(row, "pass" if result.status == "pass" else "fail", result=result)
    monkeypatch.setattr(course.fixes, "grade_one", grade_one)
    notices, seen = [], []
    req = course.Request(fixes=str(root), runner_factory=lambda c, d: StandInRunner(closed), hidden_seeds=3)
    done = course.grade_fixes(req, catalog, seen.append, notices.append)
    assert done.out == tmp_path / "fixes-graded" and closed == [True] and len(seen) == done.rows_graded == 8
    assert ("ada", "head-split", 3, False) in graded_rows
    assert "ada: the yours side tried to write ~/x: refused" in notices
    assert any(n.startswith("ada: ada/skip-zero-grad.py is a symbolic link") for n in notices)
    assert (done.written.rows, done.resumed, done.workers, done.checks) == (8, 0, 1, 8)
    again = course.grade_fixes(replace(req, resume=True), catalog, seen.append, notices.append)
    assert (again.resumed, again.rows_graded) == (8, 0)
    for raised, kind in ((DeviceError("no CUDA"), UsageError), (UnconfinedError("not confined"), UsageError),
                         (WorkerError("no worker"), CouldNotRun)):
        monkeypatch.setattr(course.fixes, "grade_one", lambda *a, raised=raised, **k: (_ for _ in ()).throw(raised))
        with pytest.raises(kind, match=f"^{raised}$"):
            course.grade_fixes(replace(req, out=tmp_path / "o"), catalog, seen.append, notices.append)


CLASS = ("Email,Question,Response\n" + "".join(f"l{n}@x.org,head-split,{'b' if n % 2 else 'a'}\n" for n in range(12))
         + "l0@x.org,cache-offset,no\n")


def _grade_answers(tmp_path, catalog, text=CLASS, notices=None, seen=None, **kw):
    from tutor.instructor import course
    path = tmp_path / "week1.csv"
    path.write_text(text)
    made = []
    kw.setdefault("runner_factory", lambda c, d: made.append((c, d)) or FakeRunner(c, d))
    req = course.Request(answers=str(path), columns="learner=Email,exercise=Question,answer=Response", device="cpu",
                         **kw)
    done = course.grade_answers(req, catalog, (seen if seen is not None else []).append,
                                (notices if notices is not None else []).append)
    return done, made


@pytest.mark.parametrize("exercises", [None, "head-split,cache-offset"])
def test_grading_answers_reads_the_named_columns_shares_measurements_and_writes_beside_them(tmp_path, catalog,
                                                                                            exercises, monkeypatch):
    from tutor.instructor import course
    _fixed_clock(monkeypatch, course)
    seen = []
    done, made = _grade_answers(tmp_path, catalog, seen=seen, exercises=exercises)
    assert made == [(catalog, "cpu")]
    assert (done.out, done.rows_graded, done.checks, done.reused, done.resumed, done.workers, done.duration_s) == \
        (tmp_path / "week1-graded", 13, 2, 11, 0, 1, 2.5)
    in_catalog_order = sorted(["head-split", "cache-offset"], key=[e.id for e in catalog.exercises].index)
    assert done.plan.ids == (["head-split", "cache-offset"] if exercises else in_catalog_order)
    assert len(seen) == 13 and all(r.status in ("pass", "fail") for r in seen)
    assert json.loads(done.written.results.read_text())["answers"] == str(tmp_path / "week1.csv")


@pytest.mark.parametrize("exercises", [None, "head-split"])
def test_a_shard_grades_its_learners_only_and_a_layout_asked_for_is_kept(tmp_path, catalog, exercises):
    from tutor.instructor import shard
    done, _ = _grade_answers(tmp_path, catalog, shard="2/3", exercises=exercises)
    expected = [f"l{n}@x.org" for n in range(12) if shard.belongs(f"l{n}@x.org", (2, 3))]
    assert sorted(r.row.learner for r in done.graded if r.row.exercise == "head-split") == sorted(expected)
    with pytest.raises(UsageError, match="is not a wide export this tutor reads"):
        _grade_answers(tmp_path, catalog, layout="wide", exercises=exercises)


def test_a_grading_resumes_only_when_asked_and_says_when_it_uses_fewer_workers(tmp_path, catalog, monkeypatch):
    from tutor.instructor import course
    monkeypatch.setattr(course.grading, "usable_cores", lambda: 2)
    notices = []
    first, _ = _grade_answers(tmp_path, catalog, notices=notices, jobs=5, exercises="head-split,cache-offset")
    assert "-j 5 asks for more check workers than this machine's 2 cores; using 2" in notices
    again, _ = _grade_answers(tmp_path, catalog, resume=True)
    assert (again.resumed, again.rows_graded) == (13, 0)
    fresh, _ = _grade_answers(tmp_path, catalog)
    assert (fresh.resumed, fresh.rows_graded) == (0, 13)


def test_answers_on_standard_input_are_named_as_standard_input(tmp_path, catalog, monkeypatch):
    import io as _io
    from tutor.instructor import course
    monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=_io.BytesIO(CLASS.encode())))
    req = course.Request(answers="-", out=tmp_path / "o", columns="learner=Email,exercise=Question,answer=Response",
                         runner_factory=lambda c, d: FakeRunner(c, d))
    done = course.grade_answers(req, catalog, lambda r: None, lambda s: None)
    assert done.rows_graded == 13
    monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=_io.BytesIO(b"who,what\nada,b\n")))
    with pytest.raises(UsageError, match="^the answers file - has no column learner, exercise, answer"):
        course.grade_answers(replace(req, columns=None), catalog, lambda r: None, lambda s: None)


def test_a_fixes_grading_hands_each_row_its_plan_store_and_runner_and_keeps_resumed_rows(tmp_path, catalog,
                                                                                         monkeypatch):
    from tutor.instructor import course, shard
    from tutor.instructor.grade import RowResult
    from tutor.store.progress import ProgressStore
    root = _fixes_folder(tmp_path)
    calls, made = [], []

    def grade_one(cat, runner, row, plan, store, save, hidden_seeds):
        calls.append((cat, runner, plan, store, save))
        return RowResult(row, "unreadable" if row.problem else "pass", result=None if row.problem else _measured("pass"))
    monkeypatch.setattr(course.fixes, "grade_one", grade_one)
    store = ProgressStore(tmp_path / "progress")
    req = course.Request(fixes=str(root) + "/", runner_factory=lambda c, d: made.append((c, d)) or StandInRunner(),
                         device="cpu", store=store)
    seen = []
    done = course.grade_fixes(req, catalog, seen.append, lambda s: None)
    assert done.out == tmp_path / "fixes-graded" and made == [(catalog, "cpu")]
    assert done.plan.ids == sorted(["cache-offset", "head-split"], key=[e.id for e in catalog.exercises].index)
    assert all(c[0] is catalog and isinstance(c[1], StandInRunner) and c[2] is done.plan and c[3] is store and c[4]
               for c in calls)
    assert all(isinstance(r, RowResult) for r in seen) and done.graded == seen and done.reused == 0
    assert json.loads(done.written.results.read_text())["answers"] == str(root) + "/"
    again = course.grade_fixes(replace(req, resume=True), catalog, seen.append, lambda s: None)
    assert (again.resumed, again.rows_graded, again.written.rows) == (7, 0, 7)
    regraded = course.grade_fixes(req, catalog, seen.append, lambda s: None)
    assert (regraded.resumed, regraded.rows_graded) == (0, 7)
    named = course.grade_fixes(replace(req, exercises="head-split", out=tmp_path / "n", shard="1/2"), catalog,
                               seen.append, lambda s: None)
    assert named.plan.ids == ["head-split"]
    assert 0 < len(named.graded) < 7
    assert all(shard.belongs(r.row.key if r.row.key is not None else r.row.learner, (1, 2)) for r in named.graded)


def test_a_merge_and_a_fixes_grading_report_what_they_did(tmp_path, catalog, monkeypatch):
    from tutor.instructor import course
    from tutor.instructor.grade import RowResult
    from tutor.instructor.out_folder import write_rows
    (tmp_path / "a").mkdir()
    write_rows(tmp_path / "a", FINISHED[:2])
    (tmp_path / "w.toml").write_text('exercises = ["cache-offset"]\n')
    _fixed_clock(monkeypatch, course)
    merged = course.merge(course.Request(out=tmp_path / "m", assignment=str(tmp_path / "w.toml")), catalog,
                          [tmp_path / "a"])
    assert (merged.plan.ids, merged.resumed, merged.workers, merged.checks, merged.reused, merged.duration_s) == \
        (["cache-offset"], 0, 0, 0, 0, 2.5)
    root = tmp_path / "boxX"
    (root / "ada").mkdir(parents=True)
    (root / "ada" / "head-split.py").write_text("x = 1\n")

    monkeypatch.setattr(course.fixes, "grade_one", lambda cat, runner, row, plan, *a, **k: RowResult(row, "pass"))
    _fixed_clock(monkeypatch, course)
    req = course.Request(fixes=str(root) + "/", runner_factory=lambda c, d: StandInRunner(),
                         assignment=str(tmp_path / "w.toml"))
    done = course.grade_fixes(req, catalog, lambda r: None, lambda s: None)
    assert (done.out, done.plan.ids, done.duration_s, done.checks, done.reused) == \
        (tmp_path / "boxX-graded", ["cache-offset"], 2.5, 1, 0)
    elsewhere = course.grade_fixes(replace(req, out=tmp_path / "elsewhere"), catalog, lambda r: None, lambda s: None)
    assert elsewhere.out == tmp_path / "elsewhere"


def test_a_row_is_sharded_by_its_key_and_one_with_no_learner_by_the_empty_name(catalog):
    from tutor.instructor import course, shard
    from tutor.instructor.answer_rows import AnswerRow
    names = [f"Learner {n}" for n in range(30)]
    rows = [AnswerRow(line=n, learner=name, key=name.lower()) for n, name in enumerate(names)] + [AnswerRow(line=99)]
    for k in (1, 2, 3):
        mine = list(course._mine(rows, f"{k}/3"))
        assert [r.line for r in mine] == [r.line for r in rows
                                          if shard.number(r.key if r.key is not None else "", 3) == k]
    assert any(shard.number(n, 3) != shard.number(n.lower(), 3) for n in names)  # the key decides, not the name


def test_a_progress_folder_that_cannot_be_written_stops_the_grading_with_the_graders_fix(tmp_path, catalog):
    from tutor.instructor import course
    from tutor.store.progress import ProgressStore
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError) as caught:
        _grade_answers(tmp_path, catalog, store=ProgressStore(tmp_path / "file" / "progress"))
    assert str(caught.value).endswith("or grade without --save") and "--no-save" not in str(caught.value)


def test_the_workers_started_are_no_more_than_the_readable_rows(tmp_path, catalog, monkeypatch):
    from tutor.instructor import course
    monkeypatch.setattr(course.grading, "usable_cores", lambda: 4)
    notices = []
    assert course.workers(4, 10, notices.append) == 4 and notices == []  # as many as the cores: nothing to say
    one = "Email,Question,Response\nada@x.org,head-split,b\nbob@x.org,nope,b\n"
    done, _ = _grade_answers(tmp_path, catalog, text=one, jobs=3)
    assert done.workers == 1


def test_standard_input_is_named_as_such_with_an_assignment_too(tmp_path, catalog, monkeypatch):
    import io as _io
    from tutor.instructor import course
    monkeypatch.setattr("sys.stdin", SimpleNamespace(buffer=_io.BytesIO(b"who,what\nada,b\n")))
    req = course.Request(answers="-", out=tmp_path / "o", exercises="head-split",
                         runner_factory=lambda c, d: FakeRunner(c, d))
    with pytest.raises(UsageError, match="^the answers file - has no column learner, exercise, answer"):
        course.grade_answers(req, catalog, lambda r: None, lambda s: None)
