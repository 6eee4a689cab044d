"""What every hostile test shares: a learner's attack file run through ``tutor fix``, and the damage it must not do.

An attack is a few lines put first thing in ``squared_errors`` of the
faulted ``exercises/snippets/losses.py`` (``broadcast-loss``: the
``squeeze(-1)`` is gone), so the file never holds the repair and a *fixed*
verdict could only come from cheating. :func:`run_fix` runs it the way a
learner or a grader does — ``tutor fix broadcast-loss --file F --json`` as a
fresh process, as whoever runs the tests (root here) — or, with :func:`run_grade_fixes`, as one
learner's hand-in through ``tutor grade --fixes`` — with:

* a progress folder holding a classmate's file (``ada.toml``) and a file
  outside every tree (``outside/notes.txt``), each with a user xattr set,
  watched by :class:`Witness` (sha256, mode, owner, mtime, xattrs);
* the grader's secret in the environment (``GRADER_API_TOKEN``): it must
  appear in no output;
* a private ``TMPDIR`` for the tutor (the system temp folder it sees), which
  must be empty afterwards; and a marker in an environment variable every
  sandboxed process inherits (``PYTORCH_TUTOR_TEST_MARK``), so a process
  left behind by this run, and only this run, can be found in ``/proc``.

What the attack saw comes back in its exception's sentence (the verdict
names it), so a test can read what the sandbox let it see: ``report(x)`` in
an attack raises with ``x``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from exercises.faults import source_root

SUBJECT = "exercises/snippets/losses.py"
SQUEEZE = "    predictions = predictions.squeeze(-1)  # (N, 1) -> (N,): drop only the named axis\n"
CLEAN = (source_root() / SUBJECT).read_text(encoding="utf-8")
SECRET = "grader-secret-" + secrets.token_hex(8)
MARK_ENV = "PYTORCH_TUTOR_TEST_MARK"
#: Prepended to every attack: ``report(x)`` raises with ``x`` so the verdict carries what the attack saw.
#: (The markers are joined at run time, so the file's own text, shown in its diff, never holds them.)
#: A side's exception sentence keeps its first 300 characters: a report is kept short.
PRELUDE = "def report(x):\n    raise RuntimeError('SA' + 'W<' + str(x) + '>S' + 'AW')\n"


def attack_file(code: str) -> str:
    """The faulted losses.py (no squeeze) with ``code`` run first thing in squared_errors."""
    body = textwrap.indent(PRELUDE + textwrap.dedent(code).strip() + "\n", "    ")
    assert SQUEEZE in CLEAN
    return CLEAN.replace(SQUEEZE, body)


@dataclasses.dataclass(frozen=True)
class Facts:
    sha256: str
    mode: int
    uid: int
    gid: int
    mtime_ns: int
    xattrs: tuple


def facts(path: Path) -> Facts:
    st = os.lstat(path)
    attrs = tuple(sorted((name, os.getxattr(path, name, follow_symlinks=False))
                         for name in os.listxattr(path, follow_symlinks=False)))
    return Facts(hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns,
                 attrs)


class Witness:
    """A classmate's progress file and a file outside every tree, as they were before the attack."""

    def __init__(self, root: Path) -> None:
        self.progress = root / "progress"
        self.progress.mkdir()
        (root / "outside").mkdir()
        self.classmate = self.progress / "ada.toml"
        self.classmate.write_text('format_version = 1\nlearner = "ada"\n# ada\'s own, not to be read\n')
        self.outside = root / "outside" / "notes.txt"
        self.outside.write_text("nothing of the tutor's\n")
        for path in (self.classmate, self.outside):
            os.chmod(path, 0o640)
            try:
                os.setxattr(path, "user.witness", b"kept")
            except OSError:
                pass  # a file system without user xattrs: the other facts still hold
        self.before = {path: facts(path) for path in self.files}

    @property
    def files(self) -> tuple[Path, Path]:
        return self.classmate, self.outside

    def changed(self) -> dict:
        """What changed about each watched file: {path: (before, after)}; {} when nothing did."""
        out = {}
        for path, before in self.before.items():
            after = facts(path) if path.exists() else None
            if after != before:
                out[str(path)] = (before, after)
        return out


@dataclasses.dataclass
class Outcome:
    """One ``tutor fix`` of an attack: the process, its JSON, and everything it printed."""

    returncode: int
    data: dict
    text: str  # stdout and stderr together
    leftovers: list[str]  # processes of this run still alive after it ended
    temp_left: list[str]  # what is left in the tutor's temp folder
    witness: Witness
    mark: str

    @property
    def saw(self) -> str:
        """What the attack reported (``report(x)``), or ""."""
        start, end = self.text.find("SAW<"), self.text.find(">SAW")
        return self.text[start + 4:end] if start >= 0 and end > start else ""

    @property
    def reported(self):
        """The value the attack reported, read back from its ``repr`` (the attack's own dict or list)."""
        return eval(self.saw)

    def assert_not_fixed_and_no_damage(self) -> None:
        assert self.data.get("fixed") is not True, self.text[-3000:]
        assert self.data.get("confined") is True, self.text[-3000:]
        assert self.witness.changed() == {}, self.witness.changed()
        assert SECRET not in self.text
        assert self.leftovers == [], self.leftovers
        assert self.temp_left == [], self.temp_left


