"""Processes as /proc shows them, for the tests and benchmarks that count what a killed tutor leaves.

Linux only (the callers skip where there is no /proc). ``/proc/PID/stat``'s
fields are read after the command's closing parenthesis, since a command
may hold spaces and parentheses itself.
"""

from __future__ import annotations

import os


def _stat_fields(pid) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command (state first, parent pid second). Raises OSError."""
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` now (a worker, its sides and their children)."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent[int(entry)] = int(_stat_fields(entry)[1])
            except OSError:
                continue
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        todo += kids
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        return _stat_fields(pid)[0] != "Z"
    except OSError:
        return False
