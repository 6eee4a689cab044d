"""The learner's experience: continue, find, reset, reopen, typed words, kind words,
plots on shared axes, tables that wrap at words, confidence and calibration, review, the progress
screen — each driven with Pilot (a fake runner; no torch) or the command line in-process.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from rich.console import Console

pytest.importorskip("textual")

from textual.widgets import Input, ListView, Static  # noqa: E402
from textual_plotext import PlotextPlot  # noqa: E402

from test_tui import (LEARNER, FakeRunner, canned_pass, drive, finish_runs, first_of_kind,  # noqa: E402
                      make_app, on_page, open_exercise, pick_and_run, saved, screen_text, text_of, type_answer, walk)
from tutor.model import calibration  # noqa: E402
from tutor.model import review  # noqa: E402
from tutor.store.catalog_cache import load_catalog  # noqa: E402
from tutor.cli import main  # noqa: E402
from tutor.model.attempts import Attempt  # noqa: E402
from tutor.store.progress import ProgressStore  # noqa: E402
from tutor.render import SeriesGroup, SeriesPlot, plot_scale, render_result  # noqa: E402
from tutor.sandbox.runner import RunResult  # noqa: E402
from tutor.app.session import Session  # noqa: E402
from tutor.ui.app import build_app  # noqa: E402
from tutor.ui.screens import reading_keys  # noqa: E402
from tutor.ui.screens.exercise import ExerciseScreen  # noqa: E402
from tutor.ui.screens.home import ConfirmReset, HomeScreen  # noqa: E402
from tutor.ui.screens.progress import ProgressScreen  # noqa: E402
from tutor.ui.widgets.confidence import ConfidencePicker  # noqa: E402
from tutor.ui.widgets.exercise_tree import ExerciseTree  # noqa: E402
from tutor.ui.widgets.hint_list import HintList  # noqa: E402
from tutor.ui.widgets.prediction import PredictionInput  # noqa: E402
from tutor.ui.widgets.result_panel import ResultPanel  # noqa: E402
from tutor.ui.widgets.series_plot import SeriesPlot as SeriesPlotWidget  # noqa: E402

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=timezone.utc)


def at(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def attempt(moment: datetime, correct: bool, confidence: int | None = None, prediction: str = "a",
            observed: str = "b", status: str | None = None) -> Attempt:
    return Attempt(time=at(moment), prediction=prediction, observed=observed if not correct else prediction,
                   correct=correct, status=status or ("pass" if correct else "fail"), device="cpu",
                   engine_hash="h", confidence=confidence)


def record(store, exercise_id: str, *attempts: Attempt) -> None:
    for a in attempts:
        store.record_attempt(LEARNER, exercise_id, a)


def cli(capsys, *argv) -> tuple[int, str, str]:
    """``tutor ARGV`` in this process: exit code, stdout, stderr."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def cursor_id(pilot) -> str | None:
    node = pilot.app.screen.query_one(ExerciseTree).cursor_node
    return node.data if node else None


# --- the hand-computed calibration fixture ------------------------------------------------
#
#   shapes/broadcast-loss:  90 % right, 90 % wrong
#   attention/head-split:   80 % right, 80 % right, 60 % wrong, 100 % right
#   attention/cache-offset: right, no confidence (unrated);
#                           a timed-out run at 100 % (not a graded prediction: left out)
#
# Buckets: 60 -> 1 of which 0 right; 80 -> 2, 2; 90 -> 2, 1; 100 -> 1, 1.
# Brier = [(0.9-1)^2 + (0.9-0)^2 + 2 (0.8-1)^2 + (0.6-0)^2 + (1-1)^2] / 6
#       = [0.01 + 0.81 + 0.08 + 0.36 + 0] / 6 = 1.26 / 6 = 0.21
# Per set: shapes (0.01 + 0.81) / 2 = 0.41; attention (0.08 + 0.36 + 0) / 4 = 0.11 (one unrated);
#          generation: no prediction at all.

def calibration_fixture(store) -> None:
    record(store, "broadcast-loss", attempt(T0, True, 90), attempt(T0 + timedelta(minutes=1), False, 90))
    record(store, "head-split", attempt(T0, True, 80), attempt(T0 + timedelta(days=1), True, 80),
           attempt(T0 + timedelta(days=2), False, 60), attempt(T0 + timedelta(days=2, minutes=5), True, 100))
    record(store, "cache-offset", attempt(T0, True, None, prediction="yes"),
           attempt(T0 + timedelta(minutes=3), False, 100, status="timeout"))


