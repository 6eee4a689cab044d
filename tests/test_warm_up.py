"""A warm-up (an exercise with ``graded = false``: the capstone's blind bet on a hidden mystery) is run,
shown and saved, and counts for nothing: not towards solving, a set's total, calibration, review, the
class report or a class's score. Its bet still meets its mystery, so the next one meets a new mystery.

The figures are worked out by hand from the attempts written here.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
import tomli_w

from tutor.app.learner import LearnerRecord
from tutor.app.seeds import next_seed
from tutor.cli import main
from tutor.instructor import assignment
from tutor.model import calibration, review
from tutor.model.attempts import WARMUP, Attempt, ExerciseProgress, LearnerProgress, is_prediction
from tutor.model.errors import UsageError
from tutor.render.progress import attempt_result, exercise_history, progress_table, set_totals
from tutor.store.catalog_cache import load_catalog
from tutor.store.names import file_stem
from tutor.store.progress import ProgressStore

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=timezone.utc)
WARM = "audit"  # the capstone's blind bet


def row(prediction: str, correct: bool, confidence: int, minute: int, mode: str = "predict", seed: int = 0) -> dict:
    """One attempt as a progress file holds it."""
    return {"time": (T0 + timedelta(minutes=minute)).isoformat(timespec="seconds"), "prediction": prediction,
            "observed": "causality", "correct": correct, "status": "pass" if correct else "fail",
            "device": "cpu", "engine_hash": "abc123def456", "seed": seed, "mode": mode, "confidence": confidence}


def write(folder, learner: str, exercises: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {"format_version": 2, "learner": learner, "exercises": exercises}
    (folder / f"{file_stem(learner)}.toml").write_text(tomli_w.dumps(data), encoding="utf-8")


def warm(correct: bool, seed: int = 0, minute: int = 0) -> Attempt:
    return Attempt(time=(T0 + timedelta(minutes=minute)).isoformat(timespec="seconds"), prediction="causality",
                   observed="causality", correct=correct, status="pass" if correct else "fail", device="cpu",
                   engine_hash="h", seed=seed, mode=WARMUP, confidence=90)


async def home_line_then_page(pilot, exercise_id: str):
    """The home screen's detail pane on ``exercise_id`` (its words single-spaced), then its page, opened."""
    from textual.widgets import Static
    from test_tui import open_exercise, text_of, wait_until
    from tutor.ui.widgets.exercise_tree import ExerciseTree
    home = pilot.app.screen
    await wait_until(pilot, lambda: bool(home.query(ExerciseTree)), "the exercise list")
    home.query_one(ExerciseTree).move_to(exercise_id)
    detail = home.query_one("#home-detail-text", Static)
    await wait_until(pilot, lambda: exercise_id in text_of(detail), f"{exercise_id} in the detail pane")
    return " ".join(text_of(detail).split()), await open_exercise(pilot, exercise_id)


def test_the_capstones_blind_bet_is_the_one_warm_up():
    catalog = load_catalog()
    assert [e.id for e in catalog.exercises if not e.graded] == [WARM]
    assert "warm-up, never graded" in " ".join(catalog.get(WARM).prompt.replace("**", "").split())


def test_a_warm_ups_run_is_saved_as_a_warm_up(tmp_path):
    from tutor.sandbox.result import RunResult
    catalog = load_catalog()
    record = LearnerRecord(ProgressStore(tmp_path), "ada")
    record.load()
    for ex_id in (WARM, "first-link-detach"):
        result = RunResult(id=ex_id, status="pass", device="cpu", torch="t", fault=None, kind="choice", seed=0,
                           prediction="causality", prediction_text="causality", observed="causality", correct=True)
        assert record.record(catalog.get(ex_id), result).saved_to is not None
    saved = ProgressStore(tmp_path).load("ada")
    assert [a.mode for a in saved.of(WARM).attempts] == [WARMUP]
    assert [a.mode for a in saved.of("first-link-detach").attempts] == ["predict"]
    assert not saved.of(WARM).solved and saved.of("first-link-detach").solved


def test_a_right_warm_up_solves_nothing_and_rates_nothing():
    entry = ExerciseProgress(attempts=[warm(True)])
    assert not is_prediction(entry.attempts[0]) and not entry.solved
    assert entry.predictions == entry.attempts and entry.edits() == []  # an answer, not an edit
    rated = calibration.calibrate(entry.attempts)
    assert rated.count == 0 and rated.unrated == 0
    assert review.review_state(WARM, entry) is None  # never due for review


def test_each_warm_up_meets_a_new_mystery():
    capstone = load_catalog().get(WARM)
    assert next_seed(capstone, [], set()) == 0
    assert next_seed(capstone, [warm(False, seed=0), warm(True, seed=1, minute=1)], set()) == 2


