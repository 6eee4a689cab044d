"""Keys handled one at a time, each in the state the keys before it left.

Textual hands a key to the widget that has the focus *when the app takes
the key off its queue*, and the widget handles it later, in its own queue;
the key then bubbles up to the screen and the app, whose bindings act on it
last. A key that moves the focus (Tab, Esc, a letter that starts the answer
from the page) or changes the screen therefore acts only after the keys
typed right behind it were already handed to the widget being left: at
typing speed on a busy machine, ``1`` Tab ``9`` read ``19`` in the answer,
and Esc then ``h`` typed an ``h`` into the note being left.

:class:`KeysInOrder` (mixed into the app) holds each key until the one
before it has been handled all the way up — by its widget, every widget
above it, the screen, the app's bindings, and whatever those queued on the
app (``Widget.focus`` moves the focus through the app's queue), and then
once more along the same chain, behind the messages the key's handling
posted (Enter on the list's tree posts a selection the screen opens a page
on) — and only then hands it to the widget that has the focus now. Keys typed while a
new screen is being made are held until that screen is ready for them
(a screen with a ``keys_ready`` attribute says when: the exercise page
once it is first drawn and its focus set; any other screen once it is on
top), then handed to it in the order typed: never to the page being left,
and never dropped, however long the new page takes to draw.

A terminal sends Esc as the single byte ESC, so Esc typed just before a
letter arrives in the same read as ESC + letter, which Textual's parser
reads as alt+letter with the letter as its character: the note would take
the letter and keep the focus. The app binds no alt+letter, so such a key
is read as what was typed, Esc and then the letter (:func:`as_typed`).
"""

from __future__ import annotations

from collections import deque
from functools import partial

from textual import events

#: How often (seconds) the app looks whether the key it waits on was lost: the widget holding it was
#: removed before handling it. Only a lost key releases the keys behind it early; a slow one never does.
LOST_KEY_CHECK_S = 0.5


def as_typed(key: events.Key) -> list[events.Key]:
    """``key`` as the learner typed it: alt+letter (ESC and a letter in one read) is Esc, then the letter.

    Both keys keep the time the terminal's key was read. Any other key is itself.
    """
    letter = key.character
    if not (key.key.startswith("alt+") and letter and len(letter) == 1 and letter.isalpha()):
        return [key]
    typed = [events.Key("escape", "\x1b"), events.Key(letter, letter)]
    for k in typed:
        k.time = key.time
    return typed


class KeysInOrder:
    """An app mixin: one key at a time, from the app's queue to the last binding it reaches."""

    _in_flight: events.Key | None = None  # the key being handled
    _waiting_on = None  # the node whose queue holds the key being handled (or its step)
    _lost_check = None  # the timer that looks whether that node went away
    _screen_check = None  # the timer that looks again whether the screen on top is ready for keys
    _target = None  # the widget the key being handled was handed to
    _second_pass = False  # whether the key's chain is being followed again, behind the messages it posted

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._held: deque[events.Key] = deque()  # keys typed while another was being handled, oldest first

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self._held.extend(as_typed(event))
            if self._in_flight is None:
                await self._hand_on_next()
            return
        await super().on_event(event)

    async def _hand_on_next(self) -> None:
        """Hand the oldest held key on as Textual would (priority bindings, else the focused widget)."""
        while self._in_flight is None and self._held:
            if not self._screen_ready():
                self._look_again_for_screen()
                return
            key = self._held.popleft()
            target = self.focused or self.screen
            self._in_flight = key
            await super().on_event(key)
            if not key.is_forwarded:  # a priority binding took it: handled already
                self._in_flight = None
                continue
            self._target, self._second_pass = target, False
            self._step_after(key, target)
            self._lost_check = self.set_timer(LOST_KEY_CHECK_S, partial(self._check_lost, key))

    def _screen_ready(self) -> bool:
        """Whether the screen on top reads keys now (a screen still being made says no in ``keys_ready``)."""
        try:
            screen = self.screen
        except Exception:  # no screen yet: the app is starting
            return False
        return bool(getattr(screen, "keys_ready", True))

    def screen_ready_for_keys(self) -> None:
        """Called by a screen once it is ready for keys: the keys held for it are handed on, in order."""
        self.call_later(self._hand_on_next)

    def _look_again_for_screen(self) -> None:
        """Look again in a moment, in case the screen that was not ready went away without saying so."""
        if self._screen_check is None:
            self._screen_check = self.set_timer(LOST_KEY_CHECK_S, self._screen_check_due)

    def _screen_check_due(self) -> None:
        self._screen_check = None
        self.call_later(self._hand_on_next)

    def _step_after(self, key: events.Key, node) -> None:
        """Queue a step on ``node`` behind ``key``: it runs once ``node`` has handled the key (or passed it)."""
        self._waiting_on = node
        if not node.call_later(self._handled_by, key, node):  # the node is closing: the key is gone with it
            self.call_later(self._key_done, key)

    def _handled_by(self, key: events.Key, node) -> None:
        """``node`` has handled ``key`` (and bubbled it to its parent, if it did): follow it upwards."""
        if node is self and not self._second_pass and self._target is not self and self._target.is_attached:
            # The app's bindings have run. A widget may have answered the key with a message of its own
            # (Enter on the list's tree posts its node's selection, which the screen opens a page on): follow
            # the chain once more, behind those messages, so the page they open is on top before the next key.
            self._second_pass = True
            self._step_after(key, self._target)
            return
        if node is self:
            # the app's bindings have run; what they queued here (a focus change) runs before the next key
            self._waiting_on = self
            self.call_later(self._key_done, key)
            return
        self._step_after(key, node.parent if node.parent is not None else self)

    async def _key_done(self, key: events.Key) -> None:
        if self._in_flight is not key:
            return
        self._in_flight, self._waiting_on = None, None
        if self._lost_check is not None:
            self._lost_check.stop()
            self._lost_check = None
        await self._hand_on_next()

    async def _check_lost(self, key: events.Key) -> None:
        """The key is still being handled: release the keys behind it only if its node went away."""
        if self._in_flight is not key:
            return
        node = self._waiting_on
        if node is not None and node is not self and not node.is_attached:
            await self._key_done(key)
            return
        self._lost_check = self.set_timer(LOST_KEY_CHECK_S, partial(self._check_lost, key))
