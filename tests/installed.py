"""The tutor as people install it: a wheel built from this tree, installed into a fresh venv.

The tests of the installed product (tests/test_installed.py), of what the wheel
holds (tests/test_wheel_contents.py) and of the Gradescope recipe
(tests/test_gradescope_recipe.py) share what is here:

* :func:`scratch` — a folder outside the checkout and not under /tmp (the check
  worker's bubblewrap mounts an empty tmpfs on /tmp, so a venv there would not be
  what a learner has), readable by every user, so an ordinary user can run the
  venv in it;
* :func:`copy_tree` and :func:`archive` — this tree as it stands, committed or
  not (git's tracked files plus the new ones it does not ignore), so that work
  not yet committed is what gets built;
* :func:`build_wheel` — ``pip wheel`` on such a copy, so build/ and *.egg-info
  never land in the checkout;
* :func:`make_venv` — a venv on a Python every user can run, with the CPU build
  of torch first and then the wheel with its dependencies, as the README
  installs it;
* :class:`Person` — someone who runs ``tutor`` from a folder of their own, with
  a fresh HOME, as root or as an ordinary user.

The fixtures ``wheel`` (cheap: seconds) and ``installed`` (a venv: about a
minute, once per test process) are imported by the test files that use them.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parent.parent

#: The CPU build of torch, pinned with its local version: PyPI has no "+cpu" wheel, so pip takes it from
#: where this machine keeps it (its find-links, or PyTorch's CPU index where a developer names it) and never
#: pulls the multi-GB CUDA build instead.
TORCH = "torch==2.13.0+cpu"

#: Where a learner's progress goes under their HOME (platformdirs' user data folder, XDG_DATA_HOME unset).
DATA = Path(".local", "share", "tutor")

#: An ordinary user: nobody.
NOBODY = 65534

#: What pip prints when it cannot reach an index: the tests are skipped then, not failed.
OFFLINE = ("NewConnectionError", "Temporary failure in name resolution", "Network is unreachable",
           "ConnectTimeout", "Could not fetch URL", "ProxyError")


def scratch(prefix: str) -> Path:
    """A new folder that every user can read, outside the checkout and outside /tmp."""
    for base in ("/var/tmp", os.path.join(os.path.expanduser("~"), ".cache")):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            break
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    folder.chmod(0o755)
    return folder


def remove(folder: Path) -> None:
    """Remove ``folder`` in a process of its own, which the tests do not wait for.

    Deleting a venv just written (torch is most of its gigabyte) takes 50-70 s on this project's machines,
    whose disk is mounted with ``discard``, against 2 s for the same files deleted before they reach the
    disk: time spent waiting on the disk, which the tests need not spend.
    """
    subprocess.run(["sh", "-c", 'rm -rf -- "$0" >/dev/null 2>&1 &', str(folder)], check=True)


def tree_files() -> list[str]:
    """This tree's files as they stand: tracked and new ones git does not ignore, less any deleted."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=CHECKOUT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return sorted({name for name in listed if name and (CHECKOUT / name).is_file()})


def copy_tree(dest: Path) -> Path:
    """Copy this tree (:func:`tree_files`) into ``dest``; return it."""
    for name in tree_files():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CHECKOUT / name, dest / name)
    return dest


def archive(path: Path) -> Path:
    """This tree (:func:`tree_files`) as a gzipped tarball at ``path``, as ``git archive`` lays it out."""
    with tarfile.open(path, "w:gz") as tar:
        for name in tree_files():
            tar.add(CHECKOUT / name, arcname=name)
    return path


def build_wheel(out: Path) -> Path:
    """The tutor's wheel, built by ``pip wheel`` from a copy of this tree in ``out``; return its path."""
    source = copy_tree(out / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(out / "dist"), str(source)], check=True, capture_output=True, text=True)
    [wheel] = (out / "dist").glob("tutor-*.whl")
    return wheel


def everyone_can_run(path: str) -> bool:
    """Whether any user can run ``path``: it and every folder above it are open to others."""
    real = Path(os.path.realpath(path))
    return all(p.stat().st_mode & stat.S_IXOTH for p in (real, *real.parents))


