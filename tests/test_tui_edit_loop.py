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
from test_tui import shows_page, wait_until  # noqa: E402
from tutor.store.catalog_cache import load_catalog  # noqa: E402
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


# --- Break it: predict first, then edit, then run --------------------------------------------

FAULT = load_catalog().faults["head-split-reshape"]


def test_break_it_with_an_editor_asks_for_the_prediction_before_the_editor_opens(tmp_path, monkeypatch):
    from test_edit_tui import editor_script
    opened = tmp_path / "opened"
    editor = editor_script(tmp_path / "..", f"""
        open({str(opened)!r}, "w").write("yes")
        text = open(path).read()
        open(path, "w").write(text.replace({FAULT.before!r}, {FAULT.after!r}, 1))
    """)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor)
    runner = ReadingRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_edit(pilot, key="B")
        await settle(pilot)
        box = screen.query_one("#edit-prediction", Input)
        assert pilot.app.focused is box and box.display
        assert not opened.exists() and runner.requests == []  # the editor waits for the prediction
        assert "Predict first" in status_text(screen)
        await pilot.press("ctrl+o")  # no way round it
        await settle(pilot)
        assert not opened.exists()
        await pilot.press("b", "enter")
        await settle(pilot)
        assert opened.exists()  # then the editor, and its change runs
        assert screen.outcome is not None and screen.outcome.verdict.prediction_correct is True
    drive(app, script)
    [attempt] = saved(tmp_path)["exercises"][EXERCISE]["attempts"]
    assert (attempt["mode"], attempt["prediction"], attempt["correct"]) == ("break", "b", True)


def test_break_it_runs_nothing_unpredicted_or_unchanged(tmp_path, no_editor):
    runner = ReadingRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_edit(pilot, key="B")
        box = screen.query_one("#edit-prediction", Input)
        assert pilot.app.focused is box
        await pilot.press("b", "enter")  # predicted: on to the file
        await pilot.pause()
        editor = screen.query_one(CodeEditor)
        assert pilot.app.focused is editor
        await pilot.press("ctrl+s")  # the clean file, unchanged
        await settle(pilot)
        assert "You have not changed anything yet" in status_text(screen) and screen.outcome is None
        box.value = ""
        editor.load_text(editor.text.replace(FAULT.before, FAULT.after, 1))
        await pilot.press("ctrl+s")  # changed, but no prediction
        await settle(pilot)
        assert "Predict first" in status_text(screen) and screen.outcome is None
        assert pilot.app.focused is box
    drive(app, script)
    assert runner.requests == []
    assert EXERCISE not in saved(tmp_path).get("exercises", {})


def test_a_session_refuses_a_break_without_a_prediction_or_a_change(tmp_path):
    from tutor.app.session import Session
    from tutor.model.patch import EditError
    from tutor.store.progress import ProgressStore
    catalog = load_catalog()
    session = Session(catalog, ReadingRunner(), ProgressStore(tmp_path), "ada")
    task = session.edit_task(catalog.get(EXERCISE), "break")
    changed = task.start.replace(FAULT.before, FAULT.after, 1)
    with pytest.raises(EditError, match="predict first"):
        session.start_edit(task, changed, "  ")
    with pytest.raises(EditError, match="not changed anything yet"):
        session.start_edit(task, task.start, "b")
    assert session.start_edit(task, changed, "it mixes positions").task is task  # free text is a prediction


# --- the capstone: a hunt never spoils the mystery still to predict ---------------------------

def test_find_and_fix_before_any_prediction_counts_as_revealing_its_mystery(tmp_path, no_editor):
    app, _ = make_app(tmp_path)
    audit = load_catalog().get("audit")
    seen = {}

    async def script(pilot):
        session = pilot.app.session
        assert session.seed_for(audit) == 0  # a new learner's first prediction meets mystery 0
        screen = await open_edit(pilot, "audit")
        seen["hunted"] = screen.edit_task.seed
        assert seen["hunted"] == 0  # (mystery 0 hides unshifted-targets)
        await pilot.press("escape")
        await pilot.pause()
        seen["next"] = session.start(audit, "alignment").seed  # what the page's Run would meet
        screen = await open_edit(pilot, "audit")  # the hunt itself stays on its mystery
        seen["again"] = screen.edit_task.seed
    drive(app, script)
    assert seen["next"] != seen["hunted"] and seen["next"] == 1
    assert seen["again"] == seen["hunted"]


