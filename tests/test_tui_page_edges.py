"""The exercise and edit pages at their edges: the code editor's keys as the help states them, the view
kept across an external editor, a focus mark that is a line and not a solid block under NO_COLOR, and the
confidence line in view at 120×40.

Driven through ``App.run_test()`` with the fake runners of ``test_tui`` and ``test_edit_tui``; each test
waits for the state it asserts on, never for a fixed time.
"""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from test_edit_tui import drive as drive_edit, editor_script, make_app as make_edit_app, open_edit  # noqa: E402
from test_tui_traps import until  # noqa: E402
from tutor.ui.widgets.code_editor import CodeEditor  # noqa: E402


# --- the built-in code editor: Home and Ctrl+A do what the help says -------------------------------------

def test_home_goes_to_column_one_and_ctrl_a_selects_the_file_as_the_help_says(tmp_path, no_editor):
    from tutor.ui.app import TutorApp
    from tutor.ui.screens.help import keys_markdown
    app, _ = make_edit_app(tmp_path)

    async def script(pilot):
        screen = await open_edit(pilot)
        editor = screen.query_one(CodeEditor)
        row = next(n for n, line in enumerate(editor.text.splitlines()) if line.startswith("    ") and line.strip())
        editor.move_cursor((row, 8))
        await pilot.press("home")
        assert editor.cursor_location == (row, 0)  # column 1, not the first character after the indent
        await pilot.press("end", "shift+home")
        assert editor.selected_text == editor.document.get_line(row)
        await pilot.press("ctrl+a")
        assert editor.selected_text == editor.text
    drive_edit(app, script)
    text = keys_markdown(TutorApp)
    own = text[text.index("### The built-in code editor"):].split("\n### ")[0]
    assert "| Home | the start of the line, column 1" in own and "| Ctrl+A | select the whole file |" in own
    text_area = text[text.index("### Editing in the built-in code editor"):].split("\n### ")[0]
    assert "Ctrl+A" not in text_area and "| Home" not in text_area  # said once, as the editor does it


# --- after the learner's own editor, the built-in one shows the same place ----------------------------------

def test_after_an_external_editor_the_cursor_and_view_stay_where_they_were(tmp_path, monkeypatch):
    """An editor that adds a line at the end of the file: the built-in editor takes its text back with the
    cursor on the line it was on and the view where it was, not at line 1."""
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor_script(tmp_path / "..", 'open(path, "a").write("# looked again\\n")\n'))
    app, _ = make_edit_app(tmp_path)

    async def script(pilot):
        screen = await open_edit(pilot)  # the editor opens at once, at the fault's line
        editor = screen.query_one(CodeEditor)
        await until(pilot, lambda: screen.outcome is not None and not screen.running, "the first run")
        assert editor.text.endswith("# looked again\n")
        assert editor.cursor_location[0] == screen.edit_task.line - 1 and editor.scroll_offset.y > 0
        row = editor.document.line_count - 8
        editor.move_cursor((row, 4), center=True)
        await pilot.pause()
        view = editor.scroll_offset
        assert view.y > 0
        await pilot.press("ctrl+o")
        await until(pilot, lambda: editor.text.count("# looked again") == 2, "the second edit taken back")
        await until(pilot, lambda: not screen.running, "the second run")
        await pilot.pause()
        assert editor.cursor_location == (row, 4) and editor.scroll_offset == view
    drive_edit(app, script)


# --- under NO_COLOR the focused page is marked by a thin line, not a solid block column ------------------

def test_under_no_color_the_focused_exercise_page_has_a_thin_line_at_its_left_not_a_block(tmp_path, monkeypatch):
    from textual._border import BORDER_CHARS
    from test_tui import drive, make_app, open_exercise
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        assert pilot.app.no_color
        screen = await open_exercise(pilot, "broadcast-loss")
        body = screen.query_one("#exercise-body")
        await until(pilot, lambda: pilot.app.focused is body, "the page focused")
        kind = body.styles.border_left[0]
        seen["mark"] = BORDER_CHARS[kind][1][0] if kind else ""
        lines = [str(line) for line in pilot.app.export_screenshot().splitlines()]
        seen["blocks"] = sum(line.count("█") for line in lines)
    drive(app, script)
    assert seen["blocks"] == 0, seen
    assert seen["mark"] == "│"  # a shape that says "this page has the focus", as light as a line


# --- at 120×40 a pick brings the confidence line into view ------------------------------------------------

@pytest.mark.parametrize("exercise_id, key", [("audit", "3"), ("head-split", "a"), ("floor-every-cell", "b"),
                                              ("lr-10x", "2")])
def test_at_120_by_40_a_pick_on_a_long_choice_page_brings_the_confidence_line_into_view(tmp_path, exercise_id, key):
    """The next key may say how sure the learner is: the line it sets is on screen, not below the fold."""
    from test_tui import drive, make_app, open_exercise
    from tutor.ui.widgets.confidence import ConfidencePicker
    from tutor.ui.widgets.prediction import PredictionInput
    app, _ = make_app(tmp_path)

    def in_view(screen) -> bool:
        line, page = screen.query_one(ConfidencePicker).region, screen.query_one("#exercise-body").content_region
        return line.height > 0 and page.y <= line.y and line.bottom <= page.bottom

    async def script(pilot):
        screen = await open_exercise(pilot, exercise_id)
        await pilot.pause()
        assert not in_view(screen)  # a long page: the prompt comes first, the confidence further down
        await pilot.press(key)
        await until(pilot, lambda: screen.query_one(PredictionInput).chosen is not None, "the pick")
        await until(pilot, lambda: in_view(screen), "the confidence line in view")
    drive(app, script, size=(120, 40))


# --- the verdict's line stays while the engine's instruments run after it ------------------------------------

def test_the_instruments_progress_follows_the_verdict_and_never_replaces_it(tmp_path, no_editor):
    """A side that reports 0 % and is then quiet (the instruments run long): the status line goes on saying
    the verdict, with every side's share, never a bare "Running… yours: 0%" under the verdict's panel."""
    import threading

    from test_edit_tui import ReadingRunner, settle, status_text
    from tutor.sandbox.protocol import Progress
    release = threading.Event()

    class SlowInstruments(ReadingRunner):
        def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None):
            for side in sides:
                if on_progress is not None:
                    on_progress(Progress(fraction=0.0, message="starting", side=side.name))
            if exercise.check.startswith("edit_mode."):  # the engine's instruments, after the verdict
                release.wait(30)
            return super().run(exercise, prediction, on_progress, seed, sides)

    app, _ = make_edit_app(tmp_path, SlowInstruments())

    async def script(pilot):
        screen = await open_edit(pilot)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: screen.outcome is not None, "the verdict")
        await until(pilot, lambda: "0%" in status_text(screen), "the instruments' progress")
        line = status_text(screen)
        release.set()
        assert line.startswith("not fixed · ") and "instruments are running" in line, line
        assert "clean 0%" in line and "Running…" not in line, line
        await settle(pilot)
        assert status_text(screen).startswith("not fixed · the instruments ran"), status_text(screen)
    try:
        drive_edit(app, script)
    finally:
        release.set()