def test_the_path_moves_past_a_warm_up_once_its_bet_is_made():
    catalog = load_catalog()
    progress = LearnerProgress("ada", {WARM: ExerciseProgress(attempts=[warm(False)])})
    point = review.continue_point(catalog, progress)
    assert point.exercise_id != WARM and point.reason != "left unsolved"


def test_a_warm_up_is_counted_in_no_total_and_said_as_ungraded():
    catalog = load_catalog()
    progress = LearnerProgress("ada", {WARM: ExerciseProgress(attempts=[warm(True)])})
    cells = {r[0]: r[1:] for r in _rows(set_totals(catalog, progress))}
    assert cells["Capstone"] == ["0", "0", f"{len(catalog.get_set('capstone').exercises) - 1} + 1 warm-up"]
    assert cells["all"][2] == f"{len(catalog.exercises) - 1} + 1 warm-up"
    first = catalog.sets[0]
    assert cells[first.title][2] == str(len(first.exercises))  # a set with no warm-up: its count alone
    assert attempt_result(warm(True)).plain == "matched · ungraded"
    assert exercise_history(progress.of(WARM)).plain == \
        "○ warm-up: ungraded · 1 bet(s); last: you bet causality; the mystery's first failing link was causality"
    table = progress_table(progress, catalog, {WARM}, lambda note: note)
    assert _rows(table)[0][:5] == [WARM, "1", "causality", "causality (seed 0)", "ungraded"]


def _rows(table) -> list[list[str]]:
    """A word table's cells as text, row by row."""
    return [[str(getattr(c, "plain", c)) for c in r] for r in table.rows]