def test_calibration_matches_the_hand_computation(tmp_path):
    store = ProgressStore(tmp_path)
    calibration_fixture(store)
    overall, per_set = calibration.calibration_by_set(load_catalog(), store.load(LEARNER))
    assert {b.confidence: (b.count, b.right) for b in overall.buckets if b.count} == \
        {60: (1, 0), 80: (2, 2), 90: (2, 1), 100: (1, 1)}
    assert (overall.count, overall.right, overall.unrated) == (6, 4, 1)
    assert overall.brier == pytest.approx(1.26 / 6)
    assert per_set["shapes"].brier == pytest.approx(0.41)
    assert per_set["attention"].brier == pytest.approx(0.11)
    assert per_set["attention"].unrated == 1 and per_set["attention"].count == 4
    assert per_set["generation"].brier is None and per_set["generation"].count == 0
    assert calibration.bucket_of(75) == 70 and calibration.bucket_of(100) == 100


def test_a_bucket_reads_over_or_under_confident_only_with_enough_predictions():
    bucket = calibration.Bucket(80, count=5, right=2)      # 40 % right at 80 %
    assert bucket.verdict == "over-confident"
    assert calibration.Bucket(60, count=4, right=4).verdict == "under-confident"
    assert calibration.Bucket(90, count=10, right=9).verdict == "about right"
    assert calibration.Bucket(90, count=2, right=0).verdict == "too few to tell"


def test_tutor_progress_shows_calibration_and_brier_overall_and_per_set(tmp_path, capsys, monkeypatch):
    calibration_fixture(ProgressStore(tmp_path))
    code, out, _ = cli(capsys, "progress", "--json", "--learner", LEARNER, "--progress-dir", str(tmp_path))
    assert code == 0
    data = json.loads(out)["calibration"]
    assert data["overall"]["brier"] == pytest.approx(0.21)
    assert [(b["confidence"], b["count"], b["right"]) for b in data["overall"]["buckets"]] == \
        [(60, 1, 0), (80, 2, 2), (90, 2, 1), (100, 1, 1)]
    assert data["sets"]["shapes"]["brier"] == pytest.approx(0.41)
    assert data["sets"]["attention"]["brier"] == pytest.approx(0.11)
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = cli(capsys, "progress", "--learner", LEARNER, "--progress-dir", str(tmp_path))
    flat = " ".join(out.split())
    assert "Brier score 0.210 over 6 rated prediction(s)" in flat
    assert "1 without a confidence are left out" in flat
    assert re.search(r"Shapes\s+│ 1\s+│ 1\s+│ 10\s+│ 2\s+│ 0\.410", out), out
    assert re.search(r"80 %\s+│ 2\s+│ 2\s+│ 100 %", out), out


def test_the_progress_screen_shows_totals_calibration_accuracy_and_opens_an_exercise(tmp_path):
    calibration_fixture(ProgressStore(tmp_path))
    app, _ = make_app(tmp_path)

    async def script(pilot):
        await pilot.press("p")
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, ProgressScreen)
        text = screen_text(screen)
        assert "Brier score 0.210" in text and "Totals" in text and "Attention" in text
        assert "80 %" in text and "60 %" in text
        plot = screen.query_one("#accuracy-plot", PlotextPlot).render().plain
        assert "100 %" in plot and "01-01" in plot and "01-03" in plot  # three days of attempts
        items = screen.query_one("#progress-list", ListView)
        assert [item.exercise_id for item in items.children] == ["broadcast-loss", "head-split", "cache-offset"]
        assert "untried hidden" in screen_text(screen)
        await pilot.press("u")                       # the untried ones too
        await pilot.pause()
        assert len(items.children) == len(load_catalog().exercises)
        await pilot.press("u")
        await pilot.pause()
        await pilot.press("down", "enter")            # Enter opens the highlighted exercise
        await pilot.pause()
        assert isinstance(pilot.app.screen, ExerciseScreen) and pilot.app.screen.exercise.id == "head-split"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ProgressScreen)
    drive(app, script, size=(100, 40))


# --- review: Leitner boxes after 1, 3 and 7 days --------------------------------------------

def review_fixture(store) -> None:
    # wrong: box 1, due a day later
    record(store, "broadcast-loss", attempt(T0, False))
    # wrong; right an hour later (before it is due: nothing moves); right once due -> box 2 (3 days),
    # right once due -> box 3 (7 days), right once due -> out of the boxes
    record(store, "head-split", attempt(T0, False), attempt(T0 + timedelta(hours=1), True),
           attempt(T0 + timedelta(days=1, hours=1), True), attempt(T0 + timedelta(days=4, hours=2), True),
           attempt(T0 + timedelta(days=11, hours=3), True))
    # right but unsure (60 %): box 1; right and sure once due: box 2, back 3 days later
    record(store, "cache-offset", attempt(T0, True, 60), attempt(T0 + timedelta(days=2), True, 90))
    # right and sure at once: never in review
    record(store, "squeeze-batch", attempt(T0, True, 90))


