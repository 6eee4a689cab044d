"""Processes as /proc shows them, for the tests and benchmarks that count what a killed tutor leaves.

Linux only (the callers skip where there is no /proc). ``/proc/PID/stat``'s
fields are read after the command's closing parenthesis, since a command
may hold spaces and parentheses itself.
"""

from __future__ import annotations

import os
import secrets


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


def started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc's field 22), or None when there is no such process."""
    try:
        return int(_stat_fields(pid)[19])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid: int, since: int | None = None) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has) — the one that started at ``since``
    (:func:`started`), when given: a pid the kernel handed to a new process after the first ended is not it
    (pid_max may be as low as 32,768)."""
    try:
        fields = _stat_fields(pid)
    except OSError:
        return False
    if since is not None and fields[19:20] != [str(since)]:
        return False
    return fields[0] not in ("Z", "X")


def named(marker: str) -> list[int]:
    """The processes whose command line (its arguments joined by spaces) holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if marker in fh.read().replace(b"\0", b" ").decode(errors="replace"):
                        found.append(int(entry))
            except OSError:
                pass
    return found


def describe(pid: int) -> str:
    """A process's command line and state, for a failure message; "gone" when it has ended."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        state = _stat_fields(pid)[0]
    except (OSError, IndexError):
        return "gone"
    return f"{command[:120]!r}, state {state}"


def sleep_marker(base: int) -> tuple[str, str]:
    """Seconds for a ``sleep`` a test's subject starts, and the command line :func:`named` finds it by: unique
    to this run (``base``, this process's pid, a random part), so two test runs on one machine — two suites
    at once, a CI runner's neighbour — never take each other's sleep for their own."""
    seconds = f"{base}{os.getpid()}{secrets.randbelow(10 ** 6):06d}"
    return seconds, f"sleep {seconds}"
