"""The README's screenshots, taken by this test with Textual's ``save_screenshot`` so they never go stale.

Each entry of :data:`SHOTS` is one SVG in ``docs/screenshots/``: the app is
started on a fixed progress file, the entry's exercise is opened and its keys
pressed, and the screen is saved. The result screenshot runs its check with
the real worker (its numbers are measured, never made up). Each is compared
with the committed SVG — its text, digits aside, since a run's duration
differs from one run to the next — and a screen that shows something else
fails the test. To accept a change of the UI, run the test with
``TUTOR_UPDATE_SCREENSHOTS=1``: the SVGs are rewritten; commit them with it.

Adding a screenshot is one line in :data:`SHOTS` (fix mode, say:
``Shot("fix-mode", open="head-split", keys=("f",))``).
"""

from __future__ import annotations

import asyncio
import html
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("textual")

from test_tui import LEARNER, FakeRunner, shows_page, wait_until  # noqa: E402
from tutor.store.catalog_cache import load_catalog  # noqa: E402
from tutor.model.attempts import Attempt  # noqa: E402
from tutor.store.progress import ProgressStore  # noqa: E402
from tutor.ui.app import build_app  # noqa: E402
from tutor.ui.widgets.exercise_tree import ExerciseTree  # noqa: E402

SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
#: Set to 1 to rewrite the committed screenshots with what the screens show now.
UPDATE_ENV = "TUTOR_UPDATE_SCREENSHOTS"
#: Pixels per terminal column in Rich's SVG export (0.61 of its 20 px font).
CELL_WIDTH = 12.2


@dataclass(frozen=True)
class Shot:
    """One screenshot.

    Attributes:
        name: the file is ``docs/screenshots/<name>.svg``.
        open: the exercise to open from the home screen first, or None to stay there.
        keys: keys pressed then (``p`` opens the progress screen, ``y`` answers yes, ``r`` runs).
        run: the keys start a check: wait for it (it runs with the real worker).
        scroll_to: a CSS selector to scroll into view before the screenshot, or None.
        size: the terminal's columns and rows.
        shows: words the screenshot must show (it is checked, then saved).
    """

    name: str
    open: str | None = None
    keys: tuple[str, ...] = ()
    run: bool = False
    scroll_to: str | None = None
    size: tuple[int, int] = (100, 32)
    shows: tuple[str, ...] = ()


SHOTS = [
    Shot("home", shows=("continue:", "due for review", "✓", "✗")),
    Shot("result", open="ce-on-probs", keys=("n", "r"), run=True, scroll_to="SeriesPlot", size=(100, 36),
         shows=("clean", "faulted", "nats")),
    Shot("progress", keys=("p",), size=(100, 52), shows=("Totals", "Brier score", "Accuracy over time")),
    Shot("fix-mode", open="head-split", keys=("f",), shows=("Fix it",)),
    Shot("break-mode", open="head-split", keys=("B",), shows=("Break it", "Predict first")),
]

T0 = datetime(2026, 1, 5, 9, 30, tzinfo=timezone.utc)


def fixture_progress(store: ProgressStore) -> None:
    """A learner three days in: a few solved, one not, confidences given, three due for review.

    Each observation is what the check observes (``tutor check`` shows them), so the pictures never
    show a made-up outcome.
    """
    def record(exercise_id, minutes, correct, confidence, prediction, observed):
        store.record_attempt(LEARNER, exercise_id, Attempt(
            time=(T0 + timedelta(minutes=minutes)).isoformat(timespec="seconds"), prediction=prediction,
            observed=observed, correct=correct, status="pass" if correct else "fail", device="cpu",
            engine_hash="3f2a9c0d1b7e", confidence=confidence))
    record("broadcast-loss", 0, True, 90, "(3, 3)", "(3, 3)")
    record("squeeze-batch", 7, False, 80, "(1, 5)", "(5,)")
    record("squeeze-batch", 9, True, 100, "(5,)", "(5,)")
    record("softmax-axis", 60 * 24, True, 70, "no", "no")
    record("index-assign", 60 * 48, True, 60, "no", "no")
    record("pairwise-index", 60 * 48 + 12, False, 90, "(3, 3)", "(3,)")
    store.save_note(LEARNER, "broadcast-loss", "Subtracting (3,) from (3, 1) broadcasts to (3, 3): every "
                                               "prediction meets every target, so the loss is never zero.")


