"""Keys as the learner reads them: the help's tables, made from the screens' own ``BINDINGS``, and footers
that show only what works on the page.

The help screen lists every key of every screen by reading each class's
``BINDINGS`` (and ``PAGE_KEYS``, the few keys a page reads itself in
``on_key``, such as a choice's letter), so a key added to a screen appears
in the help with no second place to update. :class:`PageScreen` is the base
of the app's screens: its footer drops a binding whose key the page itself
takes (``a`` and ``b`` pick choices on a choice page, so ``a Answer`` and
``b Break it`` are not advertised there) and puts the app's own keys (``q``,
``?``, ``p``) first, so a narrow terminal (80 columns) cuts page keys, never
those.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from textual.binding import Binding
from textual.keys import _character_to_key, format_key
from textual.screen import Screen
from textual.widgets import Footer, Input

#: How a key name reads in the help (Textual's names on the left).
KEY_WORDS = {"escape": "Esc", "enter": "Enter", "tab": "Tab", "shift+tab": "Shift+Tab", "question_mark": "?",
             "slash": "/", "space": "Space", "up": "↑", "down": "↓", "left": "←", "right": "→",
             "pageup": "PgUp", "pagedown": "PgDn", "home": "Home", "end": "End", "backspace": "Backspace",
             "delete": "Delete"}


def key_words(key: str) -> str:
    """``ctrl+s`` → ``Ctrl+S``, ``question_mark`` → ``?``, ``escape`` → ``Esc``, ``F`` → ``F`` (Shift+f)."""
    if key in KEY_WORDS:
        return KEY_WORDS[key]
    *modifiers, name = key.split("+")
    name = KEY_WORDS.get(name) or (name.upper() if len(name) > 1 and name.startswith("f") and name[1:].isdigit()
                                   else format_key(name))
    if modifiers and len(name) == 1:
        name = name.upper()
    return "+".join([m.capitalize() for m in modifiers] + [name])


def _bindings(owner) -> list[Binding]:
    """The bindings a class declares itself (its ``BINDINGS``, not its bases'), as ``Binding`` objects."""
    declared = owner.__dict__.get("BINDINGS", [])
    return [b if isinstance(b, Binding) else Binding(*b) for b in declared]


def key_rows(*owners, skip: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(keys, what they do) for screen or widget classes: their ``BINDINGS`` by action, then their ``PAGE_KEYS``.

    Keys bound to the same action share a row (``r, Ctrl+R``); a binding's
    ``tooltip`` is the longer sentence the help shows, else its description.
    System bindings (Textual's own, never shown) are left out.

    Args:
        owners: Screen, Widget or App classes, each read for what it declares itself.
        skip: keys to leave out (a key the app takes first, with priority).
    """
    rows: dict[str, tuple[list[str], str]] = {}
    page: list[tuple[str, str]] = []
    for owner in owners:
        for binding in _bindings(owner):
            if binding.system:
                continue
            for key in binding.key.split(","):
                key = key.strip()
                if key in skip:
                    continue
                keys, does = rows.setdefault(binding.action, ([], binding.tooltip or binding.description))
                label = binding.key_display or key_words(key)
                if label not in keys:
                    keys.append(label)
        page += list(owner.__dict__.get("PAGE_KEYS", ()))
    return [(", ".join(keys), does) for keys, does in rows.values() if keys] + page


#: The key names of the printable characters: what a text box takes as typing.
TYPED_KEYS = frozenset(_character_to_key(chr(code)) for code in range(32, 127))


#: Where Textual keeps its TextArea, read from ``sys.modules`` rather than imported: no text area can
#: have the focus before this module is loaded, and the first screen (which has none) need not load it.
TEXT_AREA_MODULE = "textual.widgets._text_area"


def _loaded_text_area() -> type | None:
    """Textual's ``TextArea`` once something has loaded it, else None."""
    return getattr(sys.modules.get(TEXT_AREA_MODULE), "TextArea", None)


class PageScreen(Screen):
    """A screen whose footer shows only keys that do what they say here, the app's keys first.

    Left out: a binding whose key the page reads itself (:meth:`page_keys`),
    and, while a text box has the focus, every printable key (it types); the
    app's keys then show as the ones that still work there (Ctrl+Q, F1).
    """

    def page_keys(self) -> set[str]:
        """Keys this page reads itself (a choice's letter), whose bindings are therefore not shown."""
        return set()

    @property
    def typing(self) -> bool:
        """Whether the focus is in a box that takes printable keys as text."""
        focused, text_area = self.focused, _loaded_text_area()
        return isinstance(focused, Input) or (text_area is not None and isinstance(focused, text_area)
                                              and not focused.read_only)

    @property
    def active_bindings(self):
        bindings = super().active_bindings
        taken = self.page_keys() | (TYPED_KEYS if self.typing else set())
        kept = {key: active for key, active in bindings.items() if key not in taken}
        chain = [self.app, self, *(self.focused.ancestors_with_self if self.focused is not None else ())]
        wanted = {binding.action for node in chain for declared in node._bindings.key_to_bindings.values()
                  for binding in declared if binding.show}
        shown = {active.binding.action for active in kept.values() if active.binding.show}
        for key, active in kept.items():
            action = active.binding.action
            if action in wanted and action not in shown:
                # the shown key of this action is taken here (it types): show the one that still works
                shown.add(action)
                kept[key] = active._replace(binding=replace(active.binding, show=True))
        app_first = {key: active for key, active in kept.items() if active.node is self.app}
        app_first.update((key, active) for key, active in kept.items() if key not in app_first)
        return app_first


class PageFooter(Footer):
    """Textual's footer, redrawn only when the keys it would show change.

    Textual's footer builds every key anew on each change of focus or of the
    screen stack, and a screen opening makes several (three before the first
    screen is idle) that mostly leave the keys as they were; this one compares
    what it would draw with what it drew and skips an equal redraw.
    """

    _drawn: tuple | None = None

    def __init__(self, *children, compact: bool = True, **kwargs) -> None:
        """Compact (one space between keys) unless told otherwise, so an 80-column terminal shows
        every key a page lists."""
        super().__init__(*children, compact=compact, **kwargs)

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self._redraw_if_changed)

    async def _redraw_if_changed(self) -> None:
        if not self.is_attached:
            return
        shown = self._shown()
        if shown != self._drawn:
            self._drawn = shown
            await self.recompose()

    def _shown(self) -> tuple:
        """What a redraw would draw: each shown binding (and the palette's key) with its state."""
        palette = self.app.COMMAND_PALETTE_BINDING
        keys = tuple((key, active.binding, active.enabled, active.tooltip)
                     for key, active in self.screen.active_bindings.items()
                     if active.binding.show or key == palette)
        return keys, self.compact, self.show_command_palette, self.combine_groups
