"""The prediction widget: a list to pick from for choice and bool, a typed line otherwise."""

from __future__ import annotations

import re

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from tutor.model.catalog import Exercise
from tutor.ui.widgets.ordered_input import OrderedInput


def _says(text: str, cid: str) -> bool:
    """Whether a choice's text shows its id as a whole word (``task`` in ``TASK``; never a lone letter)."""
    return len(cid) > 1 and re.search(rf"\b{re.escape(cid)}\b", text, re.IGNORECASE) is not None


class PredictionInput(Vertical):
    """Where the learner states a prediction, shaped by the exercise's kind.

    * ``choice``: an option list of the choices; Enter or a click picks one,
      and so does the key shown beside it (see :func:`choice_keys`).
    * ``bool``: the same with ``yes`` (y) and ``no`` (n).
    * anything else: an input whose placeholder is the answer format;
      Enter posts :class:`PredictionInput.Submitted`.

    ``value`` is always the text to hand to the kind's ``parse`` (empty when
    nothing was picked, so parsing names the expected format). Every change
    of ``value`` posts :class:`PredictionInput.Changed`.
    """

    DEFAULT_CSS = """
    PredictionInput {
        height: auto;
    }
    PredictionInput > OptionList {
        height: auto;
        max-height: 14;
    }
    """

    class Submitted(Message):
        """Enter was pressed in the typed-answer input: the learner wants to run."""

    class Changed(Message):
        """The prediction changed (a choice was picked, or the typed text was edited)."""

    def __init__(self, exercise: Exercise, **kwargs) -> None:
        """Args:
            exercise: the exercise whose kind and choices shape the widget.
        """
        super().__init__(**kwargs)
        self.exercise = exercise
        # the options and their keys live with the kind that reads them
        self.options = list(exercise.kind.options)
        self.keys = exercise.kind.keys() if self.options else []
        self.chosen: str | None = None

    def compose(self) -> ComposeResult:
        if self.options:
            yield OptionList(*[Option(self._prompt(index), id=cid) for index, (cid, _) in enumerate(self.options)],
                             id="prediction-options")
        else:
            # r runs where no answer has an r (numbers): the key the page and the footer give for running
            run = frozenset("r") if self.exercise.kind.run_key_is_free else frozenset()
            yield OrderedInput(placeholder=self.exercise.answer_format, id="prediction-input", select_on_focus=False,
                               submit_keys=run)

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

    def restore(self, chosen: str | None) -> None:
        """Put back an earlier pick (None: nothing picked), as when a typed word undoes a key's pick."""
        if not self.options or chosen == self.chosen:
            return
        if chosen is not None:
            self._choose(chosen)
            return
        self.chosen = None
        option_list = self.query_one(OptionList)
        for index in range(len(self.options)):
            option_list.replace_option_prompt_at_index(index, self._prompt(index))
        self.post_message(self.Changed())

    def choice_for_key(self, key: str) -> str | None:
        """The id of the choice this key picks, or None (not a choice's key)."""
        key = key.lower()
        for (cid, _), choice_key in zip(self.options, self.keys):
            if choice_key is not None and choice_key == key:
                return cid
        return None

    def focus_input(self) -> None:
        """Focus the list or the input."""
        (self.query_one(OptionList) if self.options else self.query_one(Input)).focus()

    def _prompt(self, index: int) -> Text:
        """``(●) key  text``: the key once, then the text; the id only where the text does not say it."""
        cid, text = self.options[index]
        picked = cid == self.chosen
        mark = ("(●) ", "bold green") if picked else ("( ) ", "")
        key = self.keys[index] or ""
        width = max(len(k or "") for k in self.keys)
        parts = [mark, (key.ljust(width), "bold"), "  ", (text, "bold" if picked else "")]
        if key != cid.lower() and not _says(text, cid):
            parts.append((f"  ({cid})", "dim"))  # the result names the choice by its id: show it
        return Text.assemble(*parts)

    def _choose(self, cid: str) -> None:
        if cid not in {c for c, _ in self.options}:
            return
        changed = cid != self.chosen
        self.chosen = cid
        option_list = self.query_one(OptionList)
        for index in range(len(self.options)):
            option_list.replace_option_prompt_at_index(index, self._prompt(index))
        if changed:
            self.post_message(self.Changed())

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self._choose(event.option.id)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Changed())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Submitted())