def test_review_boxes_follow_the_leitner_intervals(tmp_path):
    store = ProgressStore(tmp_path)
    review_fixture(store)
    catalog, progress = load_catalog(), store.load(LEARNER)
    states = {s.exercise_id: s for s in review.review_states(catalog, progress)}
    assert set(states) == {"broadcast-loss", "cache-offset"}
    assert (states["broadcast-loss"].box, states["broadcast-loss"].due) == (1, T0 + timedelta(days=1))
    assert (states["cache-offset"].box, states["cache-offset"].due) == (2, T0 + timedelta(days=5))
    assert [s.exercise_id for s in review.due(catalog, progress, now=T0 + timedelta(hours=23))] == []
    assert [s.exercise_id for s in review.due(catalog, progress, now=T0 + timedelta(days=2))] == ["broadcast-loss"]
    assert [s.exercise_id for s in review.due(catalog, progress, now=T0 + timedelta(days=6))] == \
        ["broadcast-loss", "cache-offset"]
    # midway through head-split's history it sat in box 3, due 7 days after its fourth attempt
    partial = store.load(LEARNER).of("head-split")
    partial.attempts = partial.attempts[:4]
    state = review.review_state("head-split", partial)
    assert (state.box, state.due) == (3, T0 + timedelta(days=11, hours=2))


def test_tutor_review_lists_what_is_due(tmp_path, capsys, monkeypatch):
    review_fixture(ProgressStore(tmp_path))   # in January 2026: both are due by now
    code, out, _ = cli(capsys, "review", "--json", "--learner", LEARNER, "--progress-dir", str(tmp_path))
    assert code == 0
    data = json.loads(out)
    assert [(d["id"], d["box"], d["interval_days"]) for d in data["due"]] == \
        [("broadcast-loss", 1, 1), ("cache-offset", 2, 3)]
    assert data["intervals_days"] == [1, 3, 7]
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli(capsys, "review", "--learner", LEARNER, "--progress-dir", str(tmp_path))
    assert code == 0 and "2 due for review" in out and "broadcast-loss" in out
    code, out, _ = cli(capsys, "review", "--learner", "nobody", "--progress-dir", str(tmp_path))
    assert code == 0 and "Nothing is due for review" in out


def test_the_home_screen_says_how_many_are_due_and_marks_them(tmp_path):
    review_fixture(ProgressStore(tmp_path))
    app, _ = make_app(tmp_path)

    async def script(pilot):
        status = text_of(pilot.app.screen.query_one("#home-status", Static))
        assert "2 due for review" in status
        assert "2 due for review" in pilot.app.screen.sub_title
        tree = pilot.app.screen.query_one(ExerciseTree)
        labels = {n.data: n.label.plain for n in walk(tree.root)}
        assert "↻" in labels["broadcast-loss"] and "↻" in labels["cache-offset"]
        assert "↻" not in labels["head-split"]
    drive(app, script)


# --- continue and next ----------------------------------------------------------------------

def test_a_first_launch_starts_at_the_first_exercise(tmp_path):
    app, _ = make_app(tmp_path)
    first = load_catalog().exercises[0].id

    async def script(pilot):
        assert cursor_id(pilot) == first
        assert f"continue: {first}" in pilot.app.screen.sub_title
    drive(app, script)


def _hours_ago(hours: float) -> datetime:
    """A moment this many hours before now: a wrong answer then is not yet due for review (a day later)."""
    return datetime.now(timezone.utc) - timedelta(hours=hours)


def test_a_relaunch_lands_on_the_next_untried_exercise_after_the_last_solved(tmp_path):
    store = ProgressStore(tmp_path)
    order = [e.id for e in load_catalog().exercises]
    after = order[order.index("head-split") + 1]
    record(store, "broadcast-loss", attempt(_hours_ago(3), True))
    record(store, after, attempt(_hours_ago(3), False))            # tried earlier: skipped
    record(store, "head-split", attempt(_hours_ago(2), True))
    app, _ = make_app(tmp_path)
    expected = order[order.index("head-split") + 2]

    async def script(pilot):
        assert cursor_id(pilot) == expected
        assert f"continue: {expected}" in pilot.app.screen.sub_title
        assert "next after head-split" in text_of(pilot.app.screen.query_one("#home-status", Static))
    drive(app, script)


def test_a_relaunch_lands_on_the_last_exercise_left_unsolved(tmp_path):
    store = ProgressStore(tmp_path)
    record(store, "head-split", attempt(_hours_ago(3), True))
    record(store, "softmax-axis", attempt(_hours_ago(1), False))
    app, _ = make_app(tmp_path)

    async def script(pilot):
        assert cursor_id(pilot) == "softmax-axis"
        assert "left unsolved" in text_of(pilot.app.screen.query_one("#home-status", Static))
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.screen.exercise.id == "softmax-axis"
    drive(app, script)


