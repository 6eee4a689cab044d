"""Keys go where the learner meant, whatever the timing.

Every key of a sequence is queued before the first is handled (zero pause between keys, as at typing
speed on a busy machine), and the saved progress file is asserted on: a digit typed after Tab is the
confidence, never the answer; a key typed after Esc or a change of page reaches the page the learner
is on, never the box being left. The loaded runs make every change of focus block the event loop, so
a key already queued would overtake it if keys were not handled in order.
"""

from __future__ import annotations

import io
import time

import pytest

pytest.importorskip("textual")

from textual import events  # noqa: E402
from textual.keys import _character_to_key  # noqa: E402
from textual.screen import Screen  # noqa: E402
from rich.console import Console  # noqa: E402
from textual.widgets import TextArea  # noqa: E402

from test_tui import (LEARNER, FakeRunner, drive, finish_runs, make_app, open_exercise, open_note,  # noqa: E402
                      saved, shows_page, text_of, type_and_run, type_answer, wait_until, walk)
from tutor.model.attempts import Attempt, now  # noqa: E402
from tutor.ui.screens.exercise import ExerciseScreen  # noqa: E402
from tutor.ui.screens.progress import ProgressScreen, exercise_renderable  # noqa: E402
from tutor.ui.widgets.confidence import ConfidencePicker  # noqa: E402
from tutor.ui.widgets.hint_list import HintList  # noqa: E402
from tutor.ui.widgets.exercise_tree import ExerciseTree  # noqa: E402
from tutor.ui.widgets.prediction import PredictionInput  # noqa: E402

#: what a terminal sends as the character of a named key that is not printable
_CHARACTERS = {"tab": "\t", "escape": "\x1b", "enter": "\r"}


def burst(app, *keys: str) -> None:
    """Queue every key at once: characters as typed ("2", ",", " ") and named keys ("tab")."""
    for key in keys:
        if len(key) == 1:
            app.post_message(events.Key(_character_to_key(key), key))
        else:
            app.post_message(events.Key(key, _CHARACTERS.get(key)))


@pytest.fixture(params=["idle", "loaded"])
def load(request, monkeypatch):
    """"loaded": every change of focus blocks the event loop for a moment (a busy machine)."""
    if request.param == "loaded":
        real = Screen.set_focus

        def slow_set_focus(self, *args, **kwargs):
            time.sleep(0.05)
            return real(self, *args, **kwargs)
        monkeypatch.setattr(Screen, "set_focus", slow_set_focus)
    return request.param


def _attempt(tmp_path, exercise_id: str) -> dict:
    return saved(tmp_path)["exercises"][exercise_id]["attempts"][-1]


