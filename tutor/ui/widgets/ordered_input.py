"""A one-line text box that applies every key in the order it was typed."""

from __future__ import annotations

from textual import events
from textual.widgets import Input


#: the keys of the editing bindings Textual's ``Input`` declares itself (not those it inherits)
EDITING_KEYS = frozenset(key.strip() for binding in Input.BINDINGS
                         for key in (binding.key if hasattr(binding, "key") else binding[0]).split(","))


class OrderedInput(Input):
    """Textual's ``Input``, with its own editing keys (Backspace, Delete, the arrows, Enter…) applied
    as they arrive, like the characters; the characters of ``submit_keys`` submit (as Enter does)
    instead of typing.

    Textual's ``Input`` types a character at once but acts on a key of its
    ``BINDINGS`` only once the key has bubbled up to the app and come back,
    so in a fast burst (a busy machine, a screen re-filtering its list) the
    characters typed after a Backspace land before it: ``rotary``, six
    Backspaces and ``swiglu`` read ``rotary``. Here a bound key runs its
    action straight away, in order. Only the box's own editing keys (``Input.BINDINGS``) act at once:
    the scrolling keys a one-line box inherits (↑, ↓, PgUp, PgDn: they scroll nothing) go on to the
    screen first as Textual hands them, so ↓ from the find box reaches the list.
    """

    def __init__(self, *args, submit_keys: frozenset[str] = frozenset(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.submit_keys = submit_keys

    async def _on_key(self, event: events.Key) -> None:
        if event.character is not None and event.character in self.submit_keys:
            event.stop()
            event.prevent_default()
            await self.action_submit()
            return
        bound = self._bindings.key_to_bindings.get(event.key) if event.key in EDITING_KEYS else None
        if bound and not event.is_printable:
            binding = bound[0]
            if not binding.priority and self.check_action(binding.action.split("(")[0], ()) is not False:
                event.stop()
                event.prevent_default()
                self._restart_blink()
                await self.run_action(binding.action)
                return
        await super()._on_key(event)