def test_a_move_the_learner_made_before_the_continue_point_arrived_stands(tmp_path):
    """The home screen moves to where to continue after its first refresh; a key typed while the app was
    starting may have moved the cursor before that, and then the learner's move is kept."""
    store = ProgressStore(tmp_path)
    record(store, "softmax-axis", attempt(T0, False))
    app, _ = make_app(tmp_path)

    async def script(pilot):
        home = pilot.app.screen
        tree = home.query_one(ExerciseTree)
        assert cursor_id(pilot) == "softmax-axis"
        tree.cursor_line = 0                          # as at mount, before the first refresh
        await pilot.pause()
        home.move_to_continue_point(line_at_mount=0)  # nobody moved: the continue point is taken
        await pilot.pause()
        assert cursor_id(pilot) == "softmax-axis"
        tree.cursor_line = 0
        tree.move_to("head-split")                    # the learner moved first
        await pilot.pause()
        home.move_to_continue_point(line_at_mount=0)
        await pilot.pause()
        assert cursor_id(pilot) == "head-split"
    drive(app, script)


def test_n_opens_the_next_exercise_after_a_result(tmp_path):
    app, _ = make_app(tmp_path)
    order = [e.id for e in load_catalog().exercises]

    async def script(pilot):
        screen = await open_exercise(pilot, "head-split")
        await pilot.press("n")                       # no result yet: n does nothing here
        await pilot.pause(0.6)
        assert pilot.app.screen is screen
        await pick_and_run(pilot, "b")
        following = order[order.index("head-split") + 1]
        assert following in text_of(screen.query_one("#next-hint", Static))
        screen.query_one("#exercise-body").focus()
        await pilot.press("n")
        for _ in range(50):                          # held briefly, so a typed word never leaves the page
            await pilot.pause(0.05)
            if pilot.app.screen is not screen:
                break
        assert isinstance(pilot.app.screen, ExerciseScreen) and pilot.app.screen.exercise.id == following
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HomeScreen)  # the next one replaced it on the stack
    drive(app, script)


def test_on_a_yes_no_page_n_answers_no_and_shift_n_opens_the_next(tmp_path):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await on_page(pilot, "cache-offset")
        await pilot.press("y", "r")                  # a pick, then run: not a typed word
        await finish_runs(pilot)
        assert screen.query_one(ResultPanel).has_class("-shown")
        screen.query_one("#exercise-body").focus()
        await pilot.pause(0.5)
        await pilot.press("n")
        await pilot.pause(0.5)
        assert pilot.app.screen is screen and screen.query_one(PredictionInput).value == "no"
        assert "N opens the next exercise" in text_of(screen.query_one("#next-hint", Static))
        await pilot.press("N")
        for _ in range(50):
            await pilot.pause(0.05)
            if pilot.app.screen is not screen:
                break
        assert isinstance(pilot.app.screen, ExerciseScreen) and pilot.app.screen.exercise.id != "cache-offset"
    drive(app, script)


# --- find -----------------------------------------------------------------------------------

def test_slash_cache_filters_the_home_tree_to_the_cache_exercises(tmp_path):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        await pilot.press("slash", *"cache")
        await pilot.pause()
        tree = pilot.app.screen.query_one(ExerciseTree)
        shown = tree.shown_ids()
        assert {"cache-offset", "cache-no-mask", "cached-generation"} <= set(shown)
        assert "head-split" not in shown and len(shown) < 12
        assert f"{len(shown)} found" in text_of(pilot.app.screen.query_one("#home-status", Static))
        await pilot.press("enter")                   # to the list, on the first found by its id or title
        await pilot.pause()                          # (not sequential-vs-modulelist, whose prompt says "KV cache")
        first_named = next(i for i in shown if "cache" in i)
        assert pilot.app.screen.focused is tree and cursor_id(pilot) == first_named
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.screen.exercise.id == first_named
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("escape")                  # clears the search
        await pilot.pause()
        assert len(tree.shown_ids()) == len(load_catalog().exercises)
        assert cursor_id(pilot) == first_named        # still on what was found
    drive(app, script)


def test_find_matches_set_title_and_prompt_words():
    from tutor.model.finding import matches
    catalog = load_catalog()
    ex = catalog.get("cache-offset")
    exercise_set = catalog.get_set(ex.set)
    assert matches(ex, exercise_set, "CACHE")
    assert matches(ex, exercise_set, exercise_set.title.split()[0])
    word = max(re.findall(r"[a-z]{6,}", ex.prompt.lower()), key=len)
    assert matches(ex, exercise_set, word[:5])
    assert not matches(ex, exercise_set, "zzqqx")


