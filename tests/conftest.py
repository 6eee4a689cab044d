"""Shared fixtures: one catalog and one warm worker for the whole session."""

import os
import subprocess
import sys
import tempfile

import pytest

# The validated catalog is cached across processes (tutor.store.catalog_cache): the session's
# own folder, so no test reads or leaves an entry in the user's cache, and every subprocess
# the tests start shares it.
os.environ.setdefault("TUTOR_CACHE_DIR", tempfile.mkdtemp(prefix="tutor-test-cache-"))

# Mutation testing (scripts/mutation.sh) runs these tests inside mutmut. Its first pass records which
# test reaches which function (MUTANT_UNDER_TEST=stats), and a child process such as `python -m
# tutor.cli` would try to record too, without mutmut's configuration, and crash. Its children run the
# code as written in that pass; while a mutant is tested they inherit the mutant's name and run it.
if "mutmut" in sys.modules:
    _popen_init = subprocess.Popen.__init__

    def _popen_init_outside_stats(self, *args, env=None, **kwargs):
        given = os.environ if env is None else env
        if given.get("MUTANT_UNDER_TEST") == "stats":
            env = {**given, "MUTANT_UNDER_TEST": ""}
        _popen_init(self, *args, env=env, **kwargs)

    subprocess.Popen.__init__ = _popen_init_outside_stats

from tutor.store.catalog_cache import load_catalog
from tutor.sandbox.runner import Runner


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def runner(catalog):
    """A CPU runner whose worker (torch imported) lives for the whole test session."""
    r = Runner(catalog, device="cpu")
    yield r
    r.close()


@pytest.fixture(scope="session")
def run(runner, catalog):
    """run(exercise_id, prediction=None) -> RunResult, through the real worker."""
    def _run(exercise_id, prediction=None):
        return runner.run(catalog.get(exercise_id), prediction)
    return _run


@pytest.fixture
def one_torch_thread():
    """torch on one thread for the test, as before it afterwards: the audit's tests train and compare
    models on a shared machine, and one thread keeps their float sums in one order."""
    import torch  # only the tests that ask for this fixture load torch in the test process
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def no_editor(monkeypatch):
    """No $VISUAL or $EDITOR, whatever the shell has: edit mode opens the built-in editor."""
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)


@pytest.fixture
def new_york(monkeypatch):
    """A local time zone that is not UTC, so a time read as local time instead of UTC shows."""
    import time
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