@pytest.mark.parametrize("exercise_id, keys, prediction, confidence", [
    ("topp-crossing", ["1", "tab", "9", "r"], "1", 90),
    ("layernorm-params", [*"256, 128", "tab", "0", "enter"], "[256, 128]", 100),
    ("squeeze-batch", [*"(5,)", "tab", "9", "enter"], "(5,)", 90),
])
def test_a_digit_typed_right_after_tab_is_the_confidence(tmp_path, load, exercise_id, keys, prediction,
                                                         confidence):
    """Typed from the page with no pause: the answer, Tab, a confidence digit, run."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        await open_exercise(pilot, exercise_id)
        burst(pilot.app, *keys)
        await wait_until(pilot, lambda: runner.calls, "the run")
        await finish_runs(pilot)
    drive(app, script)
    attempt = _attempt(tmp_path, exercise_id)
    assert (attempt["prediction"], attempt.get("confidence")) == (prediction, confidence)


def _shows_a_hint(pilot, screen) -> bool:
    return screen.query_one(HintList).shown == 1


def _shows_the_progress(pilot, screen) -> bool:
    return isinstance(pilot.app.screen, ProgressScreen)


@pytest.mark.parametrize("typed, key, reached, what", [
    ("rows add", "h", _shows_a_hint, "the first hint"),  # a hint shows
    ("later prefixes.", "p", _shows_the_progress, "the progress"),  # a page opens, no stray p in the note
])
def test_a_key_typed_right_after_esc_acts_on_the_page_and_leaves_the_note_as_typed(tmp_path, load, typed, key,
                                                                                    reached, what):
    """Esc then a page key: the key acts on the page, and the note keeps exactly what was typed."""
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_note(pilot, "broadcast-loss")
        await wait_until(pilot, lambda: isinstance(screen.focused, TextArea), "the note focused")
        burst(pilot.app, *typed, "escape", key)
        await wait_until(pilot, lambda: reached(pilot, screen), what)
        screen.flush_note()
        assert screen.query_one("#note", TextArea).text == typed
    drive(app, script)
    assert saved(tmp_path)["exercises"]["broadcast-loss"]["note"] == typed


def test_keys_typed_right_after_next_reach_neither_the_page_left_nor_the_new_page_s_answer(tmp_path, load):
    """After a result, n then N 7 at once: the next page opens; the page left keeps its answer, and the
    keys typed before the new page was drawn type nothing into its answer box."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "broadcast-loss")
        await type_and_run(pilot, "(3, 3)")
        await wait_until(pilot, lambda: screen.query_one("#result").has_class("-shown"), "the result")
        burst(pilot.app, "n", "N", "7")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ExerciseScreen)
                         and pilot.app.screen is not screen and bool(pilot.app.screen.query("#exercise-body")),
                         "the next page")
        following = pilot.app.screen
        await wait_until(pilot, lambda: following.shown_at is not None and following.focused is not None, "the next page drawn")
        await pilot.pause()
        assert following.query_one(PredictionInput).value == ""
        assert pilot.app.recall["broadcast-loss"].answer == "(3, 3)"
        # the learner did not pick the page n opened, so the keys are left out of it, and the page says so
        assert "typed early" in [n.title for n in pilot.app._notifications]
    drive(app, script)


@pytest.mark.parametrize("exercise_id, keys, prediction, confidence", [
    ("pairwise-index", [*"(3,)", "tab", "9", "r"], "(3,)", 90),
    ("topp-crossing", ["7", "tab", "6", "r"], "7", 60),
])
def test_keys_typed_with_the_enter_that_opens_a_page_reach_that_page_in_order(tmp_path, load, exercise_id, keys,
                                                                             prediction, confidence):
    """From the list, Enter and the whole answer at once (queued before the page is made): the keys wait
    for the new page and reach it as typed, answer, Tab, confidence, run; none is lost or left in the list."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        await wait_until(pilot, lambda: bool(pilot.app.screen.query(ExerciseTree)), "the exercise list")
        tree = pilot.app.screen.query_one(ExerciseTree)
        tree.focus()
        tree.cursor_line = next(n for n in walk(tree.root) if n.data == exercise_id).line
        await pilot.pause()
        burst(pilot.app, "enter", *keys)
        await wait_until(pilot, lambda: runner.calls, "the run")
        await finish_runs(pilot)
    drive(app, script)
    assert runner.calls == [(exercise_id, prediction)]
    attempt = _attempt(tmp_path, exercise_id)
    assert (attempt["prediction"], attempt.get("confidence")) == (prediction, confidence)


async def type_at_speed(pilot, *keys: str, gap_s: float = 0.02) -> None:
    """Each key 20 ms after the one before, whether or not the app has handled it (a quick typist)."""
    import asyncio
    for key in keys:
        burst(pilot.app, key)
        await asyncio.sleep(gap_s)


def test_a_whole_exercise_typed_at_twenty_milliseconds_a_key_is_saved_as_typed(tmp_path, load):
    """Answer, Tab, confidence, run; then the note, Esc, a hint: every key where it was meant."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "broadcast-loss")
        await type_at_speed(pilot, *"(3, 3)", "tab", "8", "r")
        await wait_until(pilot, lambda: screen.query_one("#result").has_class("-shown"), "the result")
        await type_at_speed(pilot, "e", *"rows add", "escape", "h")
        await wait_until(pilot, lambda: screen.query_one(HintList).shown == 1, "the first hint")
        screen.flush_note()
    drive(app, script)
    entry = saved(tmp_path)["exercises"]["broadcast-loss"]
    assert (entry["attempts"][0]["prediction"], entry["attempts"][0]["confidence"]) == ("(3, 3)", 80)
    assert entry["note"] == "rows add"