def test_every_exercise_is_a_command_in_the_palette(tmp_path):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"open cache-offset")
        for _ in range(40):                          # the palette searches in a worker
            await pilot.pause(0.05)
        await pilot.press("enter")
        for _ in range(20):
            await pilot.pause(0.05)
            if isinstance(pilot.app.screen, ExerciseScreen):
                break
        assert isinstance(pilot.app.screen, ExerciseScreen) and pilot.app.screen.exercise.id == "cache-offset"
    drive(app, script)


def test_ids_are_case_insensitive_with_close_matches_suggested(tmp_path, capsys):
    code, out, _ = cli(capsys, "show", "CACHE-Offset", "--json")
    assert code == 0 and json.loads(out)["id"] == "cache-offset"
    code, _, err = cli(capsys, "show", "cache-ofset")
    assert code == 2 and "did you mean cache-offset" in err
    code, _, err = cli(capsys, "run", "Cache-Ofset", "--predict", "yes", "--no-save")
    assert code == 2 and "did you mean cache-offset" in err
    app, _ = make_app(tmp_path)

    async def script(pilot):
        pilot.app.open_exercise("HEAD-SPLIT")
        await pilot.pause()
        assert pilot.app.screen.exercise.id == "head-split"
    drive(app, script)


# --- reset ------------------------------------------------------------------------------------

def test_a_reset_asks_first_keeps_the_old_attempts_and_shows_the_exercise_fresh(tmp_path):
    store = ProgressStore(tmp_path)
    record(store, "head-split", attempt(T0, False), attempt(T0 + timedelta(minutes=1), True))
    store.save_note(LEARNER, "head-split", "the reshape mixes positions")
    app, _ = make_app(tmp_path)

    async def script(pilot):
        tree = pilot.app.screen.query_one(ExerciseTree)
        tree.move_to("head-split")
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConfirmReset)
        await pilot.press("n")                       # keep it
        await pilot.pause()
        assert all("before_reset" not in a for a in saved(tmp_path)["exercises"]["head-split"]["attempts"])
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("y")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.pause()
        label = next(n.label.plain for n in walk(tree.root) if n.data == "head-split")
        assert label.startswith("·")                 # fresh
        screen = await open_exercise(pilot, "head-split")
        assert not screen.query("#exercise-history")
        assert not screen.query_one(ResultPanel).has_class("-shown")
        assert not screen.query_one("#note-editor").display  # the explain-back question waits for a run
        assert screen.query_one(PredictionInput).value == ""
    drive(app, script)
    entry = saved(tmp_path)["exercises"]["head-split"]
    assert [a["before_reset"] for a in entry["attempts"]] == [True, True]
    assert entry["reset_time"] and entry["note"] == "the reshape mixes positions"
    progress = ProgressStore(tmp_path).load(LEARNER).of("head-split")
    assert len(progress.attempts) == 2 and progress.current == [] and not progress.solved


def test_tutor_progress_json_marks_attempts_before_the_reset(tmp_path, capsys):
    store = ProgressStore(tmp_path)
    record(store, "head-split", attempt(T0, True))
    store.reset(LEARNER, "head-split")
    record(store, "head-split", attempt(T0 + timedelta(days=1), False))
    code, out, _ = cli(capsys, "progress", "--json", "--learner", LEARNER, "--progress-dir", str(tmp_path))
    entry = json.loads(out)["exercises"]["head-split"]
    assert [a.get("before_reset", False) for a in entry["attempts"]] == [True, False]
    assert entry["solved"] is False and entry["reset_time"]


# --- reopen -----------------------------------------------------------------------------------

def test_reopening_keeps_the_answer_the_hints_and_the_last_result(tmp_path):
    ex = first_of_kind("shape")
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_answer(pilot, "3x3")
        await pilot.press("enter")
        await finish_runs(pilot)
        assert screen.query_one(PredictionInput).value == "3x3"   # not emptied after a run
        await pilot.press("h")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_exercise(pilot, ex.id)
        assert screen.query_one(PredictionInput).value == "3x3"
        assert screen.query_one(HintList).shown == 1 and len(screen.query(".hint")) == 1
        panel = screen.query_one(ResultPanel)
        assert panel.has_class("-shown") and panel.border_title == "last result"
        assert "✓ your prediction matched" in text_of(screen.query_one("#result-text", Static))
        assert screen.query(SeriesPlotWidget)                     # the evidence too
    drive(app, script)

    relaunched, _ = make_app(tmp_path)                            # a new app: what the file kept

    async def again(pilot):
        screen = await open_exercise(pilot, ex.id)
        assert screen.query_one(PredictionInput).value == "(3, 3)"
        panel = screen.query_one(ResultPanel)
        assert panel.has_class("-shown") and panel.border_title == "last result (saved)"
        assert "you said (3, 3)" in text_of(screen.query_one("#result-text", Static))
    drive(relaunched, again)