def interpreters() -> list[str]:
    """Pythons of this test's version, the ones every user can run first (pyenv's live under /root)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    found = [getattr(sys, "_base_executable", sys.executable), f"/usr/bin/{version}", f"/usr/local/bin/{version}"]
    found = list(dict.fromkeys(p for p in found if os.path.isfile(p)))
    return sorted(found, key=lambda p: not everyone_can_run(p))


def pip(venv: Path, *args: str) -> None:
    """``pip install`` into ``venv``; skip the test when no package index can be reached."""
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
                          capture_output=True, text=True)
    if done.returncode:
        said = (done.stderr or done.stdout).strip()
        if any(mark in said for mark in OFFLINE):
            pytest.skip(f"pip install {' '.join(args)} could not reach a package index: {said.splitlines()[-1]}")
        if "No matching distribution" in said and args[-1] == TORCH:
            pytest.skip(f"pip finds no {TORCH} here (PyPI has no CPU build): put its wheel where pip looks "
                        "(PIP_FIND_LINKS, or PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu)")
        raise AssertionError(f"pip install {' '.join(args)} failed:\n{said}")


def make_venv(prefix: Path, wheel: Path) -> tuple[Path, bool]:
    """A venv at ``prefix`` with the CPU torch, then ``wheel`` and its dependencies.

    Returns the venv and whether every user can run it (its Python lies where any user can reach it).
    """
    for python in interpreters():
        made = subprocess.run([python, "-m", "venv", str(prefix)], capture_output=True, text=True)
        if made.returncode == 0:
            break
        shutil.rmtree(prefix, ignore_errors=True)
    else:
        pytest.skip(f"no Python here makes a venv: {made.stderr.strip()}")
    pip(prefix, TORCH)
    pip(prefix, str(wheel))
    return prefix, everyone_can_run(python)


def site_packages(venv: Path) -> Path:
    [folder] = (venv / "lib").glob("python*/site-packages")
    return folder


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` but Python's bytecode: its size and modification time.

    A write changes one or both. Bytecode (``__pycache__/*.pyc``) is left out: Python writes it there as
    it imports, as root. Anything else in ``__pycache__`` (the tutor's catalog cache, say) counts: an
    installed tutor keeps its caches in the user's cache folder, never in site-packages.
    """
    found = {}
    for top, folders, files in os.walk(folder):
        for name in files:
            if os.path.basename(top) == "__pycache__" and name.endswith(".pyc"):
                continue
            path = os.path.join(top, name)
            st = os.lstat(path)
            found[os.path.relpath(path, folder)] = (st.st_size, st.st_mtime_ns)
    return found


def clean_environment(home: Path, tools: Path) -> dict[str, str]:
    """The environment of someone who just installed the tutor: no variable of this test session leaks in.

    The tutor's own variables, the XDG folders (so the data folder follows HOME), any other venv and any
    Python path are left out; PATH is ``tools`` (a venv's bin, say), then the system's. pip's settings stay.
    """
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("TUTOR_", "XDG_", "PYTHON", "VIRTUAL_ENV", "PYTEST", "COV_"))}
    return {**keep, "HOME": str(home), "PATH": f"{tools}:/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C.UTF-8"}


@dataclass
class Person:
    """Someone who installed the tutor: a HOME and a folder of their own, as root or as ``uid``."""

    venv: Path
    root: Path
    uid: int | None = None
    home: Path = field(init=False)
    cwd: Path = field(init=False)

    def __post_init__(self):
        self.home, self.cwd = self.root / "home", self.root / "work"
        for folder in (self.root, self.home, self.cwd):
            folder.mkdir(mode=0o755)
            if self.uid is not None:
                os.chown(folder, self.uid, self.uid)

    def tutor(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        """Run ``tutor ARGS`` from this person's folder; the result, its output as text."""
        user = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups"] if self.uid is not None \
            else []
        return subprocess.run([*user, str(self.venv / "bin" / "tutor"), *args], cwd=self.cwd, capture_output=True,
                              text=True, env=clean_environment(self.home, self.venv / "bin"), timeout=timeout)

    def reply(self, *args: str, code: int = 0) -> dict:
        """``tutor ARGS --json``: its JSON object, once its exit status is ``code``."""
        done = self.tutor(*args, "--json")
        assert done.returncode == code, f"tutor {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
        return json.loads(done.stdout)

    @property
    def data(self) -> Path:
        """The user data folder the tutor keeps progress in."""
        return self.home / DATA

    def write(self, name: str, text: str) -> Path:
        path = self.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        return path


@dataclass
class Installed:
    """The session's venv: where it is, whether every user can run it, its files as installed."""

    venv: Path
    everyone: bool
    scratch: Path
    files: dict = field(default_factory=dict)

    def person(self, name: str, uid: int | None = None) -> Person:
        return Person(self.venv, self.scratch / name, uid)


@pytest.fixture(scope="session")
def wheel():
    """The tutor's wheel, built once from this tree as it stands."""
    out = scratch("tutor-wheel-")
    yield build_wheel(out)
    remove(out)


@pytest.fixture(scope="session")
def installed(wheel):
    """A fresh venv with the CPU torch and the wheel, outside the checkout; removed at the end."""
    root = scratch("tutor-installed-")
    try:
        venv, everyone = make_venv(root / "venv", wheel)
        yield Installed(venv, everyone, root, listing(site_packages(venv)))
    finally:
        remove(root)
