"""One hand-in's failure is that hand-in's row: the batch goes on, and its classmates are graded right.

Whatever goes wrong while one submission is graded — its file cannot be compiled by the grader
(a 13 KB ``1+1+…+1`` is a RecursionError in ``compile()``), what its side sent has a shape the
verdict cannot read, a row that cannot be written, a file name that is not UTF-8 — becomes that
row's reason, its learner named in a notice; every classmate after it is graded, results.json is
written, and ``--resume`` carries on past it without grading it again.

The runner here is the stand-in of :mod:`test_grading_submissions` (every run recorded, the
learner's side observing what the clean code does), so an honest repair passes and the hostile
row's outcome is the grader's handling alone.
"""

from __future__ import annotations

import json
import os

import pytest

from test_grading_submissions import FailsOn, Recording, clean_head_split, digest, grade_fixes, hand_in
from tutor.instructor import gradebook
from tutor.model.patch import syntax_problem
from tutor.model.verdict import first_difference

HONEST = ("ada", "bob", "cy")
#: 13 KB of ``1+1+…+1``: Python's compiler recurses once per ``+`` and runs out of stack.
DEEP = "x = " + "+".join(["1"] * 6500) + "\n"
#: In a hand-in, this makes the stand-in runner below fail inside the grader.
BREAKS_THE_GRADER = "# breaks the grader\n"


def honest_class(fixes, catalog) -> dict:
    """Three honest repairs of head-split under ``fixes``; each file's digest before grading."""
    return {who: digest(hand_in(fixes, who, clean_head_split(catalog))) for who in HONEST}


def batch(tmp_path, *extra, runner=None):
    return grade_fixes(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o"),
                        "--exercises", "head-split", "--hidden-seeds", "0", *extra], runner=runner)


def assert_the_class_is_graded(tmp_path, before: dict) -> dict:
    """The honest learners' rows pass and their files are as they were; results.json is whole. The rows."""
    rows = {r["learner"]: r for r in gradebook.read_rows(tmp_path / "o") if r["exercise"] == "head-split"}
    for who in HONEST:
        assert rows[who]["status"] == "pass" and rows[who]["score"] == 1, rows[who]
        assert digest(tmp_path / "fixes" / who / "head-split.py") == before[who]
    results = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    scores = {e["extra_data"]["learner"]: e["score"] for e in results["learners"]}
    assert all(scores[who] == 1 for who in HONEST), scores
    (tmp_path / "o" / "rows.jsonl").read_bytes().decode("utf-8")  # every byte of it UTF-8 text
    (tmp_path / "o" / "gradebook.csv").read_bytes().decode("utf-8")
    return rows


class Breaking(FailsOn):
    """The stand-in runner, failing inside the grader for a hand-in that says so (as a side's deep structure
    made ``RunResult.to_dict`` recurse)."""

    marker, failure = BREAKS_THE_GRADER, RecursionError
    message = "maximum recursion depth exceeded while calling a Python object"


class MisShaped(Recording):
    """The stand-in runner whose learner's side sends evidence of the wrong shape (a table whose rows are a
    number, a series whose values are a string), as a side that forged its signed measurement could."""

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, **kw):
        result = super().run(exercise, prediction, on_progress, seed, sides, **kw)
        table = {"type": "table", "title": "t", "columns": ["a"], "rows": [["1"]]}
        series = {"type": "series", "title": "s", "values": [1.0, 2.0]}
        result.evidence["clean"] = [table, series]
        result.evidence["repeat"] = [table, series]
        if "mallory" in (self.runs[-1][2] or ""):
            result.evidence["yours"] = [{**table, "rows": 7}, {**series, "values": "xyz"}]
        else:
            result.evidence["yours"] = [table, series]
        return result


def test_a_file_too_deep_for_the_compiler_is_its_learners_failed_row_and_the_class_is_graded(tmp_path, catalog):
    before = honest_class(tmp_path / "fixes", catalog)
    hand_in(tmp_path / "fixes", "bea", DEEP)  # between ada and bob
    reply, said = batch(tmp_path)
    assert reply.code in (0, 1)
    rows = assert_the_class_is_graded(tmp_path, before)
    assert rows["bea"]["status"] == "fail" and rows["bea"]["score"] == 0
    assert "too deeply" in rows["bea"]["reason"] and "cannot be compiled" in rows["bea"]["reason"]
    assert [run[2] for run in Recording.made[-1].runs if run[2] == DEEP] == []  # never run