# --- typed words on choice and yes/no pages ---------------------------------------------------

def test_typed_words_on_a_yes_no_page_change_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(reading_keys, "WORD_GAP_S", 1.0)
    app, _ = make_app(tmp_path)
    told = []
    original = app.notify
    app.notify = lambda message, *a, **k: (told.append(str(message)), original(message, *a, **k))

    async def script(pilot):
        screen = await on_page(pilot, "cache-offset")
        await pilot.press(*"yes i think so")
        await pilot.pause()
        assert screen.query_one(PredictionInput).value == ""     # neither "yes" nor "no"
        assert not screen.query(".hint")                         # no hint from the h of "think"
        assert pilot.app.screen is screen
        assert any("Typed words pick nothing" in m for m in told)
        await asyncio.sleep(1.2)                                  # a pause: the next key is a single press
        await pilot.press("y")
        assert screen.query_one(PredictionInput).value == "yes"
        await asyncio.sleep(1.2)
        await pilot.press("h")                                    # a single h still reveals a hint
        for _ in range(60):
            await pilot.pause(0.05)
            if screen.query(".hint"):
                break
        assert len(screen.query(".hint")) == 1
    drive(app, script)


def test_typed_words_on_a_letter_choice_page_pick_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(reading_keys, "WORD_GAP_S", 1.0)
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await on_page(pilot, "head-split")               # choices a, b, c, d
        await pilot.press(*"bad idea")
        await pilot.pause()
        assert screen.query_one(PredictionInput).value == ""
        assert not screen.query(".hint") and pilot.app.screen is screen
    drive(app, script)


# --- learner-facing words for answer kinds ------------------------------------------------------

def test_answer_kinds_are_named_in_the_learners_words(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    code, out, _ = cli(capsys, "list")
    assert code == 0 and "yes/no" in out and "an exception name" in out
    assert not re.search(r"│\s*(bool|error)\s*│", out)
    code, _, err = cli(capsys, "run", "cache-offset", "--predict", "maybe", "--no-save")
    assert code == 2 and "as yes/no" in err and "bool" not in err
    error_kind = first_of_kind("error")
    code, _, err = cli(capsys, "run", error_kind.id, "--predict", "12", "--no-save")
    assert code == 2 and "as an exception name" in err
    app, _ = make_app(tmp_path)

    async def script(pilot):
        pilot.app.screen.query_one(ExerciseTree).move_to("cache-offset")
        await pilot.pause()
        detail = text_of(pilot.app.screen.query_one("#home-detail-text", Static))
        assert "answer: yes/no" in detail
    drive(app, script, size=(100, 30))


def test_a_set_line_at_home_shows_the_sets_primer(tmp_path):
    app, _ = make_app(tmp_path)
    primer = " ".join(load_catalog().get_set("training-update").primer.split())

    async def script(pilot):
        tree = pilot.app.screen.query_one(ExerciseTree)
        tree.move_to("hand-update")
        tree.move_cursor(tree.cursor_node.parent)  # the set's own line
        await pilot.pause()
        detail = text_of(pilot.app.screen.query_one("#home-detail-text", Static))
        assert detail.startswith("One update — ") and primer in " ".join(detail.split())
    drive(app, script, size=(100, 30))


# --- time limits ----------------------------------------------------------------------------------

LIMIT = "the check did not finish within 30 s and was stopped"


def canned_timeout(exercise, prediction):
    return RunResult(id=exercise.id, status="timeout", device="cpu", torch="fake", fault=exercise.fault,
                     kind=exercise.kind.name, prediction=prediction, errors={"clean": LIMIT, "faulted": LIMIT},
                     duration_s=30.1)


def test_a_time_limit_is_said_once_with_what_to_do():
    ex = load_catalog().get("head-split")
    console = Console(width=80, record=True, color_system=None)
    for r in render_result(ex, canned_timeout(ex, "b")):
        console.print(r)
    text = console.export_text()
    assert text.count("did not finish within 30 s") == 1 and "clean and faulted: " in text
    assert "ran out of time" in text and "the machine may be busy" in text


def test_a_rerun_clears_the_old_panel(tmp_path):
    runner = FakeRunner(make=canned_timeout)
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "head-split")
        await pick_and_run(pilot, "b")
        panel = screen.query_one(ResultPanel)
        assert panel.has_class("-shown") and "ran out of time" in text_of(screen.query_one("#result-text", Static))
        runner.slow = True
        await pilot.press("r")
        await asyncio.to_thread(runner.started.wait, 5)
        await pilot.pause()
        assert screen.running and not panel.has_class("-shown")   # the old timeout is gone while it runs
        await pilot.press("escape")
        await finish_runs(pilot)
    drive(app, script)


