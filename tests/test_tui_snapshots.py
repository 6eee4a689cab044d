"""Snapshot tests of the TUI's screens (pytest-textual-snapshot), at 80×24 and 120×40.

Each screen is drawn over a fixed progress file and a fake runner (the
reading runner of ``test_edit_tui``: no torch, no timing), so a snapshot
changes only when the layout or the words do. A change shows in review as
a changed SVG under ``tests/__snapshots__/``; after looking at it, accept it
with ``pytest tests/test_tui_snapshots.py --snapshot-update`` and commit the
new SVGs with the change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

from test_edit_tui import ReadingRunner  # noqa: E402
from tutor.model.attempts import Attempt  # noqa: E402
from tutor.store.catalog_cache import load_catalog  # noqa: E402
from tutor.store.progress import ProgressStore  # noqa: E402
from tutor.ui.app import build_app  # noqa: E402

SIZES = [(80, 24), (120, 40)]
FOLDER = "progress"  # relative to the test's own working folder, so every path on screen is the same


def _attempt(**fields) -> Attempt:
    base = dict(time="2026-01-05T09:30:00Z", device="cpu", engine_hash="snapshot", correct=False, status="fail")
    return Attempt(**{**base, **fields})


def _app(tmp_path, monkeypatch):
    """The app in ``tmp_path`` (made the working folder) over a small, fixed history."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    store = ProgressStore(tmp_path / FOLDER)
    for ex_id, attempt in [
        ("shape-batch", _attempt(prediction="(8, 10)", observed="(8, 10)", correct=True, status="pass",
                                 confidence=80)),
        ("head-split", _attempt(prediction="c", observed="b", confidence=60)),
        ("head-split", _attempt(prediction="", observed="a", correct=True, status="ok", mode="fix", diff="-x\n+y",
                                verdict="fixed", time="2026-01-06T10:00:00Z")),
    ]:
        store.record_attempt("ada", ex_id, attempt)
    return build_app(load_catalog(), ProgressStore(Path(FOLDER)), "ada", ReadingRunner())


async def _settle(pilot) -> None:
    """Every run finished, and cursors steady (a blinking cursor would draw two snapshots)."""
    from textual.widgets import Input, TextArea
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    for widget in pilot.app.screen.query("Input, TextArea"):
        if isinstance(widget, (Input, TextArea)):
            widget.cursor_blink = False
            if isinstance(widget, TextArea):
                widget.notify_style_update()  # lines drawn while the cursor blinked off are drawn again
            widget.refresh()
    await pilot.pause()


def _opening(exercise_id: str, *keys: str):
    """Before the snapshot: open ``exercise_id`` from the list, press ``keys``, let every run finish."""
    async def run_before(pilot) -> None:
        await _settle(pilot)
        pilot.app.open_exercise(exercise_id)
        await pilot.pause()
        pilot.app.screen.query_one("#exercise-body").focus()
        for key in keys:
            await pilot.press(key)
            await pilot.pause(0.4 if len(key) == 1 else 0)  # a single key on a choice page acts after a pause
        await _settle(pilot)
    return run_before


def _pressing(*keys: str):
    async def run_before(pilot) -> None:
        await _settle(pilot)
        await pilot.press(*keys)
        await _settle(pilot)
    return run_before


SCREENS = {
    "home": _pressing(),
    "exercise": _opening("broadcast-loss"),
    "result": _opening("head-split", "b", "r"),
    "fix": _opening("head-split", "f"),
    "break": _opening("head-split", "B"),
    "hunt": _opening("audit", "f"),
    "progress": _pressing("p"),
    "help": _pressing("question_mark"),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen_snapshot(snap_compare, tmp_path, monkeypatch, screen, size):
    assert snap_compare(_app(tmp_path, monkeypatch), terminal_size=size, run_before=SCREENS[screen])


#: Screens drawn under NO_COLOR, where focus must show without colour: the Break page, its prediction
#: box focused (predict first), and the exercise page after Tab put the focus in the answer box.
NO_COLOR_SCREENS = {
    "break": _opening("head-split", "B"),
    "exercise-answer": _opening("broadcast-loss", "tab"),
}


@pytest.mark.parametrize("screen", list(NO_COLOR_SCREENS))
def test_no_color_snapshot_shows_the_focused_widget(snap_compare, tmp_path, monkeypatch, screen):
    monkeypatch.setenv("NO_COLOR", "1")
    app = _app(tmp_path, monkeypatch)
    assert app.no_color
    assert snap_compare(app, terminal_size=(80, 24), run_before=NO_COLOR_SCREENS[screen])


def test_under_no_color_focus_is_a_shape_not_only_a_colour(tmp_path, monkeypatch):
    """The focused box you type into has a double border and a focused page a bar at its left, under
    NO_COLOR; nothing else has either (they were told apart by colour alone)."""
    import asyncio

    from textual.widgets import Input, TextArea
    monkeypatch.setenv("NO_COLOR", "1")
    app = _app(tmp_path, monkeypatch)
    seen = {}

    async def main():
        async with app.run_test(size=(80, 24)) as pilot:
            await _opening("head-split", "B")(pilot)
            screen = pilot.app.screen
            box, code = screen.query_one("#edit-prediction", Input), screen.query_one(TextArea)
            for _ in range(100):  # wait for the Break page's focus to land in the prediction box
                if pilot.app.focused is box:
                    break
                await pilot.pause(0.02)
            seen["box"], seen["code"] = box.styles.border_top[0], code.styles.border_top[0]
            box.value = "b"
            code.focus()
            await pilot.pause()
            seen["box after"], seen["code after"] = box.styles.border_top[0], code.styles.border_top[0]
    asyncio.run(main())
    assert seen == {"box": "double", "code": seen["code"], "box after": seen["box after"], "code after": "double"}
    assert seen["code"] != "double" and seen["box after"] != "double", seen
