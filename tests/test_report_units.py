"""The class report computed in this process on the hand-derived class of tests/test_report.py: every field of
its JSON and CSV, the same counts whichever number of processes reads the files, and edit-mode tallies."""

from __future__ import annotations

import pytest

from test_report import attempt, fixture_class, write  # noqa: F401  (fixture_class is a fixture)
from tutor.instructor import report as reporting
from tutor.instructor.report import build_report, edits_words, to_csv
from tutor.model.errors import UsageError


def test_the_reports_json_holds_every_hand_derived_count(fixture_class, catalog):
    data = build_report(fixture_class, catalog, top=3).to_dict()
    hs, bl = catalog.get("head-split"), catalog.get("broadcast-loss")
    [damaged] = data.pop("damaged")
    assert damaged["file"] == str(fixture_class / "fay.toml") and damaged["problem"]
    assert data == {
        "folder": str(fixture_class), "learner_count": 5, "exercises_tried": 2, "exercises_with_other_attempts_only": 0,
        "exercises": [
            {"id": "broadcast-loss", "title": bl.title, "set": bl.set, "in_catalog": True, "tried": 2, "solved_first": 0,
             "solved_latest": 1, "ever_solved": 1, "median_attempts": 1.5, "median_attempts_to_solve": 2.0,
             "other_attempts": 0, "hinted": 0, "fix_tried": 0, "fix_fixed": 0,
             "wrong_predictions": [{"prediction": "(3,)", "learners": 2, "attempts": 2}], "note_count": 0, "notes": [],
             "edits": {}, "guessed": 0},
            {"id": "head-split", "title": hs.title, "set": hs.set, "in_catalog": True, "tried": 4, "solved_first": 2,
             "solved_latest": 3, "ever_solved": 3, "median_attempts": 1.5, "median_attempts_to_solve": 1.0,
             "other_attempts": 1, "hinted": 0, "fix_tried": 0, "fix_fixed": 0,
             "wrong_predictions": [{"prediction": "a", "learners": 2, "attempts": 3},
                                   {"prediction": "c", "learners": 1, "attempts": 1}], "note_count": 2,
             "notes": [{"learner": "ada", "note": "the reshape cuts time into head-sized blocks"},
                       {"learner": "Cyd", "note": "heads see other positions"}], "edits": {}, "guessed": 0}],
        "calibration": [
            {"learner": "ada", "predictions": 3, "mean_confidence": 0.8, "accuracy": 0.6667,
             "brier": round((0.01 + 0.64 + 0.09) / 3, 4), "overconfidence": round(0.8 - 2 / 3, 4), "guesses": 0},
            {"learner": "dan", "predictions": 1, "mean_confidence": 1.0, "accuracy": 1.0, "brier": 0.0,
             "overconfidence": 0.0, "guesses": 0}],
        "kept_aside": [str(fixture_class / "gus.toml.corrupt-20261129-100000-000000")], "shadowed": [],
        "read_only": []}
    assert build_report(fixture_class, catalog, top=1).exercises[1].wrong_predictions[0].prediction == "a"


def test_the_reports_csv_is_one_row_per_exercise_with_its_wrong_predictions(fixture_class, catalog):
    report = build_report(fixture_class, catalog, top=3)
    hs, bl = catalog.get("head-split"), catalog.get("broadcast-loss")
    header = ("exercise,set,title,tried,solved_first,ever_solved,median_attempts,median_attempts_to_solve,"
              "other_attempts,notes,wrong_prediction_1,wrong_prediction_1_learners,wrong_prediction_2,"
              "wrong_prediction_2_learners,solved_latest,fix_tried,fix_fixed,edits,hinted,guessed")
    assert to_csv(report).split("\n") == [
        header, f"broadcast-loss,{bl.set},{bl.title},2,0,1,1.5,2,0,0,\"(3,)\",2,,,1,0,0,,0,0",
        f"head-split,{hs.set},{hs.title},4,2,3,1.5,1,1,2,a,2,c,1,3,0,0,,0,0", ""]
    assert to_csv(report, top=1).split("\n")[0].count("wrong_prediction_") == 2
    empty = reporting.ClassReport(folder=fixture_class)
    assert to_csv(empty).split("\n")[0].count("wrong_prediction_") == 2  # one column pair at the least


