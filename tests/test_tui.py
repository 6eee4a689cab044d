"""The Textual UI, driven through ``App.run_test()`` with a fake runner.

Every test builds the app with the real catalog, a progress store in
``tmp_path`` and a :class:`FakeRunner` that returns a canned ``RunResult``, so
nothing here depends on torch or on its numerics. The tests are plain sync
functions that call ``asyncio.run`` (no pytest-asyncio needed).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

pytest.importorskip("textual")

from textual.geometry import Region  # noqa: E402
from textual.widgets import Input, OptionList, Static, TextArea  # noqa: E402

from tutor.model import answers  # noqa: E402
from tutor.store.catalog_cache import load_catalog  # noqa: E402
from tutor.model.attempts import Attempt  # noqa: E402
from tutor.store.progress import ProgressStore  # noqa: E402
from tutor.sandbox.protocol import Answer, Progress, SideResult  # noqa: E402
from tutor.sandbox.runner import RunResult, grade  # noqa: E402
from tutor.ui.app import build_app  # noqa: E402
from tutor.ui.screens.exercise import ExerciseScreen  # noqa: E402
from tutor.ui.screens.help import HelpScreen  # noqa: E402
from tutor.ui.screens.home import HomeScreen  # noqa: E402
from tutor.ui.screens.progress import ProgressScreen  # noqa: E402
from tutor.ui.widgets.exercise_tree import ExerciseTree  # noqa: E402
from tutor.ui.widgets.prediction import PredictionInput  # noqa: E402
from tutor.ui.widgets.series_plot import SeriesPlot  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

LEARNER = "ada"


# --- fakes and helpers ---------------------------------------------------------

class FakeRunner:
    """Has the real runner's four methods; ``run`` returns ``make(exercise, prediction)``.

    With ``slow=True`` a run blocks until ``cancel()`` and then returns a
    cancelled result, like the real runner does when its worker is killed.
    """

    def __init__(self, make=None, slow: bool = False) -> None:
        self.make = make or canned_pass
        self.slow = slow
        self.calls: list[tuple[str, str | None]] = []
        self.seeds: list[int | None] = []
        self.sides: list[tuple[str, ...]] = []
        self.cancelled = threading.Event()
        self.started = threading.Event()
        self.closed = False

    def warm_up(self) -> dict:
        return {"torch": "fake", "cuda": False}

    def run(self, exercise, prediction=None, on_progress=None, seed=None, sides=None, timeout_scale=None):
        self.calls.append((exercise.id, prediction))
        self.seeds.append(seed)
        self.sides.append(tuple(side.name for side in sides or ()))
        self.started.set()
        if on_progress is not None:
            on_progress(Progress(fraction=0.5, message="halfway", job=1, side="clean"))
        if self.slow:
            self.cancelled.wait(10)
            return RunResult(id=exercise.id, status="cancelled", device="cpu", torch="fake", fault=exercise.fault,
                             kind=exercise.kind.name, prediction=prediction, errors={"run": "the run was cancelled"})
        return self.make(exercise, prediction)

    def cancel(self) -> None:
        self.cancelled.set()

    def close(self) -> None:
        self.closed = True


def canned_pass(exercise, prediction):
    """A pass whose observation is whatever was predicted (kind-agnostic)."""
    observed = exercise.kind.parse(prediction)
    return RunResult(
        id=exercise.id, status="pass", device="cpu", torch="fake", fault=exercise.fault, kind=exercise.kind.name,
        prediction=prediction, prediction_text=exercise.kind.show_observation(observed),  # as the runner reads it
        observed=observed, clean=observed, faulted=observed, correct=True,
        evidence={"clean": [{"type": "series", "title": "loss", "values": [3.0, 2.0, 1.0]},
                            {"type": "table", "title": "canned rows", "columns": ["quantity", "value"],
                             "rows": [["answer", "canned"]]}],
                  "faulted": [{"type": "series", "title": "loss", "values": [3.0, 3.0, 3.5]}]},
        duration_s=0.01)


def observing(**observed):
    """A ``make`` for FakeRunner: each side observed the value given (``clean="a", faulted="b"``),
    and the real :func:`tutor.sandbox.runner.grade` compares the prediction with it, so ✓ and ✗ are the
    tutor's verdicts, not the fake's."""
    def make(exercise, prediction):
        sides = {name: SideResult(status="ok", observed=value, evidence=[
            {"type": "table", "title": f"{name} rows", "columns": ["quantity", "value"], "rows": [["answer", value]]}])
            for name, value in observed.items()}
        return grade(exercise, Answer(job=1, torch="fake", device="cpu", duration_s=0.01, sides=sides), prediction)
    return make


def canned_error(exercise, prediction):
    return RunResult(id=exercise.id, status="error", device="cpu", torch="fake", fault=exercise.fault,
                     kind=exercise.kind.name, prediction=prediction,
                     errors={"faulted": "RuntimeError: the subject crashed on purpose (canned)"})


def make_app(tmp_path, runner=None):
    store = ProgressStore(tmp_path)
    return build_app(load_catalog(), store, LEARNER, runner or FakeRunner()), store


def drive(app, script, size=(80, 24)):
    """Run ``script(pilot)`` inside ``app.run_test``; fail on any app exception."""
    async def main():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(pilot)
            await pilot.pause()
    asyncio.run(main())
    assert getattr(app, "_exception", None) is None


def text_of(widget) -> str:
    """What a Static shows, as plain text (rendered 400 columns wide, so nothing wraps)."""
    console = Console(width=400, record=True, color_system=None, file=open(Path("/dev/null"), "w"))
    console.print(widget.content)
    return console.export_text()


def screen_text(screen) -> str:
    return "\n".join(text_of(s) for s in screen.query(Static))


def walk(node):
    yield node
    for child in node.children:
        yield from walk(child)


async def wait_until(pilot, ready, what: str, pauses: int = 3000) -> None:
    """Let the app process its messages until ``ready()`` holds: a screen is asserted on only once it shows
    what the test waits for (a busy machine delays a screen, never changes it). Counted in pauses, never in
    seconds (3,000 pauses: a screen that needs a busy CI machine's seconds still comes; a ready one returns
    at once); fails naming ``what`` when it never comes."""
    for _ in range(pauses):
        if ready():
            return
        await pilot.pause(0.01)
    assert ready(), f"the app never showed {what}"


def shows_page(pilot, exercise_id: str) -> bool:
    """Whether the app's screen now is the drawn page of this exercise (the keys typed before then are
    held for it, and read once it is drawn)."""
    screen = pilot.app.screen
    return (isinstance(screen, ExerciseScreen) and screen.exercise.id == exercise_id
            and bool(screen.query("#exercise-body")) and screen.shown_at is not None)


async def open_exercise(pilot, exercise_id: str) -> ExerciseScreen:
    await wait_until(pilot, lambda: bool(pilot.app.screen.query(ExerciseTree)), "the exercise list")
    tree = pilot.app.screen.query_one(ExerciseTree)
    node = next(n for n in walk(tree.root) if n.data == exercise_id)
    tree.focus()
    tree.cursor_line = node.line
    await pilot.pause()
    await pilot.press("enter")
    await wait_until(pilot, lambda: shows_page(pilot, exercise_id), f"the page of {exercise_id}")
    return pilot.app.screen


async def open_note(pilot, exercise_id: str) -> ExerciseScreen:
    """Open an exercise and put the focus in its explain-back note."""
    screen = await open_exercise(pilot, exercise_id)
    screen.query_one("#note", TextArea).focus()
    await pilot.pause()
    return screen


async def pick(pilot, choice_id: str) -> None:
    """Select a choice (or yes/no) in the option list with the keyboard."""
    widget = pilot.app.screen.query_one(PredictionInput)
    option_list = widget.query_one(OptionList)
    option_list.focus()
    await pilot.pause()
    index = [cid for cid, _ in widget.options].index(choice_id)
    await pilot.press("home", *(["down"] * index), "enter")
    await pilot.pause()
    assert widget.value == choice_id


async def type_answer(pilot, text: str) -> None:
    box = pilot.app.screen.query_one("#prediction-input", Input)
    box.focus()
    await pilot.pause()
    await pilot.press(*text)


async def finish_runs(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def type_and_run(pilot, text: str) -> None:
    """Type the answer, run the check with Enter, and let the run finish."""
    await type_answer(pilot, text)
    await pilot.press("enter")
    await finish_runs(pilot)


async def pick_and_run(pilot, choice_id: str) -> None:
    """Pick the choice, run the check with r, and let the run finish."""
    await pick(pilot, choice_id)
    await pilot.press("r")
    await finish_runs(pilot)


def saved(tmp_path) -> dict:
    path = tmp_path / f"{LEARNER}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def first_of_kind(kind: str):
    for ex in load_catalog().exercises:
        if ex.kind.name == kind:
            return ex
    pytest.skip(f"the catalog has no exercise of kind {kind}")


# --- tests ---------------------------------------------------------------------

def test_home_lists_every_set_and_exercise(tmp_path):
    app, _ = make_app(tmp_path)
    catalog = load_catalog()

    async def script(pilot):
        assert isinstance(pilot.app.screen, HomeScreen)
        tree = pilot.app.screen.query_one(ExerciseTree)
        labels = [n.label.plain for n in walk(tree.root)]
        data = [n.data for n in walk(tree.root)]
        for exercise_set in catalog.sets:  # a set counts its graded exercises (a warm-up is never solved)
            graded = sum(e.graded for e in exercise_set.exercises)
            assert any(label.startswith(exercise_set.title) and f"0/{graded}" in label
                       for label in labels), exercise_set.id
        for ex in catalog.exercises:
            assert ex.id in data
            assert any(label.startswith("·") and ex.id in label for label in labels)
        # sets in catalog order
        set_lines = [d for d in data if d and d.startswith("set:")]
        assert set_lines == [f"set:{s.id}" for s in catalog.sets]
    drive(app, script)


def test_choice_prediction_runs_and_records_attempt(tmp_path):
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)
    ex = next(e for e in load_catalog().exercises if e.kind.name == "choice")
    choice = ex.choices[1][0]

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await pick_and_run(pilot, choice)
        text = text_of(screen.query_one("#result-text", Static))
        assert "✓ your prediction matched the observation" in text
        assert "canned rows" in text
        # the series evidence: one plot, clean and faulted on the same axes (this replaced the
        # sparklines, each scaled to its own min and max)
        plots = screen.query(SeriesPlot)
        assert len(plots) == 1 and list(plots.first().group.curves) == ["clean", "faulted"]
        # back home: the mark and the count follow
        await pilot.press("escape")
        await pilot.pause()
        await pilot.pause()
        tree = pilot.app.screen.query_one(ExerciseTree)
        label = next(n.label.plain for n in walk(tree.root) if n.data == ex.id)
        assert label.startswith("✓")
    drive(app, script)
    assert runner.calls == [(ex.id, choice)]
    attempts = saved(tmp_path)["exercises"][ex.id]["attempts"]
    assert len(attempts) == 1
    assert attempts[0]["prediction"] == choice and attempts[0]["correct"] is True
    assert attempts[0]["status"] == "pass" and attempts[0]["observed"] == choice


def test_each_capstone_attempt_meets_a_new_mystery_and_other_exercises_keep_seed_zero(tmp_path):
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "audit")
        for n, key in enumerate(("1", "2", "3"), start=1):  # three attempts: TOKENIZER, ALIGNMENT, CAUSALITY
            await pilot.press(key)
            await pilot.press("r")
            await finish_runs(pilot)
            # the next key is pressed only once this attempt is saved and its result is on the page
            await wait_until(pilot, lambda: len(runner.calls) == n and screen.query_one("#result").has_class("-shown")
                             and len(saved(tmp_path).get("exercises", {}).get("audit", {}).get("attempts", [])) == n,
                             f"attempt {n}'s result")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(pilot.app.screen, ExerciseScreen), "the home screen")
        await open_exercise(pilot, "head-split")
        await pick_and_run(pilot, "a")
        await wait_until(pilot, lambda: len(runner.calls) == 4, "the fourth run")
    drive(app, script)
    assert [c[0] for c in runner.calls] == ["audit"] * 3 + ["head-split"]
    assert runner.seeds == [0, 1, 2, 0]


def test_typed_prediction_enter_runs(tmp_path):
    ex = first_of_kind("shape")
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_and_run(pilot, "3x3")
        assert "✓ your prediction matched" in text_of(screen.query_one("#result-text", Static))
    drive(app, script)
    attempt = saved(tmp_path)["exercises"][ex.id]["attempts"][0]
    assert attempt["prediction"] == "(3, 3)" and attempt["observed"] == "(3, 3)"  # "3x3" as it was read


def test_a_refused_answer_keeps_the_last_result_on_screen(tmp_path):
    ex = first_of_kind("shape")
    app, _ = make_app(tmp_path, FakeRunner())

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_and_run(pilot, "3x3")
        await type_answer(pilot, "banana")
        await pilot.press("enter")
        await pilot.pause()
        assert screen.query_one("#answer-error", Static).has_class("-shown")
        assert screen.query_one("#result").has_class("-shown")
        assert "✓ your prediction matched" in text_of(screen.query_one("#result-text", Static))
    drive(app, script)


def test_unparseable_answer_shows_format_and_records_nothing(tmp_path):
    ex = first_of_kind("shape")
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_answer(pilot, "banana")
        await pilot.press("enter")
        await pilot.pause()
        error = text_of(screen.query_one("#answer-error", Static))
        assert answers.Shape().format_hint() in error
        assert not screen.query_one("#result").has_class("-shown")
    drive(app, script)
    assert runner.calls == []
    assert not (tmp_path / f"{LEARNER}.toml").exists()


def test_running_with_no_choice_says_to_pick_one(tmp_path):
    ex = next(e for e in load_catalog().exercises if e.kind.name == "choice")
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await pilot.press("r")
        await pilot.pause()
        assert "pick a choice first" in text_of(screen.query_one("#answer-error", Static))
    drive(app, script)
    assert runner.calls == []


def test_error_status_is_shown_as_an_outcome(tmp_path):
    ex = first_of_kind("shape")
    app, _ = make_app(tmp_path, FakeRunner(make=canned_error))

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_and_run(pilot, "(3,)")
        text = text_of(screen.query_one("#result-text", Static))
        assert "could not finish" in text
        assert "the subject crashed on purpose (canned)" in text
        assert "Traceback" not in screen_text(screen)
    drive(app, script)
    assert "exercises" not in saved(tmp_path)  # error is not an attempt


def test_runner_exception_is_shown_not_raised(tmp_path):
    ex = first_of_kind("shape")

    def explode(exercise, prediction):
        raise RuntimeError("the check worker did not start (canned)")
    app, _ = make_app(tmp_path, FakeRunner(make=explode))

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_and_run(pilot, "3")
        assert "the check worker did not start (canned)" in text_of(screen.query_one("#result-text", Static))
        assert not screen.running
    drive(app, script)


async def _exit_at_once(pilot):
    pilot.app.exit()  # no quit action, no debounce: the unmount must flush


async def _ctrl_c(pilot):
    await pilot.press("ctrl+c")


@pytest.mark.parametrize("text, leave", [("broadcasting", _exit_at_once), ("axis", _ctrl_c)],
                         ids=["app-exits-at-once", "ctrl-c"])
def test_note_is_saved_when_the_app_ends(tmp_path, text, leave):
    ex = load_catalog().exercises[0]
    app, _ = make_app(tmp_path)

    async def script(pilot):
        await open_note(pilot, ex.id)
        await pilot.press(*text)
        await leave(pilot)
    drive(app, script)
    assert saved(tmp_path)["exercises"][ex.id]["note"] == text


def test_note_is_saved_after_a_pause_in_typing(tmp_path):
    ex = load_catalog().exercises[0]
    app, _ = make_app(tmp_path)

    async def script(pilot):
        await open_note(pilot, ex.id)
        await pilot.press(*"view")
        await pilot.pause(1.5)  # the debounce fires while the screen is still open
        assert saved(tmp_path)["exercises"][ex.id]["note"] == "view"
    drive(app, script)


def test_escape_during_a_slow_run_cancels(tmp_path):
    ex = first_of_kind("shape")
    runner = FakeRunner(slow=True)
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_answer(pilot, "3x3")
        await pilot.press("enter")
        deadline = time.monotonic() + 5
        while not runner.started.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert runner.started.is_set()
        await pilot.pause()
        assert screen.running and screen.query_one("#running").has_class("-shown")
        await pilot.press("escape")
        await finish_runs(pilot)
        assert runner.cancelled.is_set()
        assert pilot.app.screen is screen  # Esc cancelled; it did not leave
        assert not screen.running
        assert "cancelled" in text_of(screen.query_one("#result-text", Static))
    drive(app, script)
    assert "exercises" not in saved(tmp_path)


def test_hints_are_revealed_one_at_a_time(tmp_path):
    ex = load_catalog().exercises[0]
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        assert not screen.query(".hint")
        status = screen.query_one(".hint-status")
        n = len(ex.hints)
        # before any is shown, none is "left" and there is no "next": the first is offered
        assert text_of(status).strip() == f"{n} hints — press h (or the Hint button) to see the first."
        await pilot.press("h")
        await pilot.pause()
        assert len(screen.query(".hint")) == 1
        assert ex.hints[0] in text_of(screen.query(".hint").first())
        assert text_of(status).strip().startswith(f"{n - 1} hint{'s' if n - 1 != 1 else ''} left — ")
        await pilot.press("h")
        await pilot.pause()
        assert len(screen.query(".hint")) == 2
    drive(app, script)


def test_progress_screen_shows_attempts_and_note(tmp_path):
    ex = load_catalog().exercises[0]
    store = ProgressStore(tmp_path)
    store.record_attempt(LEARNER, ex.id, Attempt(time="2026-01-02T03:04:05+00:00", prediction="7x7",
                                                  observed="(3, 3)", correct=False, status="fail",
                                                  device="cpu", engine_hash="abc"))
    store.save_note(LEARNER, ex.id, "a note worth keeping")
    app, _ = make_app(tmp_path)

    async def script(pilot):
        tree = pilot.app.screen.query_one(ExerciseTree)
        label = next(n.label.plain for n in walk(tree.root) if n.data == ex.id)
        assert label.startswith("✗")
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ProgressScreen)
        text = screen_text(pilot.app.screen)
        for piece in ("7x7", "(3, 3)", "a note worth keeping", "2026-01-02 03:04:05Z", ex.id):
            assert piece in text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HomeScreen)
    drive(app, script)


def test_help_opens_with_question_mark_and_f1(tmp_path):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        for key in ("question_mark", "f1"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(pilot.app.screen, HelpScreen)
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(pilot.app.screen, HomeScreen)
        await pilot.press("q")
    drive(app, script)
    assert app.return_code in (0, None)
    assert app.return_code == 0  # q quit the app


def test_corrupt_progress_is_reported_as_a_notification(tmp_path):
    (tmp_path / f"{LEARNER}.toml").write_text("this is [not toml", encoding="utf-8")
    app, _ = make_app(tmp_path)
    seen = []
    original = app.notify

    def notify(message, *args, **kwargs):
        seen.append(str(message))
        return original(message, *args, **kwargs)
    app.notify = notify

    async def script(pilot):
        assert isinstance(pilot.app.screen, HomeScreen)
    drive(app, script)
    assert any("could not be used" in m and "corrupt" in m for m in seen)
    assert list(tmp_path.glob(f"{LEARNER}.toml.corrupt-*"))


@pytest.mark.parametrize("size", [(80, 24), (40, 12)])
def test_every_screen_works_at_small_sizes(tmp_path, size):
    catalog = load_catalog()
    app, _ = make_app(tmp_path)
    kinds_seen = set()

    async def script(pilot):
        for ex in catalog.exercises:
            # one exercise per widget shape: a choice list, yes/no, a typed answer
            shape = ex.kind.name if ex.kind.name in ("choice", "bool") else "typed"
            if shape in kinds_seen:
                continue
            kinds_seen.add(shape)
            screen = await open_exercise(pilot, ex.id)
            if ex.kind.name in ("choice", "bool"):
                await pick(pilot, screen.query_one(PredictionInput).options[0][0])
                await pilot.press("r")
            else:
                answer = {"shape": "3x3", "number": "2", "error": "RuntimeError", "list": "[0, 1]",
                          "text": "words"}[ex.kind.name]
                await type_answer(pilot, answer)
                await pilot.press("enter")
            await finish_runs(pilot)
            screen.query_one("#exercise-body").focus()
            await pilot.press("h", "pagedown", "pagedown", "end")
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(pilot.app.screen, HomeScreen)
        for key in ("p", "escape", "f1", "pagedown", "escape"):
            await pilot.press(key)
            await pilot.pause()
    drive(app, script, size=size)


def test_first_screen_does_not_import_torch(tmp_path):
    code = f"""
