"""The tail of a grading, over ``rows.jsonl`` as it lies on disk: memory that does not grow with the rows.

Every row a grading made is in its folder's ``rows.jsonl`` (appended as it
was graded, in the order the workers finished). The tail reads that file
twice, one line at a time, and keeps per row only where it starts (two
numbers), and per learner a small summary
(:class:`tutor.instructor.results.Learner`: a name, the LMS identity, a sum
of seconds, and for each assigned exercise the counting row's place):

1. :func:`scan` — which row counts for each learner and exercise (the rule of
   :func:`tutor.model.attempts.counting`: the latest ``submitted_at``, the
   later line at a tie, an untimed row older than every timed one), the
   statuses counted, the rows no learner or exercise could be given;
2. :func:`write` — ``rows.jsonl`` and ``gradebook.csv`` again in the file's
   order with ``counts`` set, and ``results.json`` learner by learner, each
   to a temporary file renamed over the old one when whole.

A class of L learners over E exercises keeps about L × E small entries and
16 bytes per row, whatever the size of the rows (their answers and notes are
never held).

Layers: imports neither torch nor Textual.
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from tutor.instructor import gradebook
from tutor.instructor import results as class_results
from tutor.model.attempts import time_key
from tutor.store.files import open_atomically


@dataclass
class Scan:
    """What the first pass over ``rows.jsonl`` found (:func:`scan`).

    Attributes:
        offsets: where each whole row starts in the file, in the file's order.
        lines: each row's answers-file line, beside ``offsets``.
        in_order: whether the rows already lie in line order.
        learners: learner key -> :class:`tutor.instructor.results.Learner` (``counted`` holds offsets).
        best: (key, exercise) -> (time key, line, offset) of the row that counts so far.
        unattributed: (line, offset, status, reason) of each row no learner's or no assigned exercise's.
        counts: rows per status; warnings: rows with a warning; ran: rows whose check ran; confined: of those.
    """

    offsets: array = field(default_factory=lambda: array("q"))
    lines: array = field(default_factory=lambda: array("q"))
    in_order: bool = True
    learners: dict = field(default_factory=dict)
    best: dict = field(default_factory=dict)
    unattributed: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    warnings: int = 0
    ran: int = 0
    confined: int = 0


def scan(fh, plan) -> Scan:
    """The first pass (module docstring) over the open ``rows.jsonl``."""
    ids = set(plan.ids)
    found = Scan()
    last = None
    for offset, r in gradebook.rows_with_offsets(fh):
        line = r.get("line") or 0
        found.offsets.append(offset)
        found.lines.append(line)
        if last is not None and line < last:
            found.in_order = False
        last = line
        tally = gradebook.tally_of(r)  # a warm-up's row apart from the passes and fails
        found.counts[tally] = found.counts.get(tally, 0) + 1
        found.warnings += bool(r.get("warnings"))
        if r.get("confined") is not None:
            found.ran += 1
            found.confined += bool(r["confined"])
        key, ex = r.get("key"), r.get("exercise")
        if not key or ex not in ids:
            found.unattributed.append((line, offset, r.get("status"), r.get("reason")))
        if key:
            learner = found.learners.get(key)
            if learner is None:
                learner = found.learners[key] = class_results.Learner()
            learner.take((line, offset), r)
            if ex in ids and r.get("status") != "not_assigned":
                learner.attempts[ex] = learner.attempts.get(ex, 0) + gradebook.an_attempt(r)
                candidate = (time_key(r.get("submitted_at")), line, offset)
                if (key, ex) not in found.best or candidate > found.best[key, ex]:
                    found.best[key, ex] = candidate
    return found


def _order(found: Scan) -> Iterator[int]:
    """The offsets of the rows in line order (the file's order at a tie)."""
    if found.in_order:
        yield from found.offsets
        return
    packed = sorted(range(len(found.offsets)), key=lambda i: (found.lines[i], found.offsets[i]))
    for i in packed:
        yield found.offsets[i]


def _row_at(fh, offset: int) -> dict:
    fh.seek(offset)
    return json.loads(fh.readline())


def write(folder: Path, fh, found: Scan, plan, titles: dict, source: str, now=None) -> None:
    """The second pass (module docstring): the three files, each whole or as it was.

    Raises:
        OSError: a file could not be written (the old one is left as it was).
    """
    folder = Path(folder)
    counting = {best[2] for best in found.best.values()}
    with open_atomically(folder / gradebook.ROWS) as rows_out, \
            open_atomically(folder / gradebook.GRADEBOOK) as book:
        book.write(gradebook.header_line())
        for offset in _order(found):
            row = _row_at(fh, offset)
            row["counts"] = offset in counting
            rows_out.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
            book.write(gradebook.row_line(row))
        with open_atomically(folder / "results.json") as out:
            _results(out, fh, found, plan, titles, source, now)


def _results(out, fh, found: Scan, plan, titles: dict, source: str, now) -> None:
    """results.json as :func:`tutor.instructor.results.class_results` writes it, one learner at a time."""
    now = now or class_results.utc_now()
    marker = "\u0000learners\u0000"
    unattributed = [{"line": line, "status": status, "reason": reason}
                    for line, _, status, reason in sorted(found.unattributed, key=lambda u: u[:2])]
    head = class_results.envelope(plan, source, now, found.confined == found.ran if found.ran else None,
                                  unattributed)
    head["learners"] = marker
    before, after = json.dumps(head, indent=2, ensure_ascii=False).split(json.dumps(marker))
    out.write(before.encode("utf-8"))
    keys = sorted(found.learners)
    out.write(b"[" if keys else b"[]")
    for n, key in enumerate(keys):
        learner = found.learners[key]
        learner.counted = {ex: _row_at(fh, found.best[key, ex][2]) for ex in plan.ids if (key, ex) in found.best}
        entry = class_results.result_of(learner, plan, titles, now)
        learner.counted = {}
        text = json.dumps(entry, indent=2, ensure_ascii=False).replace("\n", "\n    ")
        out.write(f"{',' if n else ''}\n    {text}".encode("utf-8"))
    if keys:
        out.write(b"\n  ]")
    out.write((after + "\n").encode("utf-8"))
