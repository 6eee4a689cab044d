"""What the tutor does, the flow, and the keys."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown

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

Nothing is stored as an answer key: every observation is measured when you
press Run. If the faulted code crashes or runs out of time, that is shown as
the outcome.

## Keys

| key | where | does |
|---|---|---|
| Enter | list | open the exercise (the cursor starts on the one to continue with) |
| / | list | find: filter by id, title, set or words of the prompt (Esc clears) |
| x | list | reset the highlighted exercise (asks first; its attempts are kept) |
| Ctrl+P | anywhere | the command palette: "open cache-offset" opens any exercise |
| r | exercise | run the check (Enter in the answer box too) |
| h | exercise | reveal the next hint |
| a | exercise | move to the answer box (typing a digit or bracket starts the answer too) |
| a, b, c… / 1, 2, 3… / y, n | choice exercise | pick the choice with that key (shown beside it) / yes or no |
| e | exercise | move to the explain-back note (it appears after the first run) |
| 5 6 7 8 9 0 | exercise | how sure you are: 50 … 90 %, 0 for 100 % (optional, saved with the attempt; on pages where digits answer, Tab to it) |
| n (N on yes/no pages) | exercise, after a result | open the next exercise |
| u | progress | show or hide the untried exercises; Enter opens one |
| Esc | exercise | cancel a running check; otherwise go back |
| Tab / Shift+Tab | anywhere | move between parts of the screen |
| p | anywhere | your progress: attempts and notes |
| ? or F1 | anywhere | this help |
| Esc | help, progress | back |
| q, Ctrl+C, Ctrl+Q | anywhere | quit (notes are saved first) |

While you type in a text box, letters go into the box: use Tab to leave it,
or F1 for help and Ctrl+Q to quit. On a choice or yes/no page a key picks only
when pressed on its own: typed words pick nothing and reveal no hint.

An exercise you answered wrongly, or rightly but under 70 % sure, comes back
for review after 1, 3 and 7 days (↻ on the list; `tutor review` lists them).
"""


class HelpScreen(Screen):
    """The help text in a scrolling view."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="help-body"):
            yield Markdown(HELP)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()