def visible_text(svg: str) -> str:
    """What a screenshot shows, row by row (Rich's SVG keeps each run of text in a <text> element)."""
    rows: dict[float, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(m[2]), []).append((float(m[1]), html.unescape(m[3])))
    lines = []
    for _, parts in sorted(rows.items()):
        line = ""
        for x, text in sorted(parts):
            line = line.ljust(round(x / CELL_WIDTH)) + text
        lines.append(line.replace("\xa0", " ").rstrip())
    return "\n".join(lines)


def same_picture(old: str, new: str) -> bool:
    """Whether two screenshots show the same, digits and scrollbar thumbs aside (a run's duration
    and the page's exact length vary)."""
    def mask(svg):
        return re.sub(r"[▁▂▃▄▅▆▇█]", "", re.sub(r"\d", "0", visible_text(svg)))
    return mask(old) == mask(new)


async def take(shot: Shot, app) -> str:
    async with app.run_test(size=shot.size) as pilot:
        await pilot.pause()
        if shot.open:
            home = pilot.app.screen
            tree = home.query_one(ExerciseTree)
            # a move made before the home screen's own move to the continue point stands (that move is skipped)
            tree.move_to(shot.open)
            await wait_until(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data == shot.open,
                             f"the cursor on {shot.open}")
            await pilot.pause()
            await pilot.press("enter")
            await wait_until(pilot, lambda: shows_page(pilot, shot.open), f"the page of {shot.open}")
            pilot.app.screen.query_one("#exercise-body").focus()
            await pilot.pause(0.5)                  # a single key press, not typing
        for key in shot.keys:
            await pilot.press(key)
            await pilot.pause(0.5)
        if shot.run:
            await asyncio.to_thread(pilot.app.warmed.wait, 120)
            for _ in range(600):
                await pilot.pause(0.1)
                if not getattr(pilot.app.screen, "running", False):
                    break
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if shot.scroll_to:
            pilot.app.screen.query_one(shot.scroll_to).scroll_visible(animate=False)
        for _ in range(3):
            await pilot.pause(0.1)
        pilot.app.clear_notifications()
        await pilot.pause()
        return pilot.app.export_screenshot(title=f"tutor — {shot.name}")


@pytest.mark.parametrize("shot", SHOTS, ids=[s.name for s in SHOTS])
def test_screenshot(shot, tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)          # the screens show the progress file as progress/ada.toml
    monkeypatch.delenv("VISUAL", raising=False)  # edit mode opens the built-in editor, whatever the shell has
    monkeypatch.delenv("EDITOR", raising=False)
    store = ProgressStore(Path("progress"))
    if not shot.run:
        fixture_progress(store)
    if shot.run:
        runner = request.getfixturevalue("runner")      # the real worker: the result is measured
    else:
        runner = FakeRunner(make=lambda *a: pytest.fail("this screenshot runs no check"))
        runner.warm_up = lambda: {"torch": "2.13.0+cpu", "cuda": False}  # the header as a real start shows it
    app = build_app(load_catalog(), store, LEARNER, runner)
    svg = asyncio.run(take(shot, app))
    text = visible_text(svg)
    for word in shot.shows:
        assert word in text, f"{shot.name} does not show {word!r}:\n{text}"
    if shot.run:
        assert "could not finish" not in text and "ran out of time" not in text, text
    target = SCREENSHOTS / f"{shot.name}.svg"
    if target.exists() and same_picture(target.read_text(encoding="utf-8"), svg):
        return
    if os.environ.get(UPDATE_ENV) == "1":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(svg, encoding="utf-8")
        return
    committed = visible_text(target.read_text(encoding="utf-8")) if target.exists() else "(no committed screenshot)"
    pytest.fail(f"{shot.name}: the screen no longer shows what docs/screenshots/{shot.name}.svg shows; if the "
                f"change is meant, rerun with {UPDATE_ENV}=1 and commit the SVG.\n--- committed\n{committed}\n"
                f"--- now\n{text}")
