"""JSON lines and JSON arrays read an item at a time, never the whole file: :func:`items`.

An answers file (``tutor grade --answers``, a Gradescope submission's
``answers.jsonl`` / ``answers.json``) is either JSON lines, one object per
line, or one JSON array of objects. Lines are read one at a time; an array is
parsed a chunk at a time with :meth:`json.JSONDecoder.raw_decode`, the
buffer holding only the item being read (an item may be up to
:data:`MAX_JSON_ITEM` characters long).

Layers: imports neither torch nor Textual.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

from tutor.model.errors import UsageError

#: Characters read from a JSON array at a time, and the longest one item of it may be.
JSON_CHUNK = 1 << 16
MAX_JSON_ITEM = 16 * 2**20


def items(fh, source: str = "the answers") -> Iterator[tuple[int, Any]]:
    """The items of an open text file of JSON lines, or of one JSON array, one at a time and never the whole
    file: (line number, object) for JSON lines, where a line that is not JSON gives a :class:`Bad` naming it,
    and (place from 1, item) for an array, parsed a chunk at a time (:func:`_array_items`).

    Raises:
        UsageError: the file is a JSON array that does not parse, or one of its items is longer than
            :data:`MAX_JSON_ITEM` characters.
    """
    if first_char(fh) == "[":
        yield from _array_items(fh, source)
        return
    for n, line in enumerate(fh, 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as exc:
            yield n, Bad(f"line {n} is not a JSON object ({exc.msg})")


def _array_items(fh, source: str) -> Iterator[tuple[int, Any]]:
    """The items of the JSON array an open text file holds, decoded one at a time with
    :meth:`json.JSONDecoder.raw_decode` over a buffer that keeps only the item being read."""
    decoder = json.JSONDecoder()
    state = {"buf": "", "pos": 0, "eof": False, "line": 1}

    def more() -> None:  # drop what is read, then read on (as much again as is held: linear on a long item)
        buf, pos = state["buf"], state["pos"]
        state["line"] += buf.count("\n", 0, pos)
        data = fh.read(max(JSON_CHUNK, len(buf) - pos))
        state.update(buf=buf[pos:] + data, pos=0, eof=not data)

    def spaces() -> None:
        while True:
            buf, pos = state["buf"], state["pos"]
            while pos < len(buf) and buf[pos] in " \t\r\n\ufeff":
                pos += 1
            state["pos"] = pos
            if pos < len(buf) or state["eof"]:
                return
            more()

    def refuse(msg: str, at: int):
        line = state["line"] + state["buf"].count("\n", 0, at)
        return UsageError(f"{source} is not a JSON array of objects ({msg}, line {line}); fix it, or write one "
                          "object per line (JSON lines)")

    spaces()
    state["pos"] += 1  # the "[" (json_items looked)
    n = 0
    spaces()
    if state["buf"][state["pos"]:state["pos"] + 1] == "]":
        state["pos"] += 1
    else:
        while True:
            spaces()
            while True:
                buf, pos = state["buf"], state["pos"]
                try:
                    item, end = decoder.raw_decode(buf, pos)
                except json.JSONDecodeError as exc:
                    if state["eof"]:
                        raise refuse(exc.msg, exc.pos) from None
                    if len(buf) - pos > MAX_JSON_ITEM:
                        raise refuse(f"item {n + 1} is longer than {MAX_JSON_ITEM // 2**20} MiB or does not end",
                                     pos) from None
                    more()
                    continue
                if not state["eof"] and not isinstance(item, (dict, list, str)) and len(buf) - end < 64:
                    more()  # a number or a literal cut at the chunk's end ("1" of "12", "0" of "0.5") reads short
                    continue
                break
            state["pos"] = end
            n += 1
            yield n, item
            spaces()
            buf, pos = state["buf"], state["pos"]
            if pos >= len(buf):
                raise refuse("Expecting ',' delimiter", pos)
            state["pos"] = pos + 1
            if buf[pos] == "]":
                break
            if buf[pos] != ",":
                raise refuse("Expecting ',' delimiter", pos)
    spaces()
    if state["pos"] < len(state["buf"]):
        raise refuse("Extra data", state["pos"])


def first_char(fh) -> str:
    """The first character of an open text file that is no space or byte-order mark ("" when there is none);
    the file is back at its start after."""
    try:
        while True:
            chunk = fh.read(1 << 12)
            if not chunk:
                return ""
            rest = chunk.lstrip("\ufeff \t\r\n")
            if rest:
                return rest[0]
    finally:
        fh.seek(0)


@dataclass
class Bad:
    """A line of JSON lines that is not JSON: the sentence saying so."""

    problem: str
