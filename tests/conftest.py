"""Shared fixtures: one catalog and one warm worker for the whole session."""

import os
import tempfile

import pytest

# The validated catalog is cached across processes (tutor.store.catalog_cache): the session's
# own folder, so no test reads or leaves an entry in the user's cache, and every subprocess
# the tests start shares it.
os.environ.setdefault("TUTOR_CACHE_DIR", tempfile.mkdtemp(prefix="tutor-test-cache-"))

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