def test_predictions_after_a_hunt_never_meet_a_hunted_mystery(tmp_path):
    from tutor.app.session import Session
    from tutor.model.attempts import Attempt
    from tutor.store.progress import ProgressStore
    catalog = load_catalog()
    audit = catalog.get("audit")
    store = ProgressStore(tmp_path)
    session = Session(catalog, ReadingRunner(), store, "ada")
    session.load()
    task = session.edit_task(audit, "fix")
    session.save_working_copy(task, task.start)  # the hunt screen keeps a copy from the moment it opens
    met = []
    for _ in range(3):
        seed = session.seed_for(audit)
        met.append(seed)
        attempt = Attempt(time="2026-01-01T00:00:00Z", prediction="alignment", observed="alignment", correct=True,
                          status="pass", device="cpu", engine_hash="x", seed=seed)
        session.progress = store.record_attempt("ada", "audit", attempt)
    assert task.seed not in met and met == [1, 2, 3]
    assert session.edit_task(audit, "fix").seed == 3  # later hunts meet the last predicted mystery


class AllCleanRunner(ReadingRunner):
    """Every side observes what the clean engine does (the hunt's verdict does not matter here)."""

    def _side(self, exercise, side):
        return self._measured(exercise, "a", side.name)


def test_the_cli_hunt_names_its_file_and_meets_the_same_mystery_with_or_without_saving(tmp_path, monkeypatch, capsys):
    import json
    from tutor import cli
    from tutor.cli import common
    from tutor.model.attempts import Attempt
    from tutor.store.progress import ProgressStore
    monkeypatch.setattr(common, "make_runner", lambda *args, **kwargs: AllCleanRunner())
    store = ProgressStore(tmp_path / "progress")
    for seed in (0, 1):
        store.record_attempt("ada", "audit", Attempt(time="2026-01-01T00:00:00Z", prediction="alignment",
                                                     observed="alignment", correct=True, status="pass",
                                                     device="cpu", engine_hash="x", seed=seed))
    mine = tmp_path / "mine.py"
    mine.write_text("print('not the engine')\n")
    seeds = []
    for extra in (["--no-save"], []):
        code = cli.main(["fix", "audit", "--file", str(mine), "--json", "--no-instruments", "--learner", "ada",
                         "--progress-dir", str(tmp_path / "progress"), *extra])
        out, err = capsys.readouterr()
        data = json.loads(out)
        seeds.append(data["seed"])
        assert code in (0, 1), err
        assert f"expects your edited {data['file']}" in err and "mine.py ran in its place" in err
        assert "shares few lines" in err
    assert seeds == [1, 1]  # the mystery the last prediction met, saved or not


# --- keys: the help lists every key; footers show only keys that work, the app's first ----------

def _footer(screen) -> dict[str, tuple[str, object]]:
    """The footer's keys as shown: key → (description, its region on screen)."""
    from textual.widgets._footer import FooterKey
    return {key.key: (key.description, key.region) for key in screen.query(FooterKey)}


def _help_text(app) -> str:
    from textual.widgets import Markdown
    return app.screen.query_one(Markdown).source