def test_tutor_progress_and_tutor_report_leave_a_warm_up_out(tmp_path, capsys):
    folder = tmp_path / "class"
    # head-split: a right 80 % and a wrong 60 %; the warm-up: two bets at 90 %, one right, that count for nothing
    write(folder, "ada", {"head-split": {"attempts": [row("b", True, 80, 0), row("a", False, 60, 1)]},
                          WARM: {"attempts": [row("causality", True, 90, 2, mode=WARMUP),
                                              row("shape", False, 90, 3, mode=WARMUP, seed=1)]}})
    assert main(["progress", "--json", "--progress-dir", str(folder), "--learner", "ada"]) == 0
    overall = json.loads(capsys.readouterr().out)["calibration"]["overall"]
    assert (overall["count"], overall["right"]) == (2, 1)
    assert overall["brier"] == pytest.approx((0.2 ** 2 + 0.6 ** 2) / 2)
    assert main(["report", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (rated,) = report["calibration"]
    assert rated["predictions"] == 2 and rated["accuracy"] == pytest.approx(0.5)
    by_id = {e["id"]: e for e in report["exercises"]}
    assert by_id["head-split"]["tried"] == 1
    assert (by_id[WARM]["tried"], by_id[WARM]["ever_solved"], by_id[WARM]["other_attempts"], by_id[WARM]["edits"]) \
        == (0, 0, 2, {})  # two attempts saved, none of them a prediction that counts, nor an edit


def test_an_assignment_never_scores_a_warm_up():
    catalog = load_catalog()
    assert [a.points for a in assignment.from_ids(f"head-split,{WARM}", catalog).exercises] == [1.0, 0.0]
    assert assignment.inferred(catalog, {"head-split", WARM}).max_score == 1.0
    practice = assignment.parse({"exercises": [{"id": WARM, "points": 0}]}, catalog)
    assert practice.max_score == 0.0
    with pytest.raises(UsageError, match="'audit' in the assignment is an ungraded warm-up, so it can score nothing"):
        assignment.parse({"exercises": [{"id": WARM, "points": 2}]}, catalog)
    with pytest.raises(UsageError, match="ungraded warm-up"):
        assignment.parse({"exercises": [WARM]}, catalog)  # the short form's one point each


def test_the_exercise_tree_marks_a_warm_up_apart_and_counts_it_beside_its_sets_exercises():
    pytest.importorskip("textual")
    from tutor.ui.widgets.exercise_tree import MARKS, ExerciseTree, status_of
    catalog = load_catalog()
    made = ExerciseProgress(attempts=[warm(False)])
    assert status_of(made) == "warmed" and MARKS["warmed"][0] == "○"  # not ✗: a bet that counts for nothing
    assert status_of(ExerciseProgress()) == "untried"
    capstone = catalog.get_set("capstone")
    graded = len(capstone.exercises) - 1
    key, label = ExerciseTree._set_label(capstone, LearnerProgress("ada", {WARM: made}))
    # the set's four lines read as three exercises and the warm-up, as tutor progress counts them
    assert key == (0, graded, 1) and label.plain.endswith(f"0/{graded} + 1 warm-up")
    shapes = catalog.sets[0]
    assert ExerciseTree._set_label(shapes, LearnerProgress("ada", {}))[1].plain.endswith(f"0/{len(shapes.exercises)}")


def test_a_warm_up_bet_and_a_fixed_hunt_of_its_mystery_are_never_marked_as_a_miss():
    """A hunt on the warm-up (Find and fix) counts for nothing too: the exercise stays ○, never ✗ in red."""
    pytest.importorskip("textual")
    from tutor.ui.screens.progress import exercise_renderable
    from tutor.ui.widgets.exercise_tree import ExerciseTree, status_of
    from rich.console import Console
    catalog = load_catalog()
    hunt = Attempt(time="t", prediction="", observed="ok", correct=True, status="ok", device="cpu",
                   engine_hash="h", mode="hunt", verdict="fixed")
    for attempts in ([warm(False), hunt], [hunt]):
        entry = ExerciseProgress(attempts=attempts)
        assert status_of(entry, graded=False) == "warmed"
        label = ExerciseTree.exercise_label(catalog.get(WARM), entry)
        assert label.plain.startswith("○ ") and label.spans[0].style == "cyan"
        console = Console(width=160, record=True)
        console.print(exercise_renderable(catalog.get(WARM), entry))
        assert console.export_text().startswith("○ audit")
    # a graded exercise with only an edit is attempted, as before
    assert status_of(ExerciseProgress(attempts=[hunt])) == "attempted"


def test_a_warm_ups_verdict_says_it_is_never_graded():
    from tutor.render.result import render_result
    from tutor.sandbox.result import RunResult
    catalog = load_catalog()
    for ex_id, said in ((WARM, True), ("first-link-detach", False)):
        result = RunResult(id=ex_id, status="fail", device="cpu", torch="t", fault=None, kind="choice", seed=0,
                           prediction="shape", prediction_text="shape", observed="causality", correct=False)
        verdict = render_result(catalog.get(ex_id), result)[0].plain
        assert verdict.startswith("✗ your prediction did not match the observation")
        assert ("a warm-up: saved, never graded" in verdict) is said


def test_a_saved_warm_up_is_said_as_a_bet_never_as_a_graded_prediction():
    from tutor.render.progress import answers_count, saved_attempt
    shown = saved_attempt(warm(False, seed=3)).plain
    assert shown.startswith("○ warm-up: you bet causality (90 % sure); the mystery's first failing link was causality")
    assert "saved, never graded" in shown and "mystery seed 3" in shown and "on a new mystery" in shown
    assert "prediction" not in shown and "✗" not in shown and "✓" not in shown  # no pass, no fail
    held = Attempt(**{**warm(True).__dict__, "prediction": "none", "observed": "none"})
    assert "every link of the mystery held (none)" in saved_attempt(held).plain
    edit = Attempt(time="t", prediction="", observed="ok", correct=False, status="ok", device="cpu",
                   engine_hash="h", mode="hunt", verdict="not fixed")
    assert answers_count([warm(False), warm(True, seed=1), edit]) == "2 warm-up bet(s), ungraded · 1 edit(s)"
    assert answers_count([]) == "0 prediction(s)"


def test_the_tui_shows_a_saved_warm_up_bet_after_a_relaunch_on_its_page_and_the_home_pane(tmp_path):
    """A relaunch reads the bet from the file: the page shows it as the last result, said as a warm-up's
    bet, and the home screen's detail pane counts it as a bet (it said "0 prediction(s)")."""
    pytest.importorskip("textual")
    from textual.widgets import Static
    from test_tui import drive, make_app, text_of, wait_until

    ProgressStore(tmp_path).record_attempt("ada", WARM, Attempt(**{**warm(False, seed=0).__dict__,
                                                                   "prediction": "shape"}))
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        seen["home"], screen = await home_line_then_page(pilot, WARM)
        panel = screen.query_one("#result")
        await wait_until(pilot, lambda: panel.has_class("-shown"), "the saved bet on the page")
        seen["page"] = " ".join(" ".join(text_of(s) for s in panel.query(Static)).split())
        seen["history"] = " ".join(text_of(screen.query_one("#exercise-history", Static)).split())
        seen["answer"] = screen.query_one("PredictionInput").value
    drive(app, script, size=(120, 40))
    assert "warm-up bet made (ungraded) · 1 warm-up bet(s), ungraded" in seen["home"]
    assert "prediction(s)" not in seen["home"]
    assert "warm-up: you bet shape (90 % sure); the mystery's first failing link was causality" in seen["page"]
    assert "saved, never graded" in seen["page"] and "did not match" not in seen["page"]
    assert seen["history"].startswith("○ warm-up: ungraded · 1 bet(s); last: you bet shape;")
    assert seen["answer"] == "shape"  # the bet is back in its box, as a prediction would be


def test_tutor_progress_all_counts_a_warm_up_apart_from_the_exercises_tried(tmp_path, capsys, monkeypatch):
    """A learner expects a warm-up to be tried and never scored: ``--all`` counts it beside the exercises
    tried (it counted as one of them, beside an "ever solved" it can never reach)."""
    folder = tmp_path / "class"
    write(folder, "ada", {"head-split": {"attempts": [row("b", True, 80, 0)]},
                          WARM: {"attempts": [row("causality", True, 90, 2, mode=WARMUP)]}})
    write(folder, "bob", {"head-split": {"attempts": [row("a", False, 80, 0)]}})
    assert main(["progress", "--all", "--json", "--progress-dir", str(folder)]) == 0
    rows = {r["learner"]: r for r in json.loads(capsys.readouterr().out)["learners"]}
    assert (rows["ada"]["tried"], rows["ada"]["warm_ups"], rows["ada"]["solved"]) == (1, 1, 1)
    assert (rows["bob"]["tried"], rows["bob"]["warm_ups"]) == (1, 0)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["progress", "--all", "--progress-dir", str(folder)]) == 0
    out = capsys.readouterr().out
    total = len(load_catalog().exercises)
    assert f"({total - 1} graded exercises + 1 warm-up)" in out
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("│ ")}
    assert "1 + 1 warm-up" in lines["ada"] and "warm-up" not in lines["bob"]


