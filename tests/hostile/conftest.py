"""Fixtures every hostile test shares: what must be the same after an attack as before it.

* ``witness`` — a classmate's progress file and a file outside every tree,
  with their hashes, modes, owners, mtimes and xattrs as they were
  (``attack.Witness``; ``witness.changed()`` is ``{}`` when nothing changed);
* ``processes`` — marks the processes this test starts; ``processes.new()``
  names those still alive (a tutor's leftovers);
* ``system_temp`` — the system temp folder's listing now; ``system_temp.new()``
  names what appeared in it since;
* ``outcome`` — the test module's ``ATTACK`` run once through ``tutor fix``
  (``attack.run_fix``), shared by the module's tests (``outcome.reported`` is
  what the attack reported).

``attack.run_fix`` makes its own witness and temp folder for the usual
attack through ``tutor fix``; these are for tests that run the tutor some
other way (a batch, a killed tutor, a worker that never answers).
"""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from pathlib import Path

import pytest

from attack import MARK_ENV, Witness, marked_processes, run_fix


class Processes:
    """Processes this test starts, found by a marker in their environment (``attack.MARK_ENV``, which the
    sandbox passes on): :meth:`new` names those still alive, zombies left out (they have ended; only their
    reaping is missing). The machine is shared, so nothing else is counted."""

    def __init__(self, monkeypatch) -> None:
        self.mark = secrets.token_hex(8)
        monkeypatch.setenv(MARK_ENV, self.mark)

    def new(self, polls: int = 20) -> list[str]:
        """The marked processes alive now; asked up to ``polls`` times 100 ms apart while any are (a sandbox
        is torn down a moment after the process that held it)."""
        found = self._alive()
        for _ in range(polls):
            if not found:
                break
            time.sleep(0.1)
            found = self._alive()
        return found

    def _alive(self) -> list[str]:
        found = []
        for line in marked_processes(self.mark):
            pid = line.split()[0]
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                found.append(line)
        return found


class TempListing:
    """The system temp folder's entries when it was made; :meth:`new` names those added since."""

    def __init__(self, folder: str | None = None) -> None:
        self.folder = folder or tempfile.gettempdir()
        self.before = set(os.listdir(self.folder))

    def new(self, prefix: str = "tutor") -> list[str]:
        return sorted(name for name in set(os.listdir(self.folder)) - self.before if name.startswith(prefix))


@pytest.fixture
def witness(tmp_path) -> Witness:
    return Witness(tmp_path)


@pytest.fixture
def processes(monkeypatch) -> Processes:
    return Processes(monkeypatch)


@pytest.fixture
def system_temp() -> TempListing:
    return TempListing()


@pytest.fixture(scope="module")
def outcome(request, tmp_path_factory):
    """The module's ``ATTACK`` through ``tutor fix`` in a folder of its own, once for all its tests."""
    return run_fix(tmp_path_factory.mktemp(request.module.__name__.removeprefix("test_")), request.module.ATTACK)