def test_the_help_lists_every_key_of_every_screen_from_their_bindings(tmp_path, monkeypatch):
    from textual.binding import Binding
    from tutor.ui.screens.home import HomeScreen
    monkeypatch.setattr(EditScreen, "BINDINGS", EditScreen.BINDINGS + [
        Binding("ctrl+l", "noop", "Nothing", tooltip="a key added to a screen shows in the help")])
    monkeypatch.setattr(HomeScreen, "BINDINGS", HomeScreen.BINDINGS)  # (the screens' classes are read as they are)
    app, _ = make_app(tmp_path)
    shown = {}

    async def script(pilot):
        await pilot.press("question_mark")
        await pilot.pause()
        shown["help"] = _help_text(pilot.app)
    drive(app, script)
    text = shown["help"]
    for row in ("| f, F | Fix it", "| b, B | Break it", "| Ctrl+S | save your file and run",
                "| Ctrl+O | open your file in $VISUAL", "| Ctrl+N | start again from a fresh copy",
                "| Esc | cancel a running check; else go back", "| Tab | indent",
                "| Ctrl+F | find text", "| Ctrl+G | go to a line", "| Ctrl+T | move between your file and the result",
                "| Ctrl+L | a key added to a screen shows in the help", "| x | reset", "| u | show or hide"):
        assert row in text, row
    assert "Ctrl+C, Super+C | Copy" not in text  # Ctrl+C quits everywhere: the help does not say otherwise


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_footers_show_only_working_keys_and_keep_quit_help_progress_visible(tmp_path, size, no_editor):
    app, _ = make_app(tmp_path)
    seen = {}

    async def laid_out(pilot, exercise_id=None):
        """The footer once the screen is drawn: a busy machine lays a new screen out a few pauses late."""
        def ready():
            if exercise_id is not None and not shows_page(pilot, exercise_id):
                return False
            keys = _footer(pilot.app.screen)
            return "q" in keys and keys["q"][1].width > 0
        await wait_until(pilot, ready, f"the footer of {exercise_id or 'the home screen'}")
        return _footer(pilot.app.screen)

    async def script(pilot):
        seen["home"] = await laid_out(pilot)
        pilot.app.open_exercise(EXERCISE)  # choices a, b, c…: a and b pick choices here
        seen["choice"] = await laid_out(pilot, EXERCISE)
        pilot.app.screen.app.pop_screen()
        pilot.app.open_exercise("broadcast-loss")  # a typed answer
        seen["typed"] = await laid_out(pilot, "broadcast-loss")
        pilot.app.screen.query_one("#exercise-body").focus()
        await pilot.press("a")  # into the answer box: printable keys type there
        await pilot.pause()
        seen["typing"] = _footer(pilot.app.screen)
    drive(app, script, size=size)
    width = size[0]
    for page in ("home", "choice", "typed"):
        for key in ("q", "question_mark", "p"):
            assert key in seen[page], (page, key, seen[page])
            region = seen[page][key][1]
            assert region.width > 0 and region.right <= width, (page, key, region)
    choice = seen["choice"]
    assert "a" not in choice and "b" not in choice  # they pick choices here
    assert choice["B"][0] == "Break it" and choice["f"][0] == "Fix it"  # (f picks nothing: four choices)
    assert "F" not in choice  # one key per action
    # the compact footer leaves h, a and e to the help (Hint has its button, the note's title names e)
    assert "a" not in seen["typed"] and seen["typed"]["b"][0] == "Break it"
    typing = seen["typing"]
    assert not {"q", "p", "question_mark", "r", "a"} & set(typing)  # they type into the box
    quit_key = "ctrl+c" if "ctrl+c" in typing else "ctrl+q"  # the keys that still work in a box show instead
    assert typing[quit_key][0] == "Quit" and typing["f1"][0] == "Help" and typing["ctrl+r"][0] == "Run"


# --- progress by mode: predictions and edit attempts apart ---------------------------------------

def _mixed_progress(folder, time: str = "2026-01-01T10:00:00Z"):
    """head-split: a prediction (c, wrong), then a fix (fixed), a break predicted b (changed, right) and a
    break in free text (unchanged); audit: a hunt (not fixed); every attempt made at ``time``."""
    from tutor.model.attempts import Attempt
    from tutor.store.progress import ProgressStore
    store = ProgressStore(folder)
    common = dict(time=time, device="cpu", engine_hash="x")
    for ex_id, attempt in [
        (EXERCISE, Attempt(prediction="c", observed="b", correct=False, status="fail", **common)),
        (EXERCISE, Attempt(prediction="", observed="a", correct=True, status="ok", mode="fix", diff="-x\n+y",
                           verdict="fixed", **common)),
        (EXERCISE, Attempt(prediction="b", observed="b", correct=True, status="ok", mode="break", diff="-y\n+x",
                           verdict="changed", **common)),
        (EXERCISE, Attempt(prediction="it mixes heads", observed="a", correct=False, status="ok", mode="break",
                           diff="-y\n+z", verdict="unchanged", **common)),
        ("audit", Attempt(prediction="", observed="alignment", correct=False, status="ok", mode="hunt",
                          diff="", verdict="not fixed", seed=1, **common)),
    ]:
        store.record_attempt("ada", ex_id, attempt)
    return store


