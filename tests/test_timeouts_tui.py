"""The TUI's retry of a timed-out run, through Pilot with a fake runner.

The fake times out every side of a plain run and measures when it is given a
time-limit scale (a retry), so what is tested is the screen's path: the
sentence shown under a timeout, ``r`` retrying the same prediction and seed
with twice the limit, and both runs saved as what they were.
"""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import Static  # noqa: E402

from test_timeouts import TimingOutRunner  # noqa: E402
from test_tui import drive, finish_runs, make_app, open_exercise, pick, saved, text_of, type_answer  # noqa: E402
from tutor.store.catalog_cache import load_catalog  # noqa: E402
from tutor.ui.widgets.prediction import PredictionInput  # noqa: E402


def retry_hint(screen) -> str:
    """The retry sentence under the result, or "" when there is none."""
    hints = screen.query("#retry-hint")
    return text_of(hints.first(Static)).strip() if hints else ""


def test_r_retries_a_timed_out_choice_with_twice_the_limit(tmp_path):
    ex = load_catalog().get("head-split")
    choice = ex.choices[1][0]
    runner = TimingOutRunner(observed={"clean": ex.choices[0][0], "faulted": choice})
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await pick(pilot, choice)
        await pilot.press("r")
        await finish_runs(pilot)
        result = text_of(screen.query_one("#result-text", Static))
        assert "the check ran out of time" in result
        assert "did not finish within 30 s" in result
        assert retry_hint(screen) == "the machine may be busy: r retries with twice the limit (60 s)"
        assert screen.query_one(PredictionInput).value == choice  # the prediction stays for the retry
        await pilot.press("r")
        await finish_runs(pilot)
        result = text_of(screen.query_one("#result-text", Static))
        assert "✓ your prediction matched the observation" in result
        assert retry_hint(screen) == ""  # gone with the timeout
    drive(app, script)
    assert [(c["prediction"], c["seed"], c["timeout_scale"]) for c in runner.calls] == \
        [(choice, 0, None), (choice, 0, 2.0)]
    attempts = saved(tmp_path)["exercises"][ex.id]["attempts"]
    assert [(a["status"], a["correct"], a["observed"]) for a in attempts] == \
        [("timeout", False, ""), ("pass", True, choice)]


def test_a_typed_prediction_stays_after_a_timeout_and_another_answer_is_a_plain_run(tmp_path):
    runner = TimingOutRunner()
    app, _ = make_app(tmp_path, runner)
    ex = load_catalog().get("broadcast-loss")

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_answer(pilot, "(3, 3)")
        await pilot.press("enter")
        await finish_runs(pilot)
        box = screen.query_one(PredictionInput)
        assert box.value == "(3, 3)"
        assert retry_hint(screen) == "the machine may be busy: r retries with twice the limit (60 s)"
        box.set_value("")
        await type_answer(pilot, "(3,)")
        await pilot.press("enter")
        await finish_runs(pilot)
    drive(app, script)
    assert [(c["prediction"], c["timeout_scale"]) for c in runner.calls] == [("(3, 3)", None), ("(3,)", None)]