@pytest.mark.parametrize("jobs", [2, 3])
def test_the_counts_are_the_same_whichever_number_of_processes_reads_the_files(fixture_class, catalog, jobs):
    assert build_report(fixture_class, catalog, jobs=jobs).to_dict() == build_report(fixture_class, catalog,
                                                                                     jobs=1).to_dict()


def test_many_files_are_read_in_parallel_and_no_processes_means_this_one(fixture_class, catalog, monkeypatch):
    one = build_report(fixture_class, catalog, jobs=1).to_dict()
    parts = []
    real = reporting._count
    monkeypatch.setattr(reporting, "_count", lambda store, cat, files: parts.append(len(files)) or real(store, cat, files))
    monkeypatch.setattr(reporting, "PARALLEL_FROM", 2)
    monkeypatch.setattr(reporting.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(reporting, "ProcessPoolExecutor", _NoProcesses)
    assert build_report(fixture_class, catalog).to_dict() == one
    assert parts == [6]  # the pool could not start: every file (the damaged one too) read here, once
    parts.clear()
    monkeypatch.setattr(reporting, "PARALLEL_FROM", 7)
    build_report(fixture_class, catalog)
    assert parts == [6]


class _NoProcesses:
    def __init__(self, *args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")


def _inline_pool(seen: list, runs: list | None = None):
    """A ProcessPoolExecutor that maps in this process: each pool made is noted in ``seen`` (its size and
    start method), each map's run sizes in ``runs``."""
    class Inline:
        def __init__(self, n, mp_context=None):
            seen.append(("pool", n, mp_context.get_start_method()))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def map(self, fn, parts):
            parts = list(parts)
            if runs is not None:
                runs.append([len(p) for p in parts])
            return [fn(p) for p in parts]
    return Inline


def test_the_pool_splits_the_files_into_one_run_per_job(fixture_class, catalog, monkeypatch):
    seen, runs = [], []
    monkeypatch.setattr(reporting, "ProcessPoolExecutor", _inline_pool(seen, runs))
    assert build_report(fixture_class, catalog, jobs=2).learners == 5
    assert (seen, runs) == ([("pool", 2, "fork")], [[3, 3]])


def test_edit_mode_attempts_and_hints_are_counted_apart(tmp_path, catalog):
    fix = lambda verdict, correct, minute: {**attempt("", correct, minute=minute), "mode": "fix",  # noqa: E731
                                             "verdict": verdict, "status": "pass" if correct else "fail"}
    write(tmp_path, "ada", {"head-split": {"attempts": [fix("not fixed", False, 1), fix("fixed", True, 2),
                                                        {**attempt("a", False, minute=3), "hints": 2}]}})
    write(tmp_path, "bob", {"head-split": {"attempts": [fix("fixed", True, 1), fix("not fixed", False, 2),
                                                        {**attempt("b", True), "mode": "break", "verdict": "changed"}]}})
    write(tmp_path, "cy", {"zz-unknown": {"attempts": [attempt("x", False)], "note": "  "}})
    report = build_report(tmp_path, catalog)
    hs = next(e for e in report.exercises if e.id == "head-split")
    assert (hs.fix_tried, hs.fix_fixed, hs.tried, hs.hinted, hs.other_attempts) == (2, 1, 1, 1, 5)
    assert hs.edits == {"break": {"changed": 1}, "fix": {"fixed": 2, "not fixed": 2}}
    assert edits_words(hs.edits) == "break 1 (changed 1) · fix 4 (fixed 2, not fixed 2)"
    unknown = report.exercises[-1]
    assert (unknown.id, unknown.in_catalog, unknown.title, unknown.set, unknown.notes) == \
        ("zz-unknown", False, None, None, [])
    assert [e.id for e in build_report(tmp_path).exercises] == ["head-split", "zz-unknown"]  # no catalog: by id


def test_without_a_catalog_predictions_compare_as_typed(tmp_path):
    write(tmp_path, "ada", {"broadcast-loss": {"attempts": [attempt("3x3", False), attempt(" (3, 3) ", False, minute=1)]}})
    [bl] = build_report(tmp_path).exercises
    assert sorted((w.prediction, w.attempts) for w in bl.wrong_predictions) == [("(3, 3)", 1), ("3x3", 1)]


def test_a_report_of_no_folder_is_one_sentence(tmp_path):
    with pytest.raises(UsageError) as caught:
        build_report(tmp_path / "none")
    assert str(caught.value) == (f"there is no progress folder {tmp_path / 'none'}; name a folder of progress files "
                                 "(tutor report DIR)")


def test_the_files_are_shared_out_only_from_parallel_from_on_or_when_jobs_are_asked(fixture_class, catalog, monkeypatch):
    seen = []
    monkeypatch.setattr(reporting, "ProcessPoolExecutor", _inline_pool(seen))
    monkeypatch.setattr(reporting.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(reporting, "PARALLEL_FROM", 6)  # the class has 6 files
    build_report(fixture_class, catalog)
    monkeypatch.setattr(reporting, "PARALLEL_FROM", 7)
    build_report(fixture_class, catalog)
    build_report(fixture_class, catalog, jobs=1)
    assert seen == [("pool", 3, "fork")]

    def no_affinity(pid):
        raise AttributeError("no sched_getaffinity here")
    monkeypatch.setattr(reporting.os, "sched_getaffinity", no_affinity)
    monkeypatch.setattr(reporting.os, "cpu_count", lambda: None)
    monkeypatch.setattr(reporting, "PARALLEL_FROM", 1)
    build_report(fixture_class, catalog)  # one core: read here
    assert seen == [("pool", 3, "fork")]
    two = fixture_class.parent / "two"
    two.mkdir()
    for name in ("ada.toml", "bob.toml"):
        (two / name).write_bytes((fixture_class / name).read_bytes())
    build_report(two, catalog, jobs=2)
    assert seen == [("pool", 3, "fork"), ("pool", 2, "fork")]


def test_without_fork_the_files_are_read_here(fixture_class, catalog, monkeypatch):
    one = build_report(fixture_class, catalog, jobs=1).to_dict()

    def no_fork(method):
        raise ValueError(f"cannot find context for {method!r}")
    monkeypatch.setattr(reporting.multiprocessing, "get_context", no_fork)
    assert build_report(fixture_class, catalog, jobs=2).to_dict() == one


def test_an_exercise_without_catalog_or_attempts_leaves_its_cells_empty(tmp_path):
    write(tmp_path, "ada", {"zz-gone": {"attempts": [attempt("b", False, status="timeout")]}})
    report = build_report(tmp_path)
    assert to_csv(report).split("\n")[1] == "zz-gone,,,0,0,0,,,1,0,,,0,0,0,,0,0"


def test_exercises_come_in_the_catalogs_order_then_unknown_ones_by_id(tmp_path, catalog):
    ids = [e.id for e in catalog.exercises]
    first, second = next((a, b) for i, a in enumerate(ids) for b in ids[i + 1:] if a > b)  # catalog order is not A-Z
    for learner, ex_id in (("ada", "zz-gone"), ("bob", second), ("cy", first), ("dan", "aa-gone")):
        write(tmp_path, learner, {ex_id: {"attempts": [attempt("b", False)]}})
    assert [e.id for e in build_report(tmp_path, catalog).exercises] == [first, second, "aa-gone", "zz-gone"]


def test_the_counts_merge_across_processes_and_rank_wrong_predictions_by_learners_then_attempts(tmp_path, catalog):
    fix = {**attempt("", True, minute=5), "mode": "fix", "verdict": "fixed"}
    write(tmp_path, "ada", {"head-split": {"attempts": [{**attempt("c", False), "hints": 1}, fix,
                                                        {**attempt("", True, minute=6), "mode": "break", "verdict": ""}]}})
    write(tmp_path, "bob", {"head-split": {"attempts": [{**attempt("d", False), "hints": 2},
                                                        {**attempt("d", False, minute=1)}, fix]}})
    write(tmp_path, "cy", {"head-split": {"attempts": [attempt("b", True, 70), attempt("b", True, 71, minute=1),
                                                       attempt("b", True, 71, minute=2),
                                                       {**attempt("b", False, 50, status="timeout", minute=3)}]}})
    one = build_report(tmp_path, catalog, jobs=1)
    assert build_report(tmp_path, catalog, jobs=3).to_dict() == one.to_dict()
    [hs] = one.exercises
    assert [(w.prediction, w.learners, w.attempts) for w in hs.wrong_predictions] == [("d", 1, 2), ("c", 1, 1)]
    assert (hs.hinted, hs.edits) == (2, {"break": {"pass": 1}, "fix": {"fixed": 2}})  # no verdict: its status
    [cy] = [c.to_dict() for c in one.calibration]
    assert (cy["predictions"], cy["mean_confidence"]) == (3, round(212 / 300, 4))  # the timeout's 50 % left out
    assert cy["mean_confidence"] == 0.7067