def _plain(renderable, width=140) -> str:
    import io
    from rich.console import Console
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def test_the_progress_screen_shows_each_attempts_mode_and_an_edits_verdict(tmp_path):
    from tutor.ui.screens.progress import exercise_renderable
    store = _mixed_progress(tmp_path)
    progress = store.load("ada")
    catalog = load_catalog()
    shown = _plain(exercise_renderable(catalog.get(EXERCISE), progress.of(EXERCISE)))
    lines = [line.split() for line in shown.splitlines()]
    header = next(line for line in lines if line[:1] == ["time"])
    assert header == ["time", "mode", "prediction", "sure", "observed", "result", "device"]
    rows = [line for line in lines if line and line[0] == "2026-01-01"]
    assert [row[2] for row in rows] == ["predict", "fix", "break", "break"]
    assert rows[0][3:7] == ["c", "-", "b", "no"]
    assert rows[1][3:7] == ["-", "-", "a", "fixed"]  # no prediction, the verdict as the result
    assert " ".join(rows[2][3:]).startswith("b - b changed · prediction right")
    assert "unchanged · prediction free text" in " ".join(rows[3])
    hunt = _plain(exercise_renderable(catalog.get("audit"), progress.of("audit")))
    assert "hunt" in hunt and "not fixed" in hunt


def test_tutor_progress_and_report_count_predictions_and_edits_apart(tmp_path):
    import json
    import os
    import subprocess
    import sys
    _mixed_progress(tmp_path)
    env = dict(os.environ, COLUMNS="160")
    run = lambda *args: subprocess.run([sys.executable, "-m", "tutor.cli", *args], capture_output=True, text=True,
                                       env=env, timeout=120, stdin=subprocess.DEVNULL)
    shown = run("progress", "--learner", "ada", "--progress-dir", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if line.lstrip("│ ").startswith(EXERCISE))
    cells = [cell.strip() for cell in row.strip("│ ").split("│")] if "│" in row else row.split()
    assert "predictions" in shown.stdout and "edits" in shown.stdout
    assert "fix 1, last fixed" in shown.stdout and "break 2, last unchanged · prediction free" in shown.stdout
    assert "hunt 1, last not fixed" in shown.stdout
    assert cells[1] == "1" and cells[2] == "c"  # one prediction; its answer, never an edit's empty one
    report = run("report", str(tmp_path), "--json")
    assert report.returncode == 0, report.stderr
    by_id = {e["id"]: e for e in json.loads(report.stdout)["exercises"]}
    assert by_id[EXERCISE]["edits"] == {"break": {"changed": 1, "unchanged": 1}, "fix": {"fixed": 1}}
    assert by_id["audit"]["edits"] == {"hunt": {"not fixed": 1}}
    table = run("report", str(tmp_path))
    assert "fix 1 (fixed 1)" in table.stdout and "break 2 (changed 1, unchanged 1)" in table.stdout


def test_the_exercise_page_says_the_last_prediction_not_the_last_edit(tmp_path, monkeypatch):
    from datetime import datetime, timezone
    _mixed_progress(tmp_path, time=datetime.now(timezone.utc).isoformat(timespec="seconds"))  # not due yet
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        pilot.app.open_exercise(EXERCISE)
        await pilot.pause()
        seen["history"] = str(pilot.app.screen.query_one("#exercise-history").content)
    drive(app, script)
    assert "1 prediction(s); last: you said c, the check observed b" in seen["history"]
    assert "3 edit attempt(s)" in seen["history"] and 'you said ""' not in seen["history"]


