"""How an exercise page reads single keys: a choice picked by its key, a typed word told from key presses.

On a choice or yes/no page the key shown beside a choice picks it, and
single keys act (h a hint, n the next exercise); but a learner who types a
word there should not fire one action per letter. A letter that follows
another within :data:`WORD_GAP_S` is typing: what the word's first key did
is undone and keys do nothing until typing pauses; an ``e`` that starts
no word moves to the note at once once the note shows, so the note typed
right behind it is the note's. A confidence key read from the page (a digit, g)
then Enter runs the check, as Enter on the confidence line does. On a
typed-answer page,
any printable key that is no command starts the answer in its box, so
nothing typed is lost. The app hands keys on one at a time
(:mod:`tutor.ui.key_order`), so each key here is read in the state the
keys before it left; keys typed while the page was being made are held
by the app until it is first drawn (:attr:`ReadingKeys.keys_ready`), then
read here in order, as typed for this page: Enter on a listed exercise
and its answer typed at once reach this page. Only a page the learner did
not pick (n opened the one after) drops the printable keys typed before
it was drawn, and says so: they cannot answer a question not yet seen
(n then N 7 was typed for the page left).

:class:`ReadingKeys` is mixed into :class:`tutor.ui.screens.exercise.ExerciseScreen`,
whose widgets (the prediction, the confidence, the result panel) and
actions it drives.
"""

from __future__ import annotations

import time

from textual.widgets import Input, TextArea

from tutor.model import answers
from tutor.ui.widgets.confidence import GUESS_KEY, ConfidencePicker
from tutor.ui.widgets.note_editor import NoteEditor
from tutor.ui.widgets.prediction import PredictionInput
from tutor.ui.widgets.result_panel import ResultPanel

#: Keys pressed closer together than this (seconds) are typing, not single key presses.
WORD_GAP_S = 0.35
#: On a choice or yes/no page, these single keys act only once no other letter follows
#: within WORD_GAP_S (so typing a word never reveals a hint or leaves the page).
_HELD_KEYS = set("heanNpq?")