def test_from_the_list_to_the_next_exercise_typed_at_twenty_milliseconds_a_key(tmp_path, load):
    """The whole loop from the first screen, every key 20 ms after the one before: find the exercise and
    open it, answer, Tab, a confidence digit, run; the note; Esc, n to the next exercise, and its answer
    too. The saved file holds each answer and confidence as typed, and the note."""
    from tutor.model.review import next_after
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        await wait_until(pilot, lambda: pilot.app.screen.query("#exercise-tree"), "the list")
        await type_at_speed(pilot, "/", *"broadcast-loss", "enter", "enter")
        await wait_until(pilot, lambda: shows_page(pilot, "broadcast-loss"), "the page of broadcast-loss")
        screen = pilot.app.screen
        await type_at_speed(pilot, *"(3, 3)", "tab", "7", "r")
        await wait_until(pilot, lambda: screen.query_one("#result").has_class("-shown"), "the result")
        following = next_after(pilot.app.catalog, pilot.app.session.progress, "broadcast-loss")
        await type_at_speed(pilot, "e", *"rows add", "escape", "n")
        await wait_until(pilot, lambda: shows_page(pilot, following), f"the page of {following}")
        await type_at_speed(pilot, *"(2, 3)", "tab", "9", "enter")
        await wait_until(pilot, lambda: len(runner.calls) == 2, "the second run")
        await finish_runs(pilot)
    drive(app, script)
    exercises = saved(tmp_path)["exercises"]
    first = exercises["broadcast-loss"]
    assert [(a["prediction"], a["confidence"]) for a in first["attempts"]] == [("(3, 3)", 70)]
    assert first["note"] == "rows add"
    [(other, entry)] = [(k, v) for k, v in exercises.items() if k != "broadcast-loss"]
    assert runner.calls == [("broadcast-loss", "(3, 3)"), (other, "(2, 3)")]  # the next one, as typed
    assert [(a["prediction"], a["confidence"]) for a in entry["attempts"]] == [("(2, 3)", 90)]


def test_r_in_the_answer_box_of_a_number_runs_the_check(tmp_path):
    """No number has an r in it, so r in its box runs, as from the page; in a shape's box it types."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        await open_exercise(pilot, "topp-crossing")
        await type_answer(pilot, "1/4")
        await pilot.press("r")
        await wait_until(pilot, lambda: runner.calls, "the run")
        await finish_runs(pilot)
        pilot.app.open_exercise("broadcast-loss")
        await wait_until(pilot, lambda: shows_page(pilot, "broadcast-loss"), "the shape page")
        await type_answer(pilot, "torch.Size([3])")
        assert pilot.app.screen.query_one(PredictionInput).value == "torch.Size([3])"
    drive(app, script)
    assert runner.calls == [("topp-crossing", "1/4")]


# --- the confidence scale starts at the question's chance ----------------------------------------------

@pytest.mark.parametrize("exercise_id, keys, choice, confidence", [
    ("init-scale", ["b", "2", "r"], 1, 25),  # four choices: the scale starts at 25 %, which 2 gives
    ("init-scale", ["b", "tab", "2", "r"], 1, 25),
    ("init-scale", ["c", "3", "r"], 2, 30),
    ("cache-offset", ["n", "6", "r"], 1, 60),  # yes/no: from 50 %
    ("cache-offset", ["y", "4", "r"], 0, None),  # below a coin toss: 4 gives nothing
    ("audit", ["3", "tab", "1", "r"], 2, 10),  # eleven choices, digits pick: after Tab, 1 is 10 %
])
def test_a_confidence_key_gives_its_tens_from_the_question_s_chance(tmp_path, exercise_id, keys, choice,
                                                                     confidence):
    """Pressed at once: the pick, the confidence digit, run; the saved confidence is on the question's scale."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        await open_exercise(pilot, exercise_id)
        await pilot.press(*keys)
        await wait_until(pilot, lambda: runner.calls, "the run")
        await finish_runs(pilot)
    drive(app, script)
    attempt = _attempt(tmp_path, exercise_id)
    options = app.catalog.get(exercise_id).kind.options
    assert (attempt["prediction"], attempt.get("confidence")) == (options[choice][0], confidence)


