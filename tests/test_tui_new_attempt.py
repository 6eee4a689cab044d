"""A page reopened for a new attempt says how sure afresh, and the tutor says on quitting exactly what it kept.

The confidence is a claim about one attempt: once a run with it is recorded, the page reopened (in the
same run of the app, or after a relaunch) starts with none set and shows the last run's beside the
scale, so it never carries into the next attempt unseen. A draft left unrun is still offered as left.
"""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from test_tui import FakeRunner, drive, finish_runs, make_app, open_exercise, saved, text_of, wait_until  # noqa: E402
from tutor.model.attempts import Attempt  # noqa: E402
from tutor.ui.recall import Recall, open_page  # noqa: E402
from tutor.ui.widgets.confidence import ConfidencePicker  # noqa: E402
from tutor.ui.widgets.prediction import PredictionInput  # noqa: E402


def _attempts(tmp_path, exercise_id: str) -> list[tuple[str, int | None]]:
    return [(a["prediction"], a.get("confidence")) for a in saved(tmp_path)["exercises"][exercise_id]["attempts"]]


async def _pick_sure_and_run(pilot, screen, runner, *keys: str) -> None:
    calls = len(runner.calls)
    for key in keys:  # one at a time, with the page's pause between single keys
        await pilot.press(key)
        await pilot.pause(0.4)
    await pilot.press("r")
    await wait_until(pilot, lambda: len(runner.calls) > calls, "the run")
    await finish_runs(pilot)
    await wait_until(pilot, lambda: screen.query_one("#result").has_class("-shown"), "the result")


def _session(tmp_path, steps) -> None:
    """One run of the app over ``tmp_path``'s progress: index-assign opened, then ``steps(pilot, screen, runner)``."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        await steps(pilot, await open_exercise(pilot, "index-assign"), runner)
    drive(app, script)


async def _reopened_picker(pilot) -> tuple:
    """Leave the page and open index-assign again (the same run of the app): the page and its picker."""
    await pilot.press("escape")
    screen = await open_exercise(pilot, "index-assign")
    return screen, screen.query_one(ConfidencePicker)


def test_a_page_reopened_after_a_run_starts_with_no_confidence_and_shows_the_last(tmp_path):
    async def run_then_reopen(pilot, screen, runner):
        await _pick_sure_and_run(pilot, screen, runner, "y", "9")
        screen, picker = await _reopened_picker(pilot)
        assert picker.value is None and "last run 90 %" in text_of(picker)
        assert screen.query_one(PredictionInput).value == "yes"  # the answer stays: r runs it again
        screen, picker = await _reopened_picker(pilot)  # and again, nothing run in between: still shown
        assert picker.value is None and "last run 90 %" in text_of(picker)
        await _pick_sure_and_run(pilot, screen, runner)
    _session(tmp_path, run_then_reopen)
    assert _attempts(tmp_path, "index-assign") == [("yes", 90), ("yes", None)]

    async def relaunched(pilot, screen, runner):
        picker = screen.query_one(ConfidencePicker)
        assert picker.value is None and "last run" not in text_of(picker)  # the last run said none
        await pilot.press("escape")
    _session(tmp_path, relaunched)


def test_after_a_relaunch_the_last_confidence_shows_beside_an_empty_scale(tmp_path):
    async def first(pilot, screen, runner):
        await _pick_sure_and_run(pilot, screen, runner, "n", "7")
    _session(tmp_path, first)

    async def relaunched(pilot, screen, runner):
        picker = screen.query_one(ConfidencePicker)
        assert picker.value is None and "last run 70 %" in text_of(picker)
        await _pick_sure_and_run(pilot, screen, runner)
    _session(tmp_path, relaunched)
    assert _attempts(tmp_path, "index-assign") == [("no", 70), ("no", None)]


def test_every_opening_for_a_new_attempt_offers_the_last_runs_confidence_and_keeps_no_draft():
    """Reopened twice after a run at 90 %: both openings start empty and show 90 (the second showed none)."""
    recall = Recall(answer="yes", confidence=90, ran=("yes", 90), opened=True)  # a run just recorded
    said = [Attempt(time="t", prediction="yes", observed="yes", correct=True, status="pass", device="cpu",
                    engine_hash="h", confidence=90)]
    for _ in range(2):
        assert open_page(recall, {}, said, None) == (False, 90)
        assert recall.confidence is None and recall.draft() == {}


def test_quitting_with_a_confidence_and_no_prediction_says_only_the_confidence_is_kept(tmp_path, capsys):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_exercise(pilot, "squeeze-batch")
        picker = screen.query_one(ConfidencePicker)
        picker.focus()
        await pilot.press("9")
        await wait_until(pilot, lambda: picker.value == 90, "the confidence set")
        await pilot.press("q")
    drive(app, script)
    message = " ".join(capsys.readouterr().err.split())
    assert "unrun prediction for squeeze-batch" not in message
    assert "your confidence for squeeze-batch (90 %), set with no prediction yet, is kept" in message
    draft = saved(tmp_path)["exercises"]["squeeze-batch"]["draft"]
    assert draft["prediction"] == "" and draft["confidence"] == 90