class _MissedBet:
    """A runner whose every run observed ``alignment``, graded against the prediction it is given."""

    def warm_up(self) -> dict:
        return {"torch": "fake"}

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, timeout_scale=None):
        from tutor.sandbox.result import RunResult
        said = exercise.kind.show_prediction(exercise.parse_answer(prediction))
        right = said == "alignment"
        return RunResult(id=exercise.id, status="pass" if right else "fail", device="cpu", torch="fake", fault=None,
                         kind=exercise.kind.name, seed=seed or 0, prediction=said, prediction_text=said,
                         observed="alignment", correct=right)

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_warm_ups_verdict_says_whether_its_bet_was_saved(tmp_path, capsys, monkeypatch):
    """``--no-save`` keeps nothing, so the verdict must not say the bet was saved."""
    import tutor.cli.common
    monkeypatch.setattr(tutor.cli.common, "make_runner", lambda *args, **kwargs: _MissedBet())
    monkeypatch.setenv("COLUMNS", "200")
    where = ["--progress-dir", str(tmp_path), "--learner", "ada"]
    main(["run", WARM, "--predict", "2", "--no-save", *where])
    out = " ".join(capsys.readouterr().out.split())
    assert "a warm-up: not saved, never graded" in out and "saved to" not in out
    assert not list(tmp_path.glob("*.toml"))
    main(["run", WARM, "--predict", "2", *where])
    out = " ".join(capsys.readouterr().out.split())
    assert "a warm-up: saved, never graded" in out and "saved to" in out


def test_a_missed_warm_up_bet_exits_0_and_its_json_says_it_is_ungraded(tmp_path, capsys, monkeypatch):
    """Exit 1 tells a script the prediction did not match: a bet that counts for nothing is no such miss."""
    import tutor.cli.common
    monkeypatch.setattr(tutor.cli.common, "make_runner", lambda *args, **kwargs: _MissedBet())
    assert main(["run", WARM, "--predict", "causality", "--json", "--no-save"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["status"], data["correct"], data["graded"]) == ("fail", False, False)
    assert main(["run", WARM, "--predict", "2", "--json", "--no-save"]) == 0  # the key 2: alignment
    assert json.loads(capsys.readouterr().out)["graded"] is False
    assert main(["run", "first-link-detach", "--predict", "causality", "--json", "--no-save"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["status"], data["graded"]) == ("fail", True)


def test_tutor_reports_header_counts_tried_as_its_rows_do(tmp_path, capsys, monkeypatch):
    """The header's "N exercises tried" follows the rows' rule (a graded prediction): a warm-up with a bet
    and a fixed hunt is listed with tried 0, so the header counts it apart, never among the tried."""
    folder = tmp_path / "class"
    hunt = {**row("", False, 0, 4, mode="hunt"), "status": "ok", "observed": "ok", "verdict": "fixed"}
    hunt.pop("confidence")
    write(folder, "ada", {"head-split": {"attempts": [row("b", True, 80, 0)]},
                          WARM: {"attempts": [row("shape", False, 90, 2, mode=WARMUP), hunt]}})
    assert main(["report", str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_id = {e["id"]: e for e in data["exercises"]}
    assert (by_id[WARM]["tried"], by_id[WARM]["edits"]) == (0, {"hunt": {"fixed": 1}})
    assert (data["exercises_tried"], data["exercises_with_other_attempts_only"]) == (1, 1)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["report", str(folder)]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.endswith("1 learner, 1 exercise tried, 1 more with only ungraded attempts (warm-up bets, fix, "
                           "break, hunt)")
