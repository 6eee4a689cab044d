"""Fuzz the progress and catalog loaders: whatever is on disk, the learner gets
either data or one sentence — never a traceback (issue: bad input)."""

import tempfile
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import DEMO_CATALOG, demo_catalog_dir
from tutor.model.catalog import CatalogError
from tutor.store.catalog_cache import load_catalog
from tutor.store.progress import ProgressStore

toml_scalars = st.one_of(st.integers(-5, 5), st.text(max_size=8), st.booleans(), st.floats(allow_nan=False))
toml_values = st.recursive(toml_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3)), max_leaves=8)
progress_docs = st.fixed_dictionaries({}, optional={
    "format_version": st.one_of(st.just(1), toml_scalars),
    "learner": toml_scalars,
    "exercises": st.one_of(toml_values, st.dictionaries(st.sampled_from(["a", "head-split"]), st.one_of(
        toml_values, st.fixed_dictionaries({}, optional={"note": toml_scalars, "attempts": st.lists(
            st.dictionaries(st.sampled_from(["time", "prediction", "observed", "correct", "status", "device",
                                             "engine_hash"]), toml_scalars), max_size=2)})), max_size=2)),
})


def _check_progress_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ada.toml"
        path.write_bytes(data)
        store = ProgressStore(folder)
        progress = store.load("ada")          # must not raise
        for warning in progress.warnings:
            assert "\n" not in warning
        if not progress.read_only:
            from tutor.model.attempts import Attempt, now
            store.record_attempt("ada", "x", Attempt(time=now(), prediction="p", observed="o", correct=True,
                                                     status="pass", device="cpu", engine_hash="h"))
            assert store.load("ada").of("x").attempts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=200), progress_docs.map(lambda d: tomli_w.dumps(d).encode())))
def test_fuzz_progress_loader_small(data):
    _check_progress_bytes(data)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=400), progress_docs.map(lambda d: tomli_w.dumps(d).encode())))
def test_fuzz_progress_loader_long(data):
    _check_progress_bytes(data)


exercise_keys = ["id", "set", "title", "source", "prompt", "kind", "check", "explain", "hints", "budget_s",
                 "fault", "choices", "tolerance", "observe", "timeout_s", "subject", "colour"]


def _check_catalog_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        try:
            load_catalog(demo_catalog_dir(Path(folder), text))
        except CatalogError as exc:
            assert "\n" not in str(exc) and str(exc).startswith("demo.toml")


@st.composite
def mutated_catalogs(draw):
    import tomllib
    doc = tomllib.loads(DEMO_CATALOG)
    entry = doc["exercise"][0]
    for key in draw(st.lists(st.sampled_from(exercise_keys), max_size=3)):
        if draw(st.booleans()):
            entry.pop(key, None)
        else:
            entry[key] = draw(toml_values)
    if draw(st.booleans()):
        doc["exercise"].append(dict(entry))
    return tomli_w.dumps(doc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), mutated_catalogs()))
def test_fuzz_catalog_loader_small(text):
    _check_catalog_text(text)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=500), mutated_catalogs()))
def test_fuzz_catalog_loader_long(text):
    _check_catalog_text(text)