# --- the built-in editor: Tab, the result panel, find, go to line, the cursor after a run -------

def test_tab_indents_in_the_built_in_editor_and_ctrl_t_moves_to_the_result(tmp_path, no_editor):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_edit(pilot)
        editor = screen.query_one(CodeEditor)
        editor.move_cursor((0, 0))
        await pilot.press("tab")
        assert pilot.app.focused is editor and editor.text.startswith("    ")  # Tab indents, focus stays
        await pilot.press("ctrl+z")
        await pilot.press("ctrl+t")
        assert "no result yet" in status_text(screen) and pilot.app.focused is editor
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press("ctrl+t")
        assert pilot.app.focused is screen.query_one("#edit-result")
        await pilot.press("ctrl+t")
        assert pilot.app.focused is editor
    drive(app, script)


def test_ctrl_f_finds_and_ctrl_g_goes_to_a_line(tmp_path, no_editor):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_edit(pilot)
        editor = screen.query_one(CodeEditor)
        editor.move_cursor((0, 0))
        await pilot.press("ctrl+f")
        box = screen.query_one("#edit-seek", Input)
        assert pilot.app.focused is box
        await pilot.press(*"def ", "enter")
        first = editor.selection
        assert editor.selected_text == "def " and first.start[0] > 0
        await pilot.press("enter")  # the next match
        assert editor.selection.start[0] > first.start[0] and editor.selected_text == "def "
        await pilot.press(*"zzz-not-there", "enter")
        assert "is not in your file" in status_text(screen)
        await pilot.press("escape")  # closes the box, back to the file (not out of edit mode)
        assert isinstance(pilot.app.screen, EditScreen) and pilot.app.focused is editor
        await pilot.press("ctrl+g", *"120", "enter")
        assert editor.cursor_location == (119, 0) and pilot.app.focused is editor
        row = editor.cursor_location[0]
        assert editor.scroll_offset.y <= row < editor.scroll_offset.y + editor.scrollable_content_region.height
    drive(app, script)


def test_the_cursor_line_stays_on_screen_after_a_run_at_80_by_24(tmp_path, no_editor):
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        screen = await open_edit(pilot)
        editor = screen.query_one(CodeEditor)
        line = next(n for n, text in enumerate(editor.text.splitlines()) if FAULT.after.strip() in text)
        editor.move_cursor((line, 0))
        editor.scroll_cursor_visible()
        await pilot.pause()
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.pause()
        seen["row"], seen["top"] = editor.cursor_location[0], editor.scroll_offset.y
        seen["rows"] = editor.scrollable_content_region.height
        seen["panel"] = screen.query_one("#edit-result").region.height
    drive(app, script, size=(80, 24))
    assert seen["panel"] > 0  # the result is on screen
    assert seen["rows"] >= 3 and seen["top"] <= seen["row"] < seen["top"] + seen["rows"], seen


def test_the_copy_dialog_counts_changes_against_the_file_you_started_from(tmp_path, no_editor):
    from test_edit_tui import working_copy
    from tutor.ui.screens.copy_choice import CopyChoiceScreen
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        screen = await open_edit(pilot)
        editor = screen.query_one(CodeEditor)
        editor.load_text(editor.text.replace(FAULT.after, FAULT.before, 1))  # a complete repair: the clean file
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(pilot.app.screen, EditScreen), "the exercise page again")
        await settle(pilot)  # the working copy is saved by a worker: "f" before it is done finds none yet
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, CopyChoiceScreen), "the copy dialog")
        seen["changed"] = pilot.app.screen.changed_lines
    drive(app, script)
    # the fault edits one line; its repair edits it back: one changed line (not 0, not 2 for "out and in")
    assert working_copy(tmp_path).exists() and seen["changed"] == 1