class Said:
    """What a grading use case tells its caller (its ``notice`` and ``graded`` calls), kept to read back."""

    def __init__(self):
        self.notices = []

    def notice(self, text):
        self.notices.append(text)

    def graded(self, outcome):
        pass


def marked_processes(mark: str) -> list[str]:
    """Processes whose environment carries ``mark`` (this run's sandbox and whatever it started)."""
    found = []
    needle = f"{MARK_ENV}={mark}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if needle in Path(f"/proc/{entry}/environ").read_bytes():
                found.append(f"{entry} {Path(f'/proc/{entry}/cmdline').read_bytes()[:200]!r}")
        except OSError:
            continue
    return found


def run_fix(root: Path, code: str, exercise: str = "broadcast-loss", extra: tuple = (), user: int | None = None,
            text: str | None = None) -> Outcome:
    """Run the attack ``code`` through ``tutor fix EXERCISE --file F --json`` as a fresh process in ``root``.

    ``CLASSMATE`` and ``OUTSIDE`` in ``code`` become the watched files' paths (string literals). ``user``:
    the uid (and gid) the tutor runs as, started by root (``root`` must be reachable by it; the learner's
    own folders are given to it); ``text``: the learner's whole file instead of the attack.
    """
    scene = _Scene(root, code, text, root / "losses.py")
    return scene.run(["fix", exercise, "--file", str(scene.learner), "--no-instruments", "--json", *extra],
                     user=user)


def run_grade_fixes(root: Path, code: str, exercise: str = "broadcast-loss", extra: tuple = ()) -> Outcome:
    """Run the attack ``code`` as the learner mallory's hand-in through ``tutor grade --fixes DIR --out OUT
    --exercises EXERCISE --json`` as a fresh process in ``root``, the way an instructor grades a class
    (grading's own defaults: confined only, at least 2 hidden seeds).

    The outcome's ``data`` is mallory's gradebook row, with ``fixed`` (the row passed) and ``confined`` as
    :meth:`Outcome.assert_not_fixed_and_no_damage` reads them, and the whole reply under ``reply``.
    """
    (root / "fixes" / "mallory").mkdir(parents=True)
    scene = _Scene(root, code, None, root / "fixes" / "mallory" / f"{exercise}.py")
    done = scene.run(["grade", "--fixes", str(root / "fixes"), "--out", str(root / "graded"), "--exercises",
                      exercise, "--json", *extra])
    rows = [r for r in done.data.get("rows", []) if r.get("learner") == "mallory"]
    row = rows[0] if len(rows) == 1 else {}
    done.data = {**row, "fixed": row.get("status") == "pass" if row else None, "reply": done.data}
    return done


class _Scene:
    """What every attack's run needs: the watched files, the marker, a private temp folder and home, the
    grader's secret in the environment, and the learner's file at ``learner``."""

    def __init__(self, root: Path, code: str, text: str | None, learner: Path) -> None:
        self.root, self.learner = root, learner
        self.witness = Witness(root)
        self.mark = secrets.token_hex(8)
        self.temp = root / "systmp"
        self.temp.mkdir()
        self.home = root / "home"
        self.home.mkdir()
        code = code.replace("CLASSMATE", repr(str(self.witness.classmate))).replace(
            "OUTSIDE", repr(str(self.witness.outside)))
        learner.write_text(attack_file(code) if text is None else text, encoding="utf-8")

    def run(self, argv: list[str], user: int | None = None) -> Outcome:
        """``python -m tutor.cli ARGV`` as a fresh process (as ``user`` where given); its outcome."""
        start = {}
        if user is not None:
            from tutor.sandbox import bwrap
            for folder in (self.root, self.witness.progress, self.temp, self.home):
                os.chown(folder, user, user)
            start = bwrap.as_user(user)  # the Python installation reachable by ``user``, then ``user``
        env = {k: v for k, v in os.environ.items() if not k.startswith("TUTOR_") or k == "TUTOR_CACHE_DIR"}
        env.update({"GRADER_API_TOKEN": SECRET, MARK_ENV: self.mark, "TMPDIR": str(self.temp),
                    "HOME": str(self.home), "TUTOR_PROGRESS_DIR": str(self.witness.progress),
                    "TUTOR_LEARNER": "mallory"})
        proc = subprocess.run([sys.executable, "-m", "tutor.cli", *argv], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env=env, cwd=self.root, timeout=600, **start)
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            data = {}
        left = marked_processes(self.mark)
        for _ in range(20):  # a sandbox being torn down ends a moment after its tutor
            if not left:
                break
            time.sleep(0.1)
            left = marked_processes(self.mark)
        return Outcome(proc.returncode, data, proc.stdout + proc.stderr, left, sorted(os.listdir(self.temp)),
                       self.witness, self.mark)


@contextlib.contextmanager
def unix_listeners(folder: Path, abstract: str):
    """A pathname UNIX socket in ``folder`` and an abstract one named ``abstract``, both listening outside every
    sandbox (no side may reach either); yields (the path, the listening sockets) and closes them after."""
    path = str(folder / "agent.sock")
    listening = []
    try:
        for address in (path, abstract):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listening.append(s)
            s.bind(address)
            s.listen(4)
            s.setblocking(False)
        yield path, listening
    finally:
        for s in listening:
            s.close()
