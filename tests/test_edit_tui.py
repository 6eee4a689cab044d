"""Edit mode in the TUI: Fix it, Break it, Find and fix, driven by Pilot.

The runner here is a fake that *reads the learner's file*: its ``yours``
side observes what the clean side observes exactly when the file it was
given behaves like the clean file — which, without torch, means it holds the
clean text of the lines the fault touches. The verdict itself is the real
one (:func:`tutor.model.verdict.judge` over :func:`tutor.sandbox.runner.grade`), and the
working copy and the progress file are real files in ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import textwrap

import pytest

pytest.importorskip("textual")

from textual.widgets import Input, Static  # noqa: E402

from test_tui import shows_page, wait_until  # noqa: E402
from tutor.store.catalog_cache import load_catalog  # noqa: E402
from tutor.app.tasks import fix_task  # noqa: E402
from tutor.store.progress import ProgressStore  # noqa: E402
from tutor.sandbox.protocol import Answer, SideResult  # noqa: E402
from tutor.sandbox.runner import grade  # noqa: E402
from tutor.ui.app import build_app  # noqa: E402
from tutor.ui.screens.copy_choice import CopyChoiceScreen  # noqa: E402
from tutor.ui.screens.fix import EditScreen  # noqa: E402
from tutor.ui.widgets.code_editor import CodeEditor  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

LEARNER = "ada"
EXERCISE = "head-split"  # a choice exercise: clean observes a, the fault b


class ReadingRunner:
    """A runner whose sides observe from the text they are given (see the module docstring)."""

    def __init__(self) -> None:
        self.catalog = load_catalog()
        self.requests: list[tuple[str, tuple[str, ...]]] = []

    def warm_up(self) -> dict:
        return {"torch": "fake", "cuda": False}

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None):
        self.requests.append((exercise.check, tuple(s.name for s in sides)))
        answers = {}
        for side in sides:
            answers[side.name] = self._side(exercise, side)
        return grade(exercise, Answer(job=1, torch="fake", device="cpu", duration_s=0.01, sides=answers),
                     prediction, seed)

    def _side(self, exercise, side) -> SideResult:
        fault = self.catalog.fault_of(self.catalog.get(exercise.id))
        if side.fault is not None:
            return self._measured(exercise, "b", "faulted")
        if not side.files:
            return self._measured(exercise, "a", "clean")
        text = side.files[0][1]
        try:
            compile(text, side.files[0][0], "exec")
        except SyntaxError as exc:
            return SideResult(status="error", error=f"SyntaxError: {exc.msg} (line {exc.lineno})")
        return self._measured(exercise, "a" if fault.before in text else "b", side.name)

    @staticmethod
    def _measured(exercise, value, name) -> SideResult:
        if exercise.check.startswith("edit_mode."):
            value = "none" if value == "a" else "causality"
            rows = [["CAUSALITY", "holds" if value == "none" else "fails", "future-token intervention"]]
            return SideResult(status="ok", observed=value,
                              evidence=[{"type": "table", "title": "Instruments on this engine",
                                         "columns": ["instrument", "status", "verdict"], "rows": rows}])
        return SideResult(status="ok", observed=value, evidence=[
            {"type": "table", "title": "Head split", "columns": ["quantity", "value"],
             "rows": [["first head", "positions kept" if value == "a" else "positions mixed"]]}])

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


def make_app(tmp_path, runner=None):
    store = ProgressStore(tmp_path)
    return build_app(load_catalog(), store, LEARNER, runner or ReadingRunner()), store


def drive(app, script, size=(100, 40)):
    async def main():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(pilot)
            await pilot.pause()
    asyncio.run(main())
    assert getattr(app, "_exception", None) is None


async def open_edit(pilot, exercise_id: str = EXERCISE, key: str = "f") -> EditScreen:
    pilot.app.open_exercise(exercise_id)
    await wait_until(pilot, lambda: shows_page(pilot, exercise_id), f"the page of {exercise_id}")
    pilot.app.screen.query_one("#exercise-body").focus()
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, EditScreen), "the editor")
    screen = pilot.app.screen
    assert isinstance(screen, EditScreen), type(screen)
    return screen


async def settle(pilot) -> None:
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def result_text(screen) -> str:
    from rich.console import Console
    console = Console(width=300, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(screen.query_one("#edit-result-text", Static).content)
    return console.export_text()


def status_text(screen) -> str:
    return str(screen.query_one("#edit-status", Static).content)


def saved(tmp_path) -> dict:
    path = tmp_path / f"{LEARNER}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def working_copy(tmp_path, exercise_id=EXERCISE, key="fix", name="model.py"):
    return tmp_path / "work" / LEARNER / exercise_id / key / name


def editor_script(tmp_path, body: str):
    """An executable editor: ``script FILE`` runs ``body`` (Python) with ``path`` bound to FILE."""
    script = tmp_path / "editor.py"
    script.write_text(f"#!{sys.executable}\nimport sys\npath = sys.argv[1]\n" + textwrap.dedent(body))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


# --- tests ---------------------------------------------------------------------

def test_fix_with_an_editor_that_applies_the_reverse_edit_is_fixed_on_screen_and_in_the_toml(tmp_path, monkeypatch):
    fault = load_catalog().faults["head-split-reshape"]
    editor = editor_script(tmp_path / "..", f"""
        text = open(path).read()
        open(path, "w").write(text.replace({fault.after!r}, {fault.before!r}, 1))
    """)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor)
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_edit(pilot)
        await settle(pilot)
        assert screen.outcome is not None and screen.outcome.verdict.status == "fixed"
        shown = result_text(screen)
        assert "✓ fixed" in shown and "clean" in shown and "faulted" in shown and "yours" in shown
        assert "your diff (against the clean file)" in shown and "(no change)" in shown
        assert "CAUSALITY" in shown  # the instruments ran after the verdict
        assert screen.save_to_verdict_s is not None and screen.save_to_verdict_s >= 0
    drive(app, script)
    [attempt] = saved(tmp_path)["exercises"][EXERCISE]["attempts"]
    assert (attempt["mode"], attempt["verdict"], attempt["correct"], attempt["diff"]) == ("fix", "fixed", True, "")
    task = fix_task(load_catalog(), load_catalog().get(EXERCISE))
    assert working_copy(tmp_path).read_text() == task.clean  # the editor's save is the working copy


def test_without_an_editor_the_built_in_editor_opens_and_ctrl_s_runs_it(tmp_path, no_editor):
    app, _ = make_app(tmp_path)
    fault = load_catalog().faults["head-split-reshape"]

    async def script(pilot):
        screen = await open_edit(pilot)
        editor = screen.query_one(CodeEditor)
        assert pilot.app.focused is editor and editor.show_line_numbers
        assert editor.highlighted  # textual[syntax] is a dependency: Python is highlighted
        assert fault.after in editor.text and fault.before not in editor.text  # the fault is applied
        assert "built-in editor" in status_text(screen)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.outcome.verdict.status == "not fixed"
        assert "✗ not fixed" in result_text(screen) and "first difference" in result_text(screen)
        editor.load_text(editor.text.replace(fault.after, fault.before, 1))
        editor.focus()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.outcome.verdict.status == "fixed" and "✓ fixed" in result_text(screen)
    drive(app, script)
    attempts = saved(tmp_path)["exercises"][EXERCISE]["attempts"]
    assert [a["verdict"] for a in attempts] == ["not fixed", "fixed"]
    assert "-    return x.reshape(B, n_head, T, C // n_head)" not in attempts[0]["diff"]
    assert "+    return x.reshape(B, n_head, T, C // n_head)" in attempts[0]["diff"]  # against clean


def test_an_edit_with_a_syntax_error_names_the_line_and_is_not_run(tmp_path, no_editor):
    runner = ReadingRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_edit(pilot)
        editor = screen.query_one(CodeEditor)
        editor.load_text("import torch\n\ndef split_heads(x:\n    pass\n")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.outcome.verdict.status == "syntax error"
        shown = result_text(screen)
        assert "does not compile" in shown and "line 3" in shown
    drive(app, script)
    assert runner.requests == []  # nothing ran
    assert EXERCISE not in saved(tmp_path).get("exercises", {})  # nor was recorded


def test_esc_leaves_the_editor_and_keeps_the_text_then_reopening_offers_the_copy(tmp_path, no_editor):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_edit(pilot)
        editor = screen.query_one(CodeEditor)
        editor.move_cursor((0, 0))
        await pilot.press(*"# my note", "enter")
        typed = editor.text
        assert typed.startswith("# my note\n")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(pilot.app.screen, EditScreen), "the exercise page again")
        await settle(pilot)  # the working copy is saved by a worker: "f" before it is done finds none yet
        assert working_copy(tmp_path).read_text() == typed  # kept on disk, at once
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, CopyChoiceScreen), "the copy dialog")
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, EditScreen), "the editor on the copy")
        assert pilot.app.screen.query_one(CodeEditor).text == typed
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(pilot.app.screen, EditScreen), "the exercise page again")
        await settle(pilot)  # the working copy is saved by a worker: "f" before it is done finds none yet
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, CopyChoiceScreen), "the copy dialog again")
        await pilot.press("n")  # a fresh copy: the old one is kept as .previous
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, EditScreen), "the editor on a fresh copy")
        assert not pilot.app.screen.query_one(CodeEditor).text.startswith("# my note")
        assert working_copy(tmp_path).with_name("model.py.previous").read_text() == typed
    drive(app, script)


def test_an_editor_that_fails_to_start_falls_back_to_the_built_in_one(tmp_path, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(tmp_path / "no-such-editor"))
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_edit(pilot)
        await pilot.pause()
        assert pilot.app.focused is screen.query_one(CodeEditor)
        assert screen.outcome is None  # nothing ran
    drive(app, script)


def test_break_it_starts_from_the_clean_file_and_grades_the_prediction(tmp_path, no_editor):
    app, _ = make_app(tmp_path)
    fault = load_catalog().faults["head-split-reshape"]

    async def script(pilot):
        screen = await open_edit(pilot, key="B")  # b picks choice b here; B is Break it
        editor = screen.query_one(CodeEditor)
        assert fault.before in editor.text  # clean
        editor.load_text(editor.text.replace(fault.before, fault.after, 1))
        box = screen.query_one("#edit-prediction", Input)
        box.value = "b"
        await pilot.press("ctrl+s")
        await settle(pilot)
        verdict = screen.outcome.verdict
        assert (verdict.status, verdict.prediction_correct) == ("changed", True)
        assert "your prediction matched" in result_text(screen)
    drive(app, script)
    [attempt] = saved(tmp_path)["exercises"][EXERCISE]["attempts"]
    assert (attempt["mode"], attempt["verdict"], attempt["prediction"], attempt["correct"]) == \
        ("break", "changed", "b", True)
    assert working_copy(tmp_path, key="break").exists()


def test_the_capstone_f_is_find_and_fix_and_keeps_the_fault_hidden(tmp_path, no_editor):
    runner = ReadingRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        pilot.app.open_exercise("audit")
        await pilot.pause()
        pilot.app.screen.query_one("#exercise-body").focus()
        await pilot.press("f")
        await pilot.pause()
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, EditScreen) and screen.edit_task.mode == "hunt" and screen.edit_task.hidden
        head = str(screen.query_one("#edit-head", Static).content)
        assert "Find and fix" in head and screen.edit_task.fault.id not in head
    drive(app, script)


def test_a_break_that_does_not_compile_does_not_call_a_valid_answer_free_text(tmp_path):
    from tutor.app.session import Session
    from tutor.render import render_edit
    from rich.console import Console
    catalog = load_catalog()
    runner = ReadingRunner()
    session = Session(catalog, runner, ProgressStore(tmp_path), LEARNER)
    exercise = catalog.get(EXERCISE)

    def shown(prediction):
        outcome = session.break_it(exercise, "def split_heads(x:\n    pass\n", prediction)
        assert outcome.verdict.status == "syntax error"
        console = Console(width=300, record=True, color_system=None, file=open(os.devnull, "w"))
        for part in render_edit(exercise, outcome):
            console.print(part)
        return console.export_text()
    valid = shown("b")  # one of head-split's choices: an answer of the exercise's kind
    assert "free text" not in valid and "does not compile" in valid and "not graded" in valid
    assert "(free text, not graded)" in shown("the heads get mixed up")
    assert runner.requests == []  # nothing ran
