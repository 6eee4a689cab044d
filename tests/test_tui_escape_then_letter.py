"""Esc typed right before a letter, as a real terminal delivers it, leaves the box and acts on the page.

A terminal sends Esc as the one byte ESC; when the next key follows at once, both arrive in one read
and Textual's terminal parser reads ESC + letter as alt+letter, whose character is the letter. The
keys here come from that parser, fed what a terminal sends, so the test sees what a learner's
terminal gives the app: "rows add", Esc, h typed at speed must leave the note as "rows add" and
show a hint, never type an "h" into the note.
"""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual._xterm_parser import XTermParser  # noqa: E402
from textual.widgets import TextArea  # noqa: E402

from test_tui import drive, make_app, open_note, saved, wait_until  # noqa: E402
from tutor.ui.screens.progress import ProgressScreen  # noqa: E402
from tutor.ui.widgets.hint_list import HintList  # noqa: E402


def terminal_keys(sent: str) -> list:
    """The key events Textual's terminal parser makes of ``sent`` arriving in one read."""
    parser = XTermParser()
    return [*parser.feed(sent), *parser.feed("")]


def test_the_parser_reads_esc_then_a_letter_as_alt_letter():
    """The premise: what the app must undo (a newer Textual that reads it as Esc, h needs no undoing)."""
    assert [(k.key, k.character) for k in terminal_keys("\x1bh")] == [("alt+h", "h")]


@pytest.mark.parametrize("sent, reached, what", [
    ("rows add\x1bh", lambda pilot, screen: screen.query_one(HintList).shown == 1, "the first hint"),
    ("rows add\x1bp", lambda pilot, screen: isinstance(pilot.app.screen, ProgressScreen), "the progress"),
])
def test_esc_and_a_letter_in_one_read_leave_the_note_as_typed_and_act(tmp_path, sent, reached, what):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_note(pilot, "broadcast-loss")
        await wait_until(pilot, lambda: isinstance(screen.focused, TextArea), "the note focused")
        for key in terminal_keys(sent):
            pilot.app.post_message(key)
        await wait_until(pilot, lambda: reached(pilot, screen), what)
        screen.flush_note()
        assert screen.query_one("#note", TextArea).text == "rows add"
    drive(app, script)
    assert saved(tmp_path)["exercises"]["broadcast-loss"]["note"] == "rows add"


def test_alt_letter_is_split_keeping_when_it_was_typed():
    """The split keys carry the time the terminal's key was read (a page drops keys typed before it showed)."""
    from tutor.ui.key_order import as_typed
    (alt,) = terminal_keys("\x1bN")
    escape, letter = as_typed(alt)
    assert (escape.key, letter.key, letter.character) == ("escape", "N", "N")
    assert escape.time == letter.time == alt.time
    (plain,) = terminal_keys("n")
    assert as_typed(plain) == [plain]
