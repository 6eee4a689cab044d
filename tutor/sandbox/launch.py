"""Starting the check worker: from one long-lived thread, with its stderr read all the time.

bwrap's ``--die-with-parent`` (PR_SET_PDEATHSIG) follows the *thread* that
forked it: a worker started from a short-lived thread (a TUI task) would die
when that thread ends, so every start is made on one daemon thread
(:func:`launch`). The worker's stderr is drained by a thread of its own into
its last :data:`STDERR_LINES` lines: the worker never blocks on a full pipe,
and when it ends before its hello, :func:`why_not_started` names what it (or
bubblewrap, or the interpreter) last said — the real cause, not a guess.
"""

from __future__ import annotations

import collections
import queue
import subprocess
import threading

from tutor.sandbox import landlock

#: The last lines of the worker's stderr that are kept.
STDERR_LINES = 20

_LAUNCHES: "queue.Queue[tuple]" = queue.Queue()
_LAUNCHER: threading.Thread | None = None
_LAUNCHER_LOCK = threading.Lock()


def launch(argv: list[str], env: dict[str, str], fds: tuple[int, ...] = (), user: dict | None = None) -> subprocess.Popen:
    """Start the worker (``argv``, with exactly ``env``, passing ``fds``, as ``user``: ``bwrap.as_user``) from
    the one launching thread; its ``said`` holds the last lines of its stderr."""
    global _LAUNCHER
    with _LAUNCHER_LOCK:
        if _LAUNCHER is None or not _LAUNCHER.is_alive():
            _LAUNCHER = threading.Thread(target=_launcher, name="tutor-worker-launcher", daemon=True)
            _LAUNCHER.start()
    done: "queue.Queue" = queue.Queue(maxsize=1)
    _LAUNCHES.put((argv, env, fds, user, done))
    proc = done.get()
    if isinstance(proc, BaseException):
        raise proc
    return proc


def _launcher() -> None:
    while True:
        argv, env, fds, user, done = _LAUNCHES.get()
        try:
            landlock.libc().prctl  # looked up here: the forked child only calls it (no loader lock after a fork)
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, errors="replace", bufsize=1, env=env, start_new_session=True,
                                    pass_fds=fds, **(user or {"preexec_fn": landlock.die_with_parent}))
            proc.said = collections.deque(maxlen=STDERR_LINES)
            proc.drain = threading.Thread(target=_drain, args=(proc,), name="tutor-worker-stderr", daemon=True)
            proc.drain.start()
            done.put(proc)
        except BaseException as exc:  # handed to the thread that asked
            done.put(exc)


def _drain(proc: subprocess.Popen) -> None:
    """Keep the last lines of ``proc``'s stderr until it ends (or the pipe is closed under it)."""
    try:
        for line in proc.stderr:
            proc.said.append(line)
    except (OSError, ValueError):  # closed by the runner as it stops the worker
        pass


def why_not_started(proc: subprocess.Popen) -> str:
    """Why a worker ended before its hello: the last line it wrote on stderr, else the likeliest cause."""
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass
    if getattr(proc, "drain", None) is not None:
        proc.drain.join(timeout=2)  # its last words, read to the end of the pipe
    lines = [line.strip() for line in list(getattr(proc, "said", ())) if line.strip()]
    if lines:
        return lines[-1][:500]
    return "it said nothing; is torch installed? Run: pip install torch==2.13.0"
