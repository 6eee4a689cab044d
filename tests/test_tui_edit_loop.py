"""The edit loop as a learner meets it: editors that fail, Break it's prediction first, keys, the capstone.

Driven by Pilot over the reading runner of ``test_edit_tui`` (its ``yours``
side observes from the text it is given), with real progress files in
``tmp_path``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.drivers.headless_driver import HeadlessDriver  # noqa: E402
from textual.widgets import Input  # noqa: E402

from test_edit_tui import (EXERCISE, ReadingRunner, drive, make_app, open_edit, result_text,  # noqa: E402
                           saved, settle, status_text)
from tutor.catalog import load_catalog  # noqa: E402
from tutor.ui.screens.fix import EditScreen  # noqa: E402
from tutor.ui.widgets.code_editor import CodeEditor  # noqa: E402


@pytest.fixture()
def suspending_driver(monkeypatch):
    """Make the headless driver one that can hand the terminal over, and count what it does.

    A real terminal's driver is suspended for the learner's editor and must
    be resumed afterwards, whatever the editor did; the counts show it.
    """
    calls = {"suspend": 0, "resume": 0}
    monkeypatch.setattr(HeadlessDriver, "can_suspend", property(lambda self: True))
    monkeypatch.setattr(HeadlessDriver, "suspend_application_mode",
                        lambda self: calls.__setitem__("suspend", calls["suspend"] + 1), raising=False)
    monkeypatch.setattr(HeadlessDriver, "resume_application_mode",
                        lambda self: calls.__setitem__("resume", calls["resume"] + 1), raising=False)
    return calls


def _toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.mark.parametrize("editor, said", [
    ("/nonexistent", "'/nonexistent' was not found"),
    ("false", "exited with status 1"),
    ("sh -c 'kill -TERM $$'", "stopped by SIGTERM"),
])
def test_an_editor_that_fails_gives_the_terminal_back_and_the_built_in_editor(
        tmp_path, monkeypatch, suspending_driver, editor, said):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor)
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_edit(pilot)
        await pilot.pause()
        assert suspending_driver == {"suspend": 1, "resume": 1}  # the terminal came back
        assert pilot.app.screen is screen and pilot.app.focused is screen.query_one(CodeEditor)
        [toast] = [t for t in _toasts(pilot.app) if "$EDITOR" in t]
        assert said in toast and "built-in editor is open" in toast and "export EDITOR=" in toast
        assert said in status_text(screen)
        editor_widget = screen.query_one(CodeEditor)
        editor_widget.move_cursor((0, 0))
        await pilot.press(*"# mine", "enter")  # interactive: keys reach the built-in editor
        assert editor_widget.text.startswith("# mine\n")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(pilot.app.screen, EditScreen)  # and Esc leaves
    drive(app, script)