@pytest.mark.parametrize("start, text, changed", [
    ("a\nb\nc\nd\n", "A\nB\nC\nd\n", 3),   # three lines edited in place: 3, not 6
    ("a\nb\nc\n", "a\nx\nb\nc\n", 1),       # one line added
    ("a\nb\nc\n", "a\nc\n", 1),             # one line removed
    ("a\nb\nc\n", "a\nX\nY\nZ\nc\n", 3),    # one line replaced by three
    ("a\nb\n", "a\nb\n", 0),
])
def test_changed_lines_counts_an_edited_line_once(start, text, changed):
    from tutor.ui.external_editor import changed_lines
    assert changed_lines(start, text) == changed


# --- words that do not mislead ----------------------------------------------------------------

class DivergingRunner(ReadingRunner):
    """The reading runner, whose check also names its first divergence as the head-split check does."""

    @staticmethod
    def _measured(exercise, value, name):
        from exercises.outcome import note
        result = ReadingRunner._measured(exercise, value, name)
        if not exercise.check.startswith("edit_mode."):
            result.evidence.append(note(f"first divergence: {'none' if value == 'a' else 'head split'}"))
        return result


def test_the_fix_screen_names_the_checks_first_divergence_as_the_predict_result_does(tmp_path, no_editor):
    app, _ = make_app(tmp_path, DivergingRunner())
    seen = {}

    async def script(pilot):
        screen = await open_edit(pilot)
        await pilot.press("ctrl+s")  # the faulted file as given: not fixed
        await settle(pilot)
        seen["shown"] = result_text(screen)
    drive(app, script)
    row = next(line for line in seen["shown"].splitlines() if line.lstrip("│").startswith("first divergence"))
    assert [cell.strip() for cell in row.strip("│").split("│")] == \
        ["first divergence", "none", "head split", "head split"]  # clean, faulted, yours
    assert "first audit link to fail" in seen["shown"] and "fails first" not in seen["shown"]


class StallingRunner(ReadingRunner):
    """A runner whose worker is still starting when the learner cancels: the start then fails."""

    def __init__(self) -> None:
        super().__init__()
        import threading
        self.cancelled = threading.Event()

    def warm_up(self) -> dict:
        from tutor.sandbox.runner import WorkerError
        self.cancelled.wait(10)
        raise WorkerError("the worker was stopped")

    def cancel(self) -> None:
        self.cancelled.set()


def test_a_cancel_while_the_worker_starts_is_no_error_toast(tmp_path):
    app, _ = make_app(tmp_path, StallingRunner())
    seen = {}

    async def script(pilot):
        pilot.app.open_exercise(EXERCISE)
        await pilot.pause()
        screen = pilot.app.screen
        screen.query_one("#exercise-body").focus()
        await pilot.press("a")  # picks choice a
        await pilot.pause(0.5)
        await pilot.press("r")
        await pilot.pause()
        seen["status"] = str(screen.query_one("#running-status").content)
        await pilot.press("escape")
        await settle(pilot)
        seen["toasts"] = [(n.title, n.severity, str(n.message)) for n in pilot.app._notifications]
    drive(app, script)
    assert "the first run loads torch" in seen["status"]
    assert not [t for t in seen["toasts"] if t[1] == "error" or t[0] == "runner"], seen["toasts"]
    assert any(t[0] == "cancelled" and "starts again" in t[2] for t in seen["toasts"])


def test_the_status_line_tells_a_restart_from_a_first_start(tmp_path):
    from types import SimpleNamespace
    runner = ReadingRunner()
    runner.worker = SimpleNamespace(hello=None, stopped=False)
    app, _ = make_app(tmp_path, runner)
    seen = []

    async def script(pilot):
        await settle(pilot)
        runner.worker.hello = SimpleNamespace(torch="fake")  # up and running
        seen.append(pilot.app.starting_words())
        runner.worker.stopped = True  # a cancel or a timeout stopped it
        seen.append(pilot.app.starting_words())
        runner.worker.hello = None  # it never said hello
        seen.append(pilot.app.starting_words())
    drive(app, script)
    assert seen[0] == "starting the check…"
    assert seen[1].startswith("restarting the check worker")
    assert "the first run loads torch" in seen[2]


