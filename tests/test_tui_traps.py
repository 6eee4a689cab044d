"""The learner's loop without traps: no answer changed by a confidence key, no draft or keystroke lost,
Esc that goes back one page, and keys that show where they go.

Driven through ``App.run_test()`` with the fake runner of ``test_tui``; each test waits for the screen
or the state it asserts on, never for a fixed time.
"""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import TextArea  # noqa: E402

from test_tui import (FakeRunner, drive, finish_runs, make_app, on_page, open_exercise, saved,  # noqa: E402
                      text_of)
from tutor.ui.screens.exercise import ExerciseScreen  # noqa: E402
from tutor.ui.screens.home import HomeScreen  # noqa: E402
from tutor.ui.widgets.confidence import ConfidencePicker  # noqa: E402
from tutor.ui.widgets.prediction import PredictionInput  # noqa: E402


async def until(pilot, condition, what: str, tries: int = 200) -> None:
    """Let the app run until ``condition()`` holds (a bounded number of its turns, not a time)."""
    for _ in range(tries):
        if condition():
            return
        await pilot.pause()
    raise AssertionError(f"never came: {what}")


# --- a confidence key never changes the answer ------------------------------------------------------

@pytest.mark.parametrize("exercise_id", ["lr-10x", "audit"])
def test_on_a_digit_choice_page_tab_after_a_pick_reaches_the_confidence(tmp_path, exercise_id):
    """Pick 3, Tab, 5: the answer stays choice 3 and the confidence is 50 %, as the screen says."""
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await on_page(pilot, exercise_id)
        prediction, picker = screen.query_one(PredictionInput), screen.query_one(ConfidencePicker)
        third = prediction.options[2][0]
        await pilot.press("3")
        assert prediction.value == third
        await pilot.press("tab")
        # where the digits go is on the screen
        await until(pilot, lambda: screen.focused is picker and "▶ How sure" in text_of(picker),
                    "the focus on the confidence line, marked")
        assert "5…9, 0 set this" in text_of(picker)
        await pilot.press("5")
        assert prediction.value == third and picker.value == 50
        await pilot.press("r")
        await finish_runs(pilot)
    drive(app, script)
    attempt = saved(tmp_path)["exercises"][exercise_id]["attempts"][0]
    assert attempt["prediction"] == app.catalog.get(exercise_id).choices[2][0]
    assert attempt["confidence"] == 50


def test_on_a_digit_choice_page_the_confidence_line_says_digits_pick_a_choice(tmp_path):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await on_page(pilot, "lr-10x")
        assert "digits pick a choice" in text_of(screen.query_one(ConfidencePicker))
    drive(app, script)