import asyncio, json, sys
from tutor.store.catalog_cache import load_catalog
from tutor.store.progress import ProgressStore
from tutor.ui.app import build_app

class Fake:
    def warm_up(self): return {{}}
    def run(self, *a, **k): raise AssertionError("no run here")
    def cancel(self): pass
    def close(self): pass

app = build_app(load_catalog(), ProgressStore({str(tmp_path)!r}), "ada", Fake())
async def main():
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = type(app.screen).__name__
    return shown
shown = asyncio.run(main())
print(json.dumps({{"screen": shown, "torch": "torch" in sys.modules}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"screen": "HomeScreen", "torch": False}


# --- the real runner under a misbehaving subject -------------------------------

def _catalog_with(fault_body: str):
    """The real catalog, with broadcast-loss's fault replaced by ``fault_body``."""
    import dataclasses

    from exercises.faults import Fault
    from tutor.model.catalog import Catalog
    real = load_catalog()
    original = real.faults["no-squeeze"]
    faults = dict(real.faults)
    faults["no-squeeze"] = Fault(id=original.id, file=original.file, before=original.before,
                                 after="".join(f"    {line}\n" for line in fault_body.splitlines()),
                                 summary="a subject that misbehaves (test)")
    sets = tuple(dataclasses.replace(s, exercises=tuple(dataclasses.replace(e, timeout_s=60.0)
                                                        for e in s.exercises)) for s in real.sets)
    return Catalog(sets=sets, faults=faults)


def test_a_hanging_subject_is_cancelled_with_the_real_runner_and_the_app_stays_responsive(tmp_path):
    from tutor.sandbox.runner import Runner
    catalog = _catalog_with("import time\ntime.sleep(120)")
    runner = Runner(catalog, device="cpu")
    app = build_app(catalog, ProgressStore(tmp_path), LEARNER, runner)

    async def script(pilot):
        await asyncio.to_thread(pilot.app.warmed.wait, 60)
        first_pid = runner.worker.hello.pid
        screen = await open_exercise(pilot, "broadcast-loss")
        await type_answer(pilot, "(3, 3)")
        await pilot.press("enter")
        await asyncio.sleep(1.5)
        assert screen.running
        await pilot.press("ctrl+r")           # the UI still answers keys while the subject hangs
        await pilot.press("escape")           # cancel
        for _ in range(100):
            await asyncio.sleep(0.1)
            if not screen.running:
                break
        assert not screen.running
        assert "cancelled" in screen_text(screen)
        await pilot.press("p")                 # and still navigates
        await pilot.pause()
        assert isinstance(pilot.app.screen, ProgressScreen)
        assert runner.worker.hello.pid != first_pid or runner.worker._proc is None

    try:
        drive(app, script)
    finally:
        runner.close()
    assert "broadcast-loss" not in saved(tmp_path).get("exercises", {})  # a cancelled run is not an attempt


def test_a_crashing_subject_is_an_outcome_with_the_real_runner(tmp_path):
    from tutor.sandbox.runner import Runner
    catalog = _catalog_with("import os\nos.abort()")
    runner = Runner(catalog, device="cpu")
    app = build_app(catalog, ProgressStore(tmp_path), LEARNER, runner)

    async def script(pilot):
        await asyncio.to_thread(pilot.app.warmed.wait, 60)
        screen = await open_exercise(pilot, "broadcast-loss")
        await type_answer(pilot, "(3, 3)")
        await pilot.press("enter")
        for _ in range(200):
            await asyncio.sleep(0.1)
            if not screen.running:
                break
        text = screen_text(screen)
        assert "SIGABRT" in text and "could not finish" in text

    try:
        drive(app, script)
    finally:
        runner.close()


def test_typing_from_the_page_starts_the_answer_and_keeps_every_key(tmp_path):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_exercise(pilot, "broadcast-loss")
        screen.query_one("#exercise-body").focus()
        await pilot.pause()
        await pilot.press(*"(3, 3)")          # no Tab, no 'a': the first key must not be lost
        assert screen.query_one(PredictionInput).value == "(3, 3)"
        await pilot.press("enter")
        await finish_runs(pilot)
        screen.query_one("#exercise-body").focus()
        await pilot.pause()
        await pilot.press(*"3x3")              # a new answer replaces the old one
        assert screen.query_one(PredictionInput).value == "3x3"
    drive(app, script)
    attempts = saved(tmp_path)["exercises"]["broadcast-loss"]["attempts"]
    assert [a["prediction"] for a in attempts] == ["(3, 3)"]


def test_a_letter_picks_a_choice_and_y_n_answer_yes_no(tmp_path):
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_exercise(pilot, "head-split")
        screen.query_one("#exercise-body").focus()
        await pilot.pause()
        await pilot.press("c")
        assert screen.query_one(PredictionInput).value == "c"
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_exercise(pilot, "cache-offset")
        screen.query_one("#exercise-body").focus()
        await pilot.pause()
        await pilot.press("n")
        assert screen.query_one(PredictionInput).value == "no"
    drive(app, script)


# --- choice keys, labels, stale errors, cancelled time, evidence widths ----------

def word_choice_exercise(min_choices: int = 2):
    """A choice exercise whose ids are words (the capstone's links, say)."""
    for ex in load_catalog().exercises:
        if ex.kind.name == "choice" and len(ex.choices) >= min_choices and any(len(c) > 1 for c, _ in ex.choices):
            return ex
    pytest.skip(f"the catalog has no choice exercise with {min_choices}+ word ids")


def letter_choice_exercise():
    for ex in load_catalog().exercises:
        if ex.kind.name == "choice" and all(len(c) == 1 for c, _ in ex.choices):
            return ex
    pytest.skip("the catalog has no choice exercise with letter ids")


def prompts(screen) -> list[str]:
    """Each option's label as plain text, in order."""
    option_list = screen.query_one(PredictionInput).query_one(OptionList)
    return [option_list.get_option_at_index(i).prompt.plain for i in range(option_list.option_count)]


async def on_page(pilot, exercise_id: str) -> ExerciseScreen:
    """Open an exercise with the focus on its page (not in a box or the list)."""
    screen = await open_exercise(pilot, exercise_id)
    screen.query_one("#exercise-body").focus()
    await pilot.pause()
    return screen


def choice_keys(name, ids):
    """The keys the prediction widget shows for choices with these ids (or yes/no)."""
    return answers.make(name, choices=[(cid, cid) for cid in ids]).keys()


def test_choice_keys_letters_numbers_and_yes_no():
    assert choice_keys("choice", ["a", "b", "c", "d"]) == ["a", "b", "c", "d"]
    assert choice_keys("bool", ["yes", "no"]) == ["y", "n"]
    words = [f"link{i}" for i in range(12)]
    assert choice_keys("choice", words) == list("1234567890") + ["l", None]  # then a free first letter
    # a letter that is an action key (e: explain) numbers every choice instead
    assert choice_keys("choice", list("abcde")) == ["1", "2", "3", "4", "5"]
    audit = load_catalog().get("audit")
    assert choice_keys("choice", [cid for cid, _ in audit.choices])[-1] == "n"  # none
    # one word among letters: every choice is numbered, so keys never mix
    assert choice_keys("choice", ["a", "b", "other"]) == ["1", "2", "3"]


def test_a_number_picks_a_word_choice_and_letters_do_not(tmp_path):
    ex = word_choice_exercise(min_choices=3)
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await on_page(pilot, ex.id)
        prediction = screen.query_one(PredictionInput)
        await pilot.press("3")
        assert prediction.value == ex.choices[2][0]
        await pilot.press("1")
        assert prediction.value == ex.choices[0][0]
        await pilot.press("c", "t")            # not keys of this list: nothing is picked
        assert prediction.value == ex.choices[0][0]
        assert not screen.query("#prediction-input")
    drive(app, script)


def test_zero_picks_the_tenth_word_choice(tmp_path):
    ex = word_choice_exercise(min_choices=10)
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await on_page(pilot, ex.id)
        await pilot.press("0")
        assert screen.query_one(PredictionInput).value == ex.choices[9][0]
        await pilot.press("9")
        assert screen.query_one(PredictionInput).value == ex.choices[8][0]
    drive(app, script)


def test_a_digit_still_starts_a_typed_answer(tmp_path):
    ex = first_of_kind("number")
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await on_page(pilot, ex.id)
        await pilot.press("2", "5")
        box = screen.query_one("#prediction-input", Input)
        assert screen.focused is box and box.value == "25"
    drive(app, script)


def test_choice_labels_show_the_key_and_the_text_once(tmp_path):
    words, letters = word_choice_exercise(), letter_choice_exercise()
    yes_no = first_of_kind("bool")
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_exercise(pilot, words.id)
        labels = prompts(screen)
        for i, ((cid, text), label) in enumerate(zip(words.choices, labels)):
            if i < 10:
                assert label == f"( ) {'1234567890'[i]}  {text}", label
            else:
                assert label == f"( )    {text}", label  # no key left: the list's arrows and Enter
            # the id is not repeated next to a text that already says it
            assert label.lower().count(cid) == text.lower().count(cid), label
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_exercise(pilot, letters.id)
        assert prompts(screen) == [f"( ) {cid}  {text}" for cid, text in letters.choices]
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_exercise(pilot, "phase-ledger")  # letters a-e, numbered (e is an action key)
        ledger = load_catalog().get("phase-ledger")
        assert prompts(screen) == [f"( ) {n}  {text}  ({cid})" for n, (cid, text) in
                                   zip("12345", ledger.choices)]  # every letter shown: the result names it
        await pilot.press("escape")
        await pilot.pause()
        screen = await on_page(pilot, yes_no.id)
        assert prompts(screen) == ["( ) y  yes", "( ) n  no"]
        await pilot.press("y")
        assert prompts(screen)[0] == "(●) y  yes"
    drive(app, script)


def test_a_new_answer_clears_the_empty_answer_message(tmp_path):
    words = word_choice_exercise()
    typed = first_of_kind("shape")
    runner = FakeRunner()
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await on_page(pilot, words.id)
        error = screen.query_one("#answer-error", Static)
        await pilot.press("r")
        await pilot.pause()
        assert error.has_class("-shown") and "pick a choice first" in text_of(error)
        await pilot.press("2")                 # picking a choice is a new answer
        await pilot.pause()
        assert not error.has_class("-shown") and text_of(error).strip() == ""
        await pilot.press("r")                 # and it runs
        await finish_runs(pilot)
        assert "✓ your prediction matched" in text_of(screen.query_one("#result-text", Static))
        await pilot.press("escape")
        await pilot.pause()

        screen = await open_exercise(pilot, typed.id)
        error = screen.query_one("#answer-error", Static)
        await type_answer(pilot, "banana")
        await pilot.press("enter")
        await pilot.pause()
        assert error.has_class("-shown")
        await pilot.press("backspace")         # editing the typed answer clears it too
        await pilot.pause()
        assert not error.has_class("-shown")
    drive(app, script)
    assert runner.calls == [(words.id, words.choices[1][0])]


class FakeClock:
    """Stands in for the session's ``time`` module: the test moves ``now``."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


def test_a_cancelled_run_shows_how_long_it_ran(tmp_path, monkeypatch):
    from tutor.app import run as run_module
    clock = FakeClock()
    monkeypatch.setattr(run_module, "time", clock)
    ex = first_of_kind("shape")
    runner = FakeRunner(slow=True)           # its cancelled result carries no duration, like the real runner's
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_answer(pilot, "3x3")
        await pilot.press("enter")
        await asyncio.to_thread(runner.started.wait, 5)
        assert runner.started.is_set()
        clock.now += 3.25                      # the run "ran" 3.25 s before Esc
        await pilot.press("escape")
        await finish_runs(pilot)
        text = text_of(screen.query_one("#result-text", Static))
        assert "the run was cancelled" in text
        device = next(line for line in text.splitlines() if "device" in line)
        assert "3.25 s" in device and "0.00 s" not in device, device
    drive(app, script)


def panel_lines(screen) -> list[str]:
    """The result text exactly as the TUI laid it out, one string per screen row."""
    static = screen.query_one("#result-text", Static)
    width, height = static.size
    return [strip.text.rstrip() for strip in static.render_lines(Region(0, 0, width, height))]


LONG_TITLE = "What the loss compared, a title longer than its narrow table"  # fits 80 columns
LONG_VERDICT = ("initial loss 3.641 / ln 37 = 3.611: ratio 1.01; one-example CE by hand 3.55123 vs F 3.55123; "
                "reported loss model 3.64 vs mean by hand 3.64")


def canned_wide_evidence(exercise, prediction):
    result = canned_pass(exercise, prediction)
    result.evidence = {"faulted": [
        {"type": "table", "title": LONG_TITLE, "columns": ["quantity", "value"], "rows": [["loss", "1.33"]]},
        {"type": "table", "title": "Audit", "columns": ["#", "link", "status", "verdict"],
         "rows": [["5", "INIT", "ok", LONG_VERDICT]]}]}
    return result


@pytest.mark.parametrize("width", [120, 80])
def test_evidence_titles_and_verdicts_are_shown_in_full(tmp_path, width):
    ex = first_of_kind("shape")
    app, _ = make_app(tmp_path, FakeRunner(make=canned_wide_evidence))

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_and_run(pilot, "3x3")
        lines = panel_lines(screen)
        assert max(len(line) for line in lines) <= width
        # the title is one line, not folded to the narrow table's width
        assert any(LONG_TITLE in line for line in lines), "\n".join(lines)
        # the verdict may wrap inside its cell, but every word of it is there, in order, and nothing is cut
        audit = lines[next(i for i, line in enumerate(lines) if "Audit" in line):]
        verdict = " ".join(line.split("│")[4].strip() for line in audit if line.count("│") == 5)
        assert verdict.split() == LONG_VERDICT.split(), "\n".join(lines)
        assert "…" not in "\n".join(lines)
    drive(app, script, size=(width, 40))


def test_the_explain_back_question_is_reflowed_not_broken_at_the_files_line_ends(tmp_path):
    app, _ = make_app(tmp_path)
    ex = load_catalog().get("audit")
    assert "\n" in ex.explain.strip()  # the catalog breaks its lines

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        assert "hidden fault" in text_of(screen.query_one(".fault-summary", Static))  # not "nothing is edited"
        question = text_of(screen.query_one(".note-question", Static))
        assert "\n" not in question.strip() and "Which later links also failed" in question
    drive(app, script, size=(80, 24))


def test_moving_the_cursor_at_home_does_not_reread_progress(tmp_path):
    class CountingStore(ProgressStore):
        loads = 0

        def load(self, *args, **kwargs):
            CountingStore.loads += 1
            return super().load(*args, **kwargs)
    app = build_app(load_catalog(), CountingStore(tmp_path), LEARNER, FakeRunner())

    async def script(pilot):
        before = CountingStore.loads
        for _ in range(6):
            await pilot.press("down")
        await pilot.pause()
        assert CountingStore.loads == before
        assert "prediction(s)" in text_of(pilot.app.screen.query_one("#home-detail-text", Static))
    drive(app, script)


# --- the ✗ verdict, rendered; saves off the UI thread; progress read once -------------

def result_rows(screen) -> dict[str, str]:
    """The result's comparison table as {label: value}."""
    rows = {}
    for line in panel_lines(screen):
        cells = [c.strip() for c in line.strip("│").split("│")]
        if len(cells) == 2 and cells[0]:
            rows[cells[0]] = cells[1]
    return rows


def test_a_wrong_prediction_is_shown_as_did_not_match_and_recorded_as_such(tmp_path):
    runner = FakeRunner(make=observing(clean="a", faulted="b"))  # head-split: the fault makes b happen
    app, _ = make_app(tmp_path, runner)

    async def script(pilot):
        screen = await open_exercise(pilot, "head-split")
        await pick_and_run(pilot, "c")
        text = text_of(screen.query_one("#result-text", Static))
        assert "✗ your prediction did not match the observation" in text
        assert "✓" not in text
        rows = result_rows(screen)
        assert (rows["your prediction"], rows["observed"], rows["clean subject"]) == ("c", "b", "a")
        await pilot.press("escape")
        await pilot.pause()
        tree = pilot.app.screen.query_one(ExerciseTree)
        assert next(n.label.plain for n in walk(tree.root) if n.data == "head-split").startswith("✗")
        screen = await open_exercise(pilot, "head-split")
        history = text_of(screen.query_one("#exercise-history", Static))
        assert "✗ not solved yet · 1 prediction(s); last: you said c, the check observed b" in history
        await pick_and_run(pilot, "b")
        assert "✓ your prediction matched the observation" in text_of(screen.query_one("#result-text", Static))
    drive(app, script, size=(100, 40))
    attempts = saved(tmp_path)["exercises"]["head-split"]["attempts"]
    assert [(a["prediction"], a["observed"], a["correct"], a["status"]) for a in attempts] == \
        [("c", "b", False, "fail"), ("b", "b", True, "pass")]


def test_a_wrong_typed_answer_is_graded_by_the_tutor_not_the_fake(tmp_path):
    ex = first_of_kind("shape")
    app, _ = make_app(tmp_path, FakeRunner(make=observing(clean=[3], faulted=[3, 3])))

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        await type_and_run(pilot, "3x1")
        assert "✗ your prediction did not match" in text_of(screen.query_one("#result-text", Static))
        assert result_rows(screen)["your prediction"] == "(3, 1)"
    drive(app, script, size=(100, 40))
    attempt = saved(tmp_path)["exercises"][ex.id]["attempts"][0]
    assert (attempt["prediction"], attempt["correct"]) == ("(3, 1)", False)


def test_attempts_are_saved_off_the_ui_thread_and_progress_is_read_once(tmp_path):
    class WatchedStore(ProgressStore):
        loads = 0
        saved_on: list = []

        def load(self, *args, **kwargs):
            WatchedStore.loads += 1
            return super().load(*args, **kwargs)

        def record_attempt(self, *args, **kwargs):
            WatchedStore.saved_on.append(threading.current_thread() is threading.main_thread())
            return super().record_attempt(*args, **kwargs)
    app = build_app(load_catalog(), WatchedStore(tmp_path), LEARNER, FakeRunner())

    async def script(pilot):
        screen = await open_exercise(pilot, "head-split")
        await pick_and_run(pilot, "a")
        assert "✓" in text_of(screen.query_one("#result-text", Static))
        await pilot.press("escape")
        await pilot.pause()
        await open_exercise(pilot, "head-split")
    drive(app, script)
    assert threading.current_thread() is threading.main_thread()  # the app ran its UI on this thread
    assert WatchedStore.saved_on == [False]
    assert WatchedStore.loads == 1  # once at start; the screens read the session's copy


def test_a_paused_note_is_saved_off_the_ui_thread_and_the_last_one_on_quit(tmp_path):
    class WatchedStore(ProgressStore):
        saved_on: list = []

        def save_note(self, learner, exercise_id, text):
            WatchedStore.saved_on.append((text, threading.current_thread() is threading.main_thread()))
            return super().save_note(learner, exercise_id, text)
    ex = load_catalog().exercises[0]
    app = build_app(load_catalog(), WatchedStore(tmp_path), LEARNER, FakeRunner())

    async def script(pilot):
        screen = await open_note(pilot, ex.id)
        await pilot.press(*"view")
        await pilot.pause(1.5)  # the debounce fires: saved in a thread
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert "Saved." in text_of(screen.query_one(".note-status", Static))
        await pilot.press(*" it")
        await pilot.press("ctrl+c")  # quitting saves what is left at once, on the UI thread
    drive(app, script)
    assert WatchedStore.saved_on == [("view", False), ("view it", True)]
    assert saved(tmp_path)["exercises"][ex.id]["note"] == "view it"