def test_the_compilers_recursion_is_one_sentence():
    said = syntax_problem("head-split.py", DEEP)
    assert said is not None and "too deeply" in said and said.count(". ") == 0 and "\n" not in said


def test_a_failure_inside_the_grader_is_that_rows_error_named_and_resume_goes_past_it(tmp_path, catalog):
    before = honest_class(tmp_path / "fixes", catalog)
    hand_in(tmp_path / "fixes", "bea", clean_head_split(catalog) + BREAKS_THE_GRADER)
    reply, said = batch(tmp_path, runner=Breaking)
    assert reply.code in (0, 1)
    rows = assert_the_class_is_graded(tmp_path, before)
    assert rows["bea"]["status"] == "error" and rows["bea"]["score"] == 0
    assert "RecursionError" in rows["bea"]["reason"] and "could not be graded" in rows["bea"]["reason"]
    assert any(n.startswith("bea: ") and "RecursionError" in n for n in said.notices), said.notices
    lines = (tmp_path / "o" / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    reply, _ = batch(tmp_path, "--resume", runner=Breaking)
    assert reply.code in (0, 1)
    assert Recording.made[-1].runs == []  # nothing graded again, bea's row included
    assert (tmp_path / "o" / "rows.jsonl").read_text(encoding="utf-8").splitlines() == lines
    assert_the_class_is_graded(tmp_path, before)


def test_evidence_of_the_wrong_shape_is_not_fixed_and_the_class_is_graded(tmp_path, catalog):
    before = honest_class(tmp_path / "fixes", catalog)
    hand_in(tmp_path / "fixes", "bea", clean_head_split(catalog) + "# mallory\n")
    reply, _ = batch(tmp_path, runner=MisShaped)
    assert reply.code in (0, 1)
    rows = assert_the_class_is_graded(tmp_path, before)
    assert rows["bea"]["status"] == "fail" and "table 't'" in rows["bea"]["reason"], rows["bea"]


@pytest.mark.parametrize("rows, values", [(7, [1.0]), ([["1"]], "xyz"), ([7], [1.0]), ([["1"]], [[1.0]])])
def test_first_difference_names_evidence_it_cannot_read(rows, values):
    clean = [{"type": "table", "title": "t", "rows": [["1"]]}, {"type": "series", "title": "s", "values": [1.0]}]
    yours = [{"type": "table", "title": "t", "rows": rows}, {"type": "series", "title": "s", "values": values}]
    said = first_difference(yours, clean)
    assert said is not None and ("table 't'" in said or "series 's'" in said)


def test_names_that_are_not_utf8_are_rows_of_their_own_and_the_files_stay_utf8(tmp_path, catalog):
    before = honest_class(tmp_path / "fixes", catalog)
    fixes = os.fsencode(tmp_path / "fixes")
    os.mkdir(fixes + b"/b\xffea")
    with open(fixes + b"/b\xffea/head-split.py", "w", encoding="utf-8") as fh:
        fh.write(clean_head_split(catalog))
    with open(fixes + b"/bob/head-split\xfe.py", "w", encoding="utf-8") as fh:
        fh.write("x = 1\n")
    reply, said = batch(tmp_path)
    assert reply.code in (0, 1)
    rows = assert_the_class_is_graded(tmp_path, before)
    odd = [r for r in rows.values() if r["learner"] not in HONEST]
    assert len(odd) == 1 and odd[0]["status"] == "unreadable" and "UTF-8" in odd[0]["reason"], odd
    assert "\\xff" in odd[0]["learner"]  # kept escaped, readable
    bobs = [r for r in gradebook.read_rows(tmp_path / "o") if r["learner"] == "bob"]
    assert sorted(r["status"] for r in bobs) == ["pass", "unreadable"]
    assert all("\udcff" not in n and "\udcfe" not in n for n in said.notices)


def test_a_gradescope_repair_whose_grading_fails_is_told_in_its_results_json(tmp_path, catalog):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "source").mkdir()
    (root / "submission" / "head-split.py").write_text(clean_head_split(catalog) + BREAKS_THE_GRADER)
    (root / "source" / "assignment.toml").write_text('exercises = ["head-split"]\n')
    reply, _ = grade_fixes(["gradescope", "--root", str(root), "--hidden-seeds", "0"], runner=Breaking)
    result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert result["score"] == 0 and "could not be graded" in result["tests"][0]["output"], result
    assert "RecursionError" in result["tests"][0]["output"]