class ReadingKeys:
    """The exercise page's ``on_key``: keys that answer or act straight away while reading."""

    #: single keys that keep their meaning while reading; any other printable
    #: key starts typing the answer (when the answer box is a text box). The
    #: action keys no choice may take, plus a (to the answer box) and ? (help).
    _COMMAND_KEYS = set(answers.ACTION_KEYS) | set("a?") | set("fbFB")
    # telling single key presses from typed words (choice and yes/no pages)
    _last_letter_at: float | None = None
    _word_until = 0.0
    _undo = None  # undoes what the last single key did, if a word follows
    _said_words = False
    _confidence_keyed = False  # whether the last key read was a confidence key from the page
    #: when the page was first drawn (``time.monotonic``), or None before: until then the app holds
    #: the keys typed for this page (:mod:`tutor.ui.key_order`), so none lands in the page being left
    shown_at: float | None = None
    #: whether the learner did not pick this page (n opened the exercise after the last): then the
    #: printable keys typed before it was drawn were meant for the page left, and are dropped
    unseen = False
    _said_typed_early = False  # whether the page said it dropped such keys (it says so once)

    @property
    def keys_ready(self) -> bool:
        """Whether the page reads keys: once it is first drawn, its focus set."""
        return self.shown_at is not None and self.focused is not None

    def mark_shown(self) -> None:
        """The page is on the screen: the keys held for it are handed on, in the order typed."""
        self.shown_at = time.monotonic()
        ready = getattr(self.app, "screen_ready_for_keys", None)
        if ready is not None:
            ready()

    def on_key(self, event) -> None:
        """Keys that answer straight away while reading.

        For a choice (or yes/no) exercise, the key shown beside a choice (its
        letter, its number 1…9 / 0 when the ids are words, or y / n) picks it.
        For a typed answer, any printable key that is not a command
        key starts the answer in the answer box, so nothing typed is lost.
        """
        after_confidence, self._confidence_keyed = self._confidence_keyed, False
        if event.key == "enter" and (isinstance(self.focused, ConfidencePicker)
                                     or (after_confidence and self.focused is self.query_one("#exercise-body"))):
            event.stop()
            # Enter runs from the confidence (after Tab from a typed answer), and right after a confidence
            # key read from the page (y 7 Enter on a yes/no page), as it runs from the answer box
            self.action_run()
            return
        char = event.character
        if char is None or not char.isprintable():
            return
        prediction = self.query_one(PredictionInput)
        if isinstance(self.focused, TextArea):
            return
        if self.unseen and event.time < (self.shown_at or float("inf")):
            event.stop()
            event.prevent_default()
            self._say_typed_before_shown()
            return
        if prediction.options:
            if char in "FB":
                return  # capitals open Fix it / Break it even where f or b picks a choice
            self._choice_page_key(event, char, prediction)
            return
        if char.isspace():
            return
        if char == "n" and self.query_one(ResultPanel).has_class("-shown"):
            return  # the binding opens the next exercise
        if self.focused is self.query_one("#exercise-body") and char not in self._COMMAND_KEYS:
            event.stop()
            event.prevent_default()
            box = prediction.query_one(Input)
            self.set_focus(box)  # at once, so the next key already lands in the box
            box.value = ""  # typing from the page starts a new answer (press a to edit the old one)
            box.insert_text_at_cursor(char)

    def _choice_page_key(self, event, char: str, prediction: PredictionInput) -> None:
        """A key on a choice or yes/no page: a single key press picks or acts; typed words do nothing.

        A letter that follows another letter within :data:`WORD_GAP_S` is
        typing: what the word's first key did is undone (a pick goes back to
        the earlier one; a held key such as h never acts), and keys do
        nothing until typing pauses. ``r`` (run), and ``g`` (a guess) where
        no choice takes it, take no part in telling words apart, so a pick
        then g then r says a guess and runs at once; inside a word they do
        nothing like every other key. ``e`` that starts no word, once the
        note shows, moves to the note at once (it is not held like h), so
        the words typed right behind it are the note's.
        """
        now = time.monotonic()
        guess = char == GUESS_KEY and prediction.choice_for_key(char) is None
        letter = char.isalpha() and char != "r" and not guess
        typing = now < self._word_until
        follows = letter and self._last_letter_at is not None and now - self._last_letter_at < WORD_GAP_S
        self._last_letter_at = now if letter else None
        if typing or follows:
            event.stop()
            event.prevent_default()
            if not typing:
                if self._undo is not None:
                    self._undo()
                self._say_typing_picks_nothing(prediction)
            self._undo = None
            self._word_until = now + WORD_GAP_S
            return
        self._undo = None
        if char.isspace():
            return
        choice = None if char == "N" and "n" in prediction.keys else prediction.choice_for_key(char)
        if choice is not None:
            event.stop()
            event.prevent_default()
            before = prediction.chosen
            prediction.set_value(choice)
            self._undo = lambda: prediction.restore(before)
            return
        if self.query_one(ConfidencePicker).set_from_key(char):
            event.stop()
            event.prevent_default()
            self._confidence_keyed = True  # an Enter right after it runs the check
            return
        if char == "e" and self.query_one(NoteEditor).display:
            # no choice took e: to the note at once, so the keys typed after it are the note's, never a word
            event.stop()
            event.prevent_default()
            self._last_letter_at = None  # the next key read here (after Esc) starts no word with it
            self.action_explain()
            return
        if char in _HELD_KEYS:
            event.stop()
            event.prevent_default()
            timer = self.set_timer(WORD_GAP_S, lambda: self._act_on_held_key(char))
            self._undo = timer.stop

    def _act_on_held_key(self, char: str) -> None:
        """A held key that no other letter followed: act on it now."""
        self._undo = None
        if not self.is_current:
            return
        if char in "nN":
            self.action_next()
        elif char == "h":
            self.action_hint()
        elif char == "e":
            self.action_explain()
        elif char == "a":
            self.action_answer()
        elif char == "p":
            self.app.action_progress()
        elif char == "?":
            self.app.action_help()
        elif char == "q":
            self.app.action_quit()

    def _say_typed_before_shown(self) -> None:
        if not self._said_typed_early:
            self._said_typed_early = True
            self.notify("The keys typed before this exercise showed were left out of it: read its question, "
                        "then answer.", title="typed early", timeout=6)

    def _say_typing_picks_nothing(self, prediction: PredictionInput) -> None:
        if self._said_words:
            return
        self._said_words = True
        keys = " or ".join(k for k in prediction.keys[:3] if k)
        self.notify(f"Typed words pick nothing here: press a single key ({keys}…) beside your choice.",
                    title="typing", timeout=6)