# --- plots on shared axes ------------------------------------------------------------------------

def curves(n: int = 40) -> dict[str, list[float]]:
    """A clean loss falling to 0.0058 and a faulted one stalling at 1.955 (the issue's two curves)."""
    clean = [3.6 * (0.0058 / 3.6) ** (i / (n - 1)) for i in range(n)]
    faulted = [3.6 - (3.6 - 1.955) * i / (n - 1) for i in range(n)]
    return {"clean": clean, "faulted": faulted}


def series_result(exercise):
    c = curves()
    return RunResult(id=exercise.id, status="pass", device="cpu", torch="fake", fault=exercise.fault,
                     kind=exercise.kind.name, prediction="b", prediction_text="b", observed="b", clean="a", faulted="b",
                     correct=True, duration_s=0.5,
                     evidence={side: [{"type": "series", "title": "loss per step", "label": "nats", "values": v}]
                               for side, v in c.items()})


def last_rows(lines: list[str], markers=("•", "x")) -> dict[str, int]:
    """The row of each marker's rightmost point in a drawn plot (smaller is higher)."""
    found = {}
    for marker in markers:
        best = (-1, None)
        for row, line in enumerate(lines):
            column = line.rfind(marker)
            if column > best[0]:
                best = (column, row)
        found[marker] = best[1]
    return found


@pytest.mark.parametrize("width", [80, 120])
def test_shared_scale_plots_render_in_tutor_run_output(width):
    ex = load_catalog().get("head-split")
    console = Console(width=width, record=True, color_system=None)
    for r in render_result(ex, series_result(ex)):
        console.print(r)
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= width
    plot = [line for line in lines if "┤" in line or "│" in line and ("•" in line or "x" in line)]
    ticks = [line.split("┤")[0].strip() for line in lines if "┤" in line]
    assert ticks == ["10", "1", "0.1", "0.01", "0.001"]       # labelled, a decade apart: log scale
    legend = next(line for line in lines if line.startswith("• clean"))
    assert "3.6 → 0.0058" in legend and "x faulted 3.6 → 1.955" in legend and "log scale" in legend
    rows = last_rows(plot)
    assert rows["x"] < rows["•"] - 3                           # 1.955 sits far above 0.0058
    assert plot_scale(curves()) == "log" and plot_scale({"clean": [3.0, 2.0, 1.0]}) == "linear"


@pytest.mark.parametrize("width", [80, 120])
def test_shared_scale_plots_render_in_the_tui(tmp_path, width):
    app, _ = make_app(tmp_path, FakeRunner(make=lambda ex, p: series_result(ex)))

    async def script(pilot):
        screen = await open_exercise(pilot, "head-split")
        await pick_and_run(pilot, "b")
        widget = screen.query_one(SeriesPlotWidget)
        assert list(widget.group.curves) == ["clean", "faulted"]
        plot = widget.query_one(PlotextPlot)
        assert width - 10 <= plot.size.width <= width
        lines = plot.render().plain.splitlines()
        ticks = [line.split("┤")[0].strip() for line in lines if "┤" in line]
        assert ticks == ["10", "1", "0.1", "0.01", "0.001"]
        rows = last_rows(lines)
        assert rows["x"] < rows["•"] - 3
        assert "log scale" in text_of(widget.query_one(".series-legend", Static))
    drive(app, script, size=(width, 40))


def test_a_plot_draws_the_same_on_every_repaint():
    """Plotext's own log scale rescales the data on each build; ours must not drift."""
    group = SeriesGroup("loss", "nats", curves())
    plot = SeriesPlot(group)
    assert plot.plot_text(80, color=False).plain == plot.plot_text(80, color=False).plain


# --- tables at 80 columns ---------------------------------------------------------------------

LEDGER = {"type": "table", "title": "Shape ledger B=2 T=16 C=128 H=4 V=37",
          "columns": ["stage", "shape", "invariant", "ok"],
          "rows": [["token_embedding", "(2, 16, 128)", "(B,T,C)=(2,16,128)", "ok"],
                   ["position_embedding", "(16, 128)", "(T,C)=(16,128)", "ok"],
                   ["head split", "(2, 4, 16, 32)", "merge(split(q)) == q (round trip)", "X  <- first divergence"],
                   ["attention scores", "(2, 4, 16, 16)", "(B,H,T,T) masked above the diagonal", "ok"]]}


