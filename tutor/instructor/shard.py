"""A class across machines: ``--shard K/N`` picks learners by a stable hash; ``merge`` joins the folders.

A learner belongs to shard ``K`` of ``N`` when the first eight bytes of the
SHA-256 of their key (:func:`tutor.store.names.learner_key`), read as a number,
leave ``K - 1`` over when divided by ``N``: the same learner lands on the
same shard on every machine, whatever the file's order or the Python
version, so every row of one learner is graded in one place and "which
attempt counts" is decided there. A row naming no usable learner is placed
by the text it gives.

Pure except :func:`merge_rows`, which reads each folder's ``rows.jsonl``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path
from typing import Iterator

from tutor.instructor.gradebook import ROWS, iter_rows
from tutor.model.errors import UsageError

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse(text: str | None) -> tuple[int, int] | None:
    """``K/N`` as (K, N), 1 <= K <= N; None for none.

    Raises:
        UsageError: it is not K/N with 1 <= K <= N.
    """
    if text is None:
        return None
    match = _SHARD.match(text)
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"--shard takes K/N with 1 <= K <= N, such as 1/4 for the first of four shards; "
                         f"{text!r} is not one")
    return int(match.group(1)), int(match.group(2))


def number(key: str, shards: int) -> int:
    """The shard (1..shards) of a learner key."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1


def belongs(key: str, part: tuple[int, int]) -> bool:
    return number(key, part[1]) == part[0]


def merge_rows(folders: list[Path]) -> Iterator[dict]:
    """Every row of the graded folders, one each, as the folders are read: a submission graded in two
    folders is kept once (the tail puts them in line order).

    Raises:
        UsageError: a folder holds no graded rows (raised before any row of it is given).
    """
    seen: set = set()
    for folder in folders:
        found = iter_rows(Path(folder))
        first = next(found, None)
        if first is None:
            raise UsageError(f"{folder} holds no graded rows ({ROWS}); name folders that tutor grade wrote")
        for r in itertools.chain([first], found):
            ident = (r.get("submission"), r.get("line"))
            if ident in seen:
                continue
            seen.add(ident)
            yield r
