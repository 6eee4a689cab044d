"""Keys typed in one burst on the pages a fast typist crosses: the explain-back note on a yes/no page,
Enter after a confidence key on a yes/no page, a search then ↓ and Enter on the list.

Every key of a burst is queued before the first is handled (as ``tmux send-keys`` delivers it); the
loaded runs make every change of focus block the event loop for a moment (a busy machine). The saved
progress file is asserted on.
"""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

import test_tui_keys  # noqa: E402
from test_tui import FakeRunner, drive, finish_runs, make_app, open_exercise, saved, wait_until  # noqa: E402
from test_tui_keys import burst  # noqa: E402
from textual.widgets import TextArea  # noqa: E402

load = test_tui_keys.load  # idle, and loaded: every change of focus blocks the event loop for a moment


async def _run_once(pilot, runner, keys) -> None:
    """Run the page's check once (a yes/no page: its key picks), so the note shows."""
    screen = pilot.app.screen
    burst(pilot.app, *keys, "r")
    await wait_until(pilot, lambda: runner.calls, "the first run")
    await finish_runs(pilot)
    await wait_until(pilot, lambda: screen.query_one("#result").has_class("-shown"), "the result")


def test_a_note_typed_right_after_e_on_a_yes_no_page_is_saved(tmp_path, load):
    """After a result on a yes/no page, e and the note at once: every key is in the note, none picks or acts."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "index-assign")
        await _run_once(pilot, runner, ["y"])
        burst(pilot.app, "e", *"zzzz wwww phrnb")
        await wait_until(pilot, lambda: screen.query_one("#note", TextArea).text == "zzzz wwww phrnb",
                         "the note as typed")
        burst(pilot.app, "escape")
        await wait_until(pilot, lambda: not isinstance(screen.focused, TextArea), "the note left")
        screen.flush_note()
        assert pilot.app.screen is screen  # no key of the note acted on the page (p, n, b…)
        assert screen.query_one("#hints").shown == 0
    drive(app, script)
    entry = saved(tmp_path)["exercises"]["index-assign"]
    assert entry["note"] == "zzzz wwww phrnb"
    assert len(runner.calls) == 1


def test_a_note_then_esc_and_h_on_a_yes_no_page_shows_a_hint_and_a_word_with_e_in_it_picks_nothing(tmp_path,
                                                                                                     load):
    """e, the note, Esc, h at once: the note as typed, then a hint (the e left no word for h to follow);
    a word whose e follows another letter ("ye") stays a word: nothing is picked, the note is not opened."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "index-assign")
        await _run_once(pilot, runner, ["n"])
        burst(pilot.app, "e", *"rows", "escape", "h")
        await wait_until(pilot, lambda: screen.query_one("#hints").shown == 1, "the first hint")
        assert screen.query_one("#note", TextArea).text == "rows"
        burst(pilot.app, *"yes")
        await wait_until(pilot, lambda: pilot.app._in_flight is None and not pilot.app._held, "the keys read")
        await pilot.pause()
        assert not isinstance(screen.focused, TextArea) and screen.query_one("#note", TextArea).text == "rows"
        assert screen.query_one("#prediction").value == "no"  # the word's y was undone
        screen.flush_note()
    drive(app, script)
    assert saved(tmp_path)["exercises"]["index-assign"]["note"] == "rows"


def test_enter_right_after_a_confidence_key_on_a_yes_no_page_runs_the_check(tmp_path, load):
    """y 7 Enter at once on a yes/no page: yes, 70 % sure, run (as Tab 8 Enter runs on a shape page)."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        await open_exercise(pilot, "index-assign")
        burst(pilot.app, "y", "7", "enter")
        await wait_until(pilot, lambda: runner.calls, "the run")
        await finish_runs(pilot)
    drive(app, script)
    attempt = saved(tmp_path)["exercises"]["index-assign"]["attempts"][-1]
    assert (attempt["prediction"], attempt.get("confidence")) == ("yes", 70)


@pytest.mark.parametrize("to_list", [["down", "enter"], ["enter", "enter"]])
def test_a_search_then_down_and_enter_opens_the_match_and_the_keys_after_it_reach_its_page(tmp_path, load,
                                                                                            to_list):
    """/ index-assign ↓ Enter y 8 r in one burst (and / index-assign Enter Enter …): the match opens, and
    the answer, confidence and run typed after it reach its page."""
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        await wait_until(pilot, lambda: pilot.app.screen.query("#exercise-tree"), "the list")
        burst(pilot.app, "/", *"index-assign", *to_list, "y", "8", "r")
        await wait_until(pilot, lambda: runner.calls, "the run")
        await finish_runs(pilot)
    drive(app, script)
    assert runner.calls == [("index-assign", "yes")]
    attempt = saved(tmp_path)["exercises"]["index-assign"]["attempts"][-1]
    assert (attempt["prediction"], attempt.get("confidence")) == ("yes", 80)
