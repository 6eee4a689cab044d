"""The prediction widget: a list to pick from for choice and bool, a typed line otherwise."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from tutor.catalog import Exercise


class PredictionInput(Vertical):
    """Where the learner states a prediction, shaped by the exercise's kind.

    * ``choice``: an option list of the choices; Enter or a click picks one.
    * ``bool``: the same with ``yes`` and ``no``.
    * anything else: an input whose placeholder is the answer format;
      Enter posts :class:`PredictionInput.Submitted`.

    ``value`` is always the text to hand to ``answers.parse`` (empty when
    nothing was picked, so parsing names the expected format).
    """

    DEFAULT_CSS = """
    PredictionInput {
        height: auto;
    }
    PredictionInput > OptionList {
        height: auto;
        max-height: 12;
    }
    """

    class Submitted(Message):
        """Enter was pressed in the typed-answer input: the learner wants to run."""

    def __init__(self, exercise: Exercise, **kwargs) -> None:
        """Args:
            exercise: the exercise whose kind and choices shape the widget.
        """
        super().__init__(**kwargs)
        self.exercise = exercise
        if exercise.kind == "choice":
            self.options = list(exercise.choices)
        elif exercise.kind == "bool":
            self.options = [("yes", "yes"), ("no", "no")]
        else:
            self.options = []
        self.chosen: str | None = None

    def compose(self) -> ComposeResult:
        if self.options:
            yield OptionList(*[Option(self._prompt(cid, text), id=cid) for cid, text in self.options],
                             id="prediction-options")
        else:
            yield Input(placeholder=self.exercise.answer_format, id="prediction-input", select_on_focus=False)

    @property
    def value(self) -> str:
        """The prediction as text (a choice id, yes/no, or what was typed)."""
        if self.options:
            return self.chosen or ""
        return self.query_one(Input).value

    def set_value(self, text: str) -> None:
        """Put a prediction in the widget (a choice id for lists, any text otherwise)."""
        if self.options:
            self._choose(text)
        else:
            self.query_one(Input).value = text

    def focus_input(self) -> None:
        """Focus the list or the input."""
        (self.query_one(OptionList) if self.options else self.query_one(Input)).focus()

    def _prompt(self, cid: str, text: str) -> Text:
        picked = cid == self.chosen
        mark = ("(●) ", "bold green") if picked else ("( ) ", "")
        if self.exercise.kind == "bool":
            return Text.assemble(mark, (text, "bold" if picked else ""))
        return Text.assemble(mark, (cid, "bold"), f"  {text}")

    def _choose(self, cid: str) -> None:
        if cid not in {c for c, _ in self.options}:
            return
        self.chosen = cid
        option_list = self.query_one(OptionList)
        for index, (option_id, text) in enumerate(self.options):
            option_list.replace_option_prompt_at_index(index, self._prompt(option_id, text))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self._choose(event.option.id)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Submitted())
