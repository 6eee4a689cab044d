"""The startup benchmark's long catalog is a valid catalog of the size asked for."""

import importlib.util
from pathlib import Path

from tutor.store.catalog_cache import load_catalog

ROOT = Path(__file__).resolve().parent.parent


def test_a_generated_catalog_validates_with_the_count_asked_for(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("generated_catalog", ROOT / "benchmarks" / "generated_catalog.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = load_catalog()
    directory = module.generate(len(shipped.exercises) + 45, tmp_path / "big")
    load_catalog.cache_clear()
    big = load_catalog(directory)
    assert len(big.exercises) == len(shipped.exercises) + 45
    assert [s.id for s in big.sets][-2:] == ["generated-001", "generated-002"]
    for copy in big.get_set("generated-002").exercises:  # each a shipped exercise under a new id
        original = shipped.get(copy.id.rsplit("-", 1)[0])
        assert (copy.check, copy.fault, copy.prompt, copy.set) == (original.check, original.fault, original.prompt,
                                                                   "generated-002")
    monkeypatch.setenv("TUTOR_CATALOG_DIR", str(directory))
    load_catalog.cache_clear()
    assert len(load_catalog().exercises) == len(big.exercises)
    load_catalog.cache_clear()
