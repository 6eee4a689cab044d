"""A page reopened for a new attempt says how sure afresh, and the tutor says on quitting exactly what it kept.

The confidence is a claim about one attempt: once a run with it is recorded, the page reopened (in the
same run of the app, or after a relaunch) starts with none set and shows the last run's beside the
scale, so it never carries into the next attempt unseen. A draft left unrun is still offered as left.
"""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from test_tui import FakeRunner, drive, finish_runs, make_app, open_exercise, saved, text_of, wait_until  # noqa: E402
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


def test_a_page_reopened_after_a_run_starts_with_no_confidence_and_shows_the_last(tmp_path):
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "index-assign")
        await _pick_sure_and_run(pilot, screen, runner, "y", "9")
        await pilot.press("escape")
        screen = await open_exercise(pilot, "index-assign")  # reopened in the same run of the app
        picker = screen.query_one(ConfidencePicker)
        assert picker.value is None and "last run 90 %" in text_of(picker)
        assert screen.query_one(PredictionInput).value == "yes"  # the answer stays: r runs it again
        await _pick_sure_and_run(pilot, screen, runner)
    drive(app, script)
    assert _attempts(tmp_path, "index-assign") == [("yes", 90), ("yes", None)]

    relaunched, _ = make_app(tmp_path, FakeRunner())

    async def again(pilot):
        screen = await open_exercise(pilot, "index-assign")
        picker = screen.query_one(ConfidencePicker)
        assert picker.value is None and "last run" not in text_of(picker)  # the last run said none
        await pilot.press("escape")
    drive(relaunched, again)


def test_after_a_relaunch_the_last_confidence_shows_beside_an_empty_scale(tmp_path):
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "index-assign")
        await _pick_sure_and_run(pilot, screen, runner, "n", "7")
    drive(app, script)

    runner2 = FakeRunner()
    relaunched, _ = make_app(tmp_path, runner2)

    async def again(pilot):
        screen = await open_exercise(pilot, "index-assign")
        picker = screen.query_one(ConfidencePicker)
        assert picker.value is None and "last run 70 %" in text_of(picker)
        await _pick_sure_and_run(pilot, screen, runner2)
    drive(relaunched, again)
    assert _attempts(tmp_path, "index-assign") == [("no", 70), ("no", None)]


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
