"""What the tutor does, the flow, and the keys — every key of every screen, read from the screens' own
``BINDINGS`` (:mod:`tutor.ui.keys`), so the help cannot fall behind them."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Markdown, TextArea

from tutor.ui.keys import PageFooter, PageScreen, key_rows

HELP = """\
# tutor

`tutor` teaches PyTorch and GPT internals by **breaking real code on purpose**.
Each exercise names a *fault*: a small, exact edit of real source (usually the
`engine` GPT), shown to you as a diff. The tutor applies it to a private copy —
never to the files on disk — runs a check on CPU or CUDA, and shows what it
observed next to what you predicted, with the evidence.

## The flow

1. **Read** the prompt and the fault's diff.
2. **Predict** what the change will do: pick a choice, or type an answer in
   the format shown.
3. **Run** the check (`r`). A pass or fail is saved as an attempt.
4. **Compare** your prediction with the observation and the evidence.
   Hints (`h`) come one at a time: first a nudge, then the mechanism.
5. **Explain back** in your own words. The note saves as you type.
6. **Fix it** (`f`) repairs the fault in your own copy of the file; **Break it**
   (`b`) has you predict first, then write a fault of your own. The tutor runs
   your file and measures what it does. On the capstone, `f` is **Find and fix**.

Nothing is stored as an answer key: every observation is measured when you
press Run. If the faulted code crashes or runs out of time, that is shown as
the outcome.

{keys}

While you type in a text box, letters go into the box: use Tab to leave it,
or F1 for help and Ctrl+Q to quit. On a choice or yes/no page a key picks only
when pressed on its own: typed words pick nothing and reveal no hint.

An exercise you answered wrongly, or rightly but under 70 % sure, comes back
for review after 1, 3 and 7 days (↻ on the list; `tutor review` lists them).
"""


def keys_markdown(app_class) -> str:
    """The help's ``## Keys`` section: one table per screen, made from each screen's ``BINDINGS`` and ``PAGE_KEYS``.

    Args:
        app_class: the app's class (its own keys are the "Anywhere" table).
    """
    # deferred: the screens are read only when the help opens (the home screen appears sooner)
    from tutor.ui.screens.copy_choice import CopyChoiceScreen
    from tutor.ui.screens.exercise import ExerciseScreen
    from tutor.ui.screens.fix import EditScreen
    from tutor.ui.screens.home import ConfirmReset, HomeScreen
    from tutor.ui.screens.progress import ProgressScreen
    from tutor.ui.widgets.code_editor import CodeEditor
    from tutor.ui.widgets.confidence import ConfidencePicker

    app_first = frozenset(b.key for b in app_class.BINDINGS if b.priority)  # ctrl+c quits, wherever you are
    sections = [
        ("Anywhere", key_rows(app_class, App, Screen, skip=app_first)),
        ("The list of exercises (home)", key_rows(HomeScreen)),
        ("Resetting an exercise (the question)", key_rows(ConfirmReset)),
        ("An exercise", key_rows(ExerciseScreen)),
        ("How sure you are (the confidence line of an exercise, from the question's chance to 100 %; Tab to it)",
         key_rows(ConfidencePicker)),
        ("Fix it, Break it, Find and fix (edit mode)", key_rows(EditScreen)),
        ("The built-in code editor", key_rows(CodeEditor)),
        # the keys the code editor binds itself are its own table's, not the text area's
        ("Editing in the built-in code editor (Textual's text area)",
         key_rows(TextArea, skip=app_first | _declared_keys(CodeEditor))),
        ("Continue your working copy, or start fresh (the question)", key_rows(CopyChoiceScreen)),
        ("Progress", key_rows(ProgressScreen)),
        ("This help", key_rows(HelpScreen)),
    ]
    parts = ["## Keys"]
    for title, rows in sections:
        parts += [f"\n### {title}\n", "| key | does |", "|---|---|"]
        parts += [f"| {_cell(keys)} | {_cell(does)} |" for keys, does in rows]
    return "\n".join(parts)


def _declared_keys(owner) -> frozenset[str]:
    """The keys ``owner`` binds in its own ``BINDINGS`` (each key of a binding such as ``home,ctrl+a``)."""
    return frozenset(key.strip() for binding in owner.__dict__.get("BINDINGS", [])
                     for key in (binding.key if isinstance(binding, Binding) else binding[0]).split(","))


def _cell(text: str) -> str:
    """Text for a Markdown table cell (a bar would end the cell)."""
    return text.replace("|", "\\|")


def help_markdown(app_class) -> str:
    """The whole help text, keys included (``app_class``: the app's class)."""
    return HELP.replace("{keys}", keys_markdown(app_class))


class HelpScreen(PageScreen):
    """The help text in a scrolling view."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    PAGE_KEYS = (("↑ ↓ PgUp PgDn", "scroll the help"),)

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="help-body"):
            yield Markdown(help_markdown(type(self.app)))
        yield PageFooter()

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()