@pytest.mark.parametrize("exercise_id, keys, confidence", [
    ("init-scale", ["a", "g", "r"], 25),  # 1 in 4
    ("cache-offset", ["y", "g", "r"], 50),  # g right after a pick is no typed word
    ("audit", ["3", "g", "r"], 9),  # 1 in 11: below every digit's ten
    ("broadcast-loss", [*"(3, 3)", "tab", "g", "enter"], 10),  # a typed answer: 10 %
])
def test_g_records_a_guess_at_the_question_s_chance_and_progress_says_guess(tmp_path, exercise_id, keys,
                                                                            confidence):
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, exercise_id)
        await pilot.press(*keys)
        await wait_until(pilot, lambda: runner.calls, "the run")
        await finish_runs(pilot)
        assert "guess]" in text_of(screen.query_one(ConfidencePicker))  # the chosen level reads as a guess
    drive(app, script)
    assert _attempt(tmp_path, exercise_id)["confidence"] == confidence
    exercise = app.catalog.get(exercise_id)
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    console.print(exercise_renderable(exercise, app.session.progress_of(exercise_id)))  # the progress screen's row
    shown = " ".join(console.export_text().split())
    assert f"{confidence} % guess" in shown


@pytest.mark.parametrize("confidence, shown, left", [(25, "[25 guess]", None), (75, "[75]", 70),
                                                     (40, "[40]", 30), (10, None, None)])
def test_a_confidence_saved_by_tutor_run_shows_on_the_page(tmp_path, confidence, shown, left):
    """``tutor run --confidence`` takes any whole percent from the chance: the reopened page shows it as the
    last run's beside an empty scale (a new attempt says how sure afresh); kept unrun as a draft, it shows
    in its place on the scale (one below the chance, hand-written, is none), and ← moves to the level below."""
    app, store = make_app(tmp_path)
    store.record_attempt(LEARNER, "init-scale", Attempt(  # just now: not yet due for review, so the page shows it
        time=now(), prediction="a", observed="b", correct=False, status="fail", device="cpu",
        engine_hash="test", confidence=confidence))

    async def script(pilot):
        screen = await open_exercise(pilot, "init-scale")
        picker = screen.query_one(ConfidencePicker)
        assert picker.value is None and f"last run {confidence} %" in text_of(picker)  # as it was recorded
    drive(app, script)
    store.save_draft(LEARNER, "init-scale", "a", confidence)
    app, _ = make_app(tmp_path)

    async def draft(pilot):
        screen = await open_exercise(pilot, "init-scale")
        picker = screen.query_one(ConfidencePicker)
        if shown is None:
            assert picker.value is None and "[" not in text_of(picker)
            return
        assert picker.value == confidence and shown in text_of(picker)
        picker.focus()
        await pilot.press("left")
        assert picker.value == (left if left is not None else confidence)  # the chance is the scale's floor
    drive(app, draft)