@pytest.mark.parametrize("width", [120, 80, 72])  # 72: the result panel's width in an 80-column TUI
def test_tables_never_break_a_word_in_the_middle(width):
    ex = load_catalog().get("head-split")
    result = series_result(ex)
    result.evidence = {"faulted": [LEDGER]}
    console = Console(width=width, record=True, color_system=None)
    for r in render_result(ex, result):
        console.print(r)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    cells = [word for row in LEDGER["rows"] for cell in row for word in cell.split()]
    for word in cells:
        assert re.search(rf"(^|[\s│]){re.escape(word)}($|[\s│])", text, re.M), (word, text)


def test_tutor_progress_wraps_notes_at_words(tmp_path, capsys, monkeypatch):
    store = ProgressStore(tmp_path)
    record(store, "head-split", attempt(T0, True))
    note = ("The single reshape cuts the sequence into head-sized blocks, so positions_and_channels mix; "
            "splitting needs view(B, T, H, D) then transpose(1, 2) before attention.")
    store.save_note(LEARNER, "head-split", note)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli(capsys, "progress", "--learner", LEARNER, "--progress-dir", str(tmp_path))
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    for word in note.split():
        assert re.search(rf"(^|[\s│]){re.escape(word)}($|[\s│])", out, re.M), (word, out)


# --- the home screen at 40x12 --------------------------------------------------------------------

def test_the_home_screen_is_usable_at_40_by_12(tmp_path):
    store = ProgressStore(tmp_path)
    record(store, "head-split", attempt(T0, False))
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = pilot.app.screen
        tree = screen.query_one(ExerciseTree)
        assert tree.size.height >= 6
        assert cursor_id(pilot) == "head-split"
        assert tree.scroll_y <= tree.cursor_line < tree.scroll_y + tree.size.height   # in view
        assert "head-split" in text_of(screen.query_one("#home-status", Static))
        await pilot.press("slash", *"cache", "enter")
        await pilot.pause()
        assert cursor_id(pilot) in ("cache-offset", "cache-no-mask", "cached-generation")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ExerciseScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HomeScreen)
    drive(app, script, size=(40, 12))


# --- confidence ----------------------------------------------------------------------------------

def test_a_confidence_key_is_saved_with_the_attempt_and_shown_as_the_last_run(tmp_path):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await on_page(pilot, "cache-offset")             # yes/no: the digits are free
        await pilot.press("8")
        assert screen.query_one(ConfidencePicker).value == 80
        await pilot.press("0")
        assert screen.query_one(ConfidencePicker).value == 100
        await pilot.pause(0.5)
        await pilot.press("y")
        await pilot.pause(0.5)
        await pilot.press("r")
        await finish_runs(pilot)
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_exercise(pilot, "cache-offset")
        picker = screen.query_one(ConfidencePicker)               # a new attempt: said afresh, the last shown
        assert picker.value is None and "last run 100 %" in text_of(picker)
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_exercise(pilot, "broadcast-loss")     # a typed answer: Tab to the picker
        await type_answer(pilot, "3x3")
        await pilot.press("tab", "9", "enter")
        await finish_runs(pilot)
    drive(app, script)
    exercises = saved(tmp_path)["exercises"]
    assert exercises["cache-offset"]["attempts"][0]["confidence"] == 100
    assert exercises["broadcast-loss"]["attempts"][0]["confidence"] == 90


def test_a_prediction_without_a_confidence_saves_none(tmp_path):
    session = Session(load_catalog(), FakeRunner(), ProgressStore(tmp_path), LEARNER)
    session.load()
    session.attempt(load_catalog().get("cache-offset"), "yes")
    session.attempt(load_catalog().get("cache-offset"), "no", confidence=70)
    attempts = saved(tmp_path)["exercises"]["cache-offset"]["attempts"]
    assert "confidence" not in attempts[0] and attempts[1]["confidence"] == 70
    assert [a.confidence for a in ProgressStore(tmp_path).load(LEARNER).of("cache-offset").attempts] == [None, 70]


def test_tutor_run_refuses_a_confidence_outside_the_yes_no_scale_50_to_100(capsys, tmp_path):
    for outside in ("40", "101"):
        code, _, err = cli(capsys, "run", "cache-offset", "--predict", "yes", "--confidence", outside, "--no-save")
        assert code == 2 and "from 50 (a blind guess's chance, or 'guess') to 100 (certain)" in err


# --- the new modules keep the layers ---------------------------------------------------------------

@pytest.mark.parametrize("module", ["tutor.model.calibration", "tutor.model.review", "tutor.model.finding", "tutor.render"])
def test_the_new_domain_modules_import_neither_torch_nor_textual(module):
    code = (f"import sys, {module}; bad = [m for m in ('torch', 'textual') if m in sys.modules]; "
            "print(','.join(bad)); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-300:]