def test_broadcast_grad_shows_no_answer_in_its_diff():
    catalog = load_catalog()
    fault = catalog.fault_of(catalog.get("broadcast-grad"))
    # the exercise asks for the bias gradient's shape, (4,): K = 4 in the prompt's sizes
    for line in (fault.before, fault.after):
        assert "(K,)" not in line and "(4,)" not in line, line


def test_ctrl_o_shows_only_where_there_is_an_editor_to_open(tmp_path, monkeypatch, no_editor):
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        screen = await open_edit(pilot)
        await wait_until(pilot, lambda: bool(_footer(screen)), "the edit page's footer")
        seen["none"] = set(_footer(screen))
        monkeypatch.setenv("EDITOR", "true")
        screen.refresh_bindings()
        # the footer redraws once the bindings are refreshed: on a busy machine that takes more than one pause
        await wait_until(pilot, lambda: "ctrl+o" in _footer(screen), "ctrl+o in the footer once EDITOR is set")
        seen["set"] = set(_footer(screen))
    drive(app, script, size=(120, 40))
    assert "ctrl+o" not in seen["none"] and "ctrl+o" in seen["set"]


# --- editors open at the fault --------------------------------------------------------------------

def test_a_task_opens_at_the_line_its_fault_changes_and_a_hunt_at_line_1():
    from tutor.app.tasks import break_task, fault_line, fix_task, hunt_task
    catalog = load_catalog()
    exercise = catalog.get(EXERCISE)
    clean_lines = fix_task(catalog, exercise).clean.splitlines()
    line = fault_line(FAULT, "\n".join(clean_lines) + "\n")
    assert line > 1 and FAULT.before.splitlines()[0] in clean_lines[line - 1]  # the line the fault edits
    assert fix_task(catalog, exercise).line == break_task(catalog, exercise).line == line
    capstone = next(e for e in catalog.exercises if e.seed_per_attempt)
    assert hunt_task(catalog, capstone, 1).line == 1  # the place would give the hidden fault away


def test_the_built_in_editor_opens_at_the_faults_line(tmp_path, no_editor):
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        screen = await open_edit(pilot)
        await pilot.pause()
        editor = screen.query_one(CodeEditor)
        seen["row"], seen["line"] = editor.cursor_location[0], screen.edit_task.line
        seen["top"], seen["rows"] = editor.scroll_offset.y, editor.scrollable_content_region.height
    drive(app, script, size=(80, 24))
    assert seen["line"] > 1 and seen["row"] == seen["line"] - 1, seen
    assert seen["top"] <= seen["row"] < seen["top"] + seen["rows"], seen  # and on screen


def test_a_known_editor_is_given_the_faults_line(tmp_path, monkeypatch, suspending_driver):
    import stat
    import sys
    folder = tmp_path / "bin"
    folder.mkdir()
    vim = folder / "vim"  # an editor by vim's name, which takes +N before the file: it records its arguments
    vim.write_text(f"#!{sys.executable}\nimport sys, json\nopen({str(tmp_path / 'argv')!r}, 'w')"
                   ".write(json.dumps(sys.argv[1:]))\n")
    vim.chmod(vim.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(vim))
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        screen = await open_edit(pilot)
        await pilot.pause()
        seen["line"] = screen.edit_task.line
    drive(app, script)
    import json
    argv = json.loads((tmp_path / "argv").read_text())
    assert argv[0] == f"+{seen['line']}" and seen["line"] > 1 and argv[1].endswith(".py"), argv


def test_an_editor_is_given_a_line_only_in_a_form_it_reads():
    from tutor.ui.external_editor import at_line
    assert at_line(["nano"], "f.py", 12) == ["nano", "+12", "f.py"]
    assert at_line(["/usr/bin/code", "-w"], "f.py", 12) == ["/usr/bin/code", "-w", "--goto", "f.py:12"]
    assert at_line(["subl", "-w"], "f.py", 12) == ["subl", "-w", "f.py:12"]
    assert at_line(["my-editor"], "f.py", 12) == ["my-editor", "f.py"]  # unknown: nothing it could misread
    assert at_line(["vim"], "f.py", 1) == ["vim", "f.py"]
