"""The catalog cache is never the truth: a changed input is validated again, a damaged or
foreign entry is ignored, and processes that build at once leave one whole entry."""

import os
import pickle
import subprocess
import sys

import pytest

import tutor.model.catalog
from tests.helpers import DEMO_CATALOG, demo_catalog_dir
from tutor.model.catalog import CatalogError
from tutor.store.catalog_cache import load_catalog
from tutor.store import catalog_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache folder, and a count of the real builds (``builds[0]``)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("TUTOR_CACHE_DIR", str(folder))
    builds = [0]
    real = tutor.model.catalog.build_catalog

    def counted(*args, **kwargs):
        builds[0] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(tutor.model.catalog, "build_catalog", counted)
    yield folder, builds
    load_catalog.cache_clear()


def fresh_load(directory):
    """Load as a new process would: the in-process memo forgotten, the cache folder consulted."""
    load_catalog.cache_clear()
    return load_catalog(directory)


def entries(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_second_load_comes_from_the_cache_and_equals_the_built_catalog(tmp_path, cache):
    folder, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    built = fresh_load(directory)
    assert builds == [1] and len(entries(folder)) == 1 and entries(folder)[0].endswith(".pickle")
    cached = fresh_load(directory)
    assert builds == [1]
    assert cached == built and cached.get("demo-one").title == built.get("demo-one").title


@pytest.mark.parametrize("change", ["tutor version", "validation rules"])
def test_an_entry_of_another_tutor_or_other_rules_is_not_used(tmp_path, monkeypatch, cache, change):
    """A stale entry: the same set files, but another tutor's version or changed validation rules
    (catalog.py, answers.py, faults.py) made it; it is built again, beside the old one."""
    folder, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    fresh_load(directory)
    if change == "tutor version":
        monkeypatch.setattr(catalog_cache, "__version__", catalog_cache.__version__ + ".1")
    else:
        monkeypatch.setattr(catalog_cache, "_rules_digest", lambda: "0" * 24)
    assert fresh_load(directory).get("demo-one") and builds == [2]
    assert fresh_load(directory).get("demo-one") and builds == [2]  # and that entry is used from then on
    assert len(entries(folder)) == 2


def test_an_edited_set_file_is_read_and_validated_again(tmp_path, cache):
    folder, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    assert fresh_load(directory).get("demo-one").title == "t"
    toml = directory / "demo.toml"
    toml.write_text(toml.read_text().replace('title = "t"', 'title = "u"'))
    assert fresh_load(directory).get("demo-one").title == "u" and builds == [2]
    # a change that breaks the file is the loader's error, never the last good catalog
    toml.write_text(toml.read_text().replace('title = "u"', 'title = "u"\ncolour = "red"'))
    with pytest.raises(CatalogError, match="unknown key 'colour'"):
        fresh_load(directory)
    with pytest.raises(CatalogError, match="unknown key 'colour'"):  # and not cached as good later
        fresh_load(directory)


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path, cache):
    folder, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    fresh_load(directory)
    toml = directory / "demo.toml"
    before = toml.stat()
    toml.write_text(toml.read_text().replace('title = "t"', 'title = "v"'))
    os.utime(toml, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert toml.stat().st_size == before.st_size and toml.stat().st_mtime_ns == before.st_mtime_ns
    assert fresh_load(directory).get("demo-one").title == "v" and builds == [2]


def test_a_changed_check_module_or_fault_target_is_validated_again(tmp_path, cache):
    _, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    fresh_load(directory)
    check = directory / "demo.py"  # the check module and the fault's target, both read by validation
    check.write_text("def two(ctx):\n    return True\n")
    with pytest.raises(CatalogError, match="defines no function 'one'"):
        fresh_load(directory)
    check.write_text("def one(ctx):\n    return  True\n")
    with pytest.raises(CatalogError, match="before text occurs 0 times"):
        fresh_load(directory)
    check.write_text("def one(ctx):\n    return True\n")  # the files as first cached: that entry holds again
    assert fresh_load(directory).get("demo-one") and builds == [3]


def test_a_set_file_added_or_removed_is_seen(tmp_path, cache):
    _, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    fresh_load(directory)
    other = DEMO_CATALOG.replace('"demo"', '"more"').replace("demo-one", "more-one").replace("demo-fault", "more-fault")
    (directory / "more.toml").write_text(other)
    assert [s.id for s in fresh_load(directory).sets] == ["demo", "more"]
    (directory / "more.toml").unlink()
    assert [s.id for s in fresh_load(directory).sets] == ["demo"]
    assert builds == [3]


@pytest.mark.parametrize("damage", [b"", b"not a pickle at all", "truncated", "other shape", "other inputs"])
def test_a_damaged_or_foreign_entry_is_ignored_and_replaced(tmp_path, cache, damage):
    folder, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    good = fresh_load(directory)
    (entry,) = folder.iterdir()
    whole = entry.read_bytes()
    if damage == "truncated":
        damage = whole[: len(whole) // 2]
    elif damage == "other shape":
        damage = pickle.dumps(["a list, not an entry"])
    elif damage == "other inputs":  # a well-formed entry whose recorded digests are not the files'
        data = pickle.loads(whole)
        data["files"] = {name: ("0" * 40, None) for name in data["files"]}
        data["value"] = "a stale value that must never be returned"
        damage = pickle.dumps(data)
    entry.write_bytes(damage)
    assert fresh_load(directory) == good and builds == [2]
    assert fresh_load(directory) == good and builds == [2]  # the rebuilt entry is whole again
    assert entries(folder) == [entry.name]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="file modes are POSIX")
def test_an_entry_others_can_write_is_not_unpickled(tmp_path, cache):
    folder, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    fresh_load(directory)
    (entry,) = folder.iterdir()
    entry.chmod(0o666)
    fresh_load(directory)
    assert builds == [2]


def test_an_unwritable_or_switched_off_cache_still_loads(tmp_path, monkeypatch, cache):
    _, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TUTOR_CACHE_DIR", str(blocker / "cache"))  # mkdir under a file fails
    assert fresh_load(directory).get("demo-one") and fresh_load(directory).get("demo-one")
    monkeypatch.setenv("TUTOR_CACHE_DIR", catalog_cache.OFF)
    assert fresh_load(directory).get("demo-one")
    assert builds == [3]


CONCURRENT = """
import sys
from tutor.store.catalog_cache import load_catalog
cat = load_catalog(__import__('pathlib').Path(sys.argv[1]))
print(repr([(e.id, e.title, e.fault) for e in cat.exercises]))
"""


def test_processes_building_at_once_each_get_the_catalog_and_leave_one_whole_entry(tmp_path, cache):
    folder, builds = cache
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    env = {**os.environ, "TUTOR_CACHE_DIR": str(folder)}
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(directory)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert len({out for out, _ in outs}) == 1 and "demo-one" in outs[0][0]
    assert len(entries(folder)) == 1 and entries(folder)[0].endswith(".pickle")  # no temporary file left
    fresh_load(directory)
    assert builds == [0]  # this process found the entry the others wrote


def test_the_shipped_catalog_from_the_cache_equals_a_fresh_validation(tmp_path, cache):
    folder, builds = cache
    built = fresh_load(tutor.model.catalog.EXERCISES_DIR)
    cached = fresh_load(tutor.model.catalog.EXERCISES_DIR)
    assert builds == [1] and cached == built and len(cached.exercises) >= 100
    assert cached.faults == built.faults


def test_a_settled_file_is_trusted_by_its_stat_and_an_edit_still_changes_it(tmp_path, monkeypatch, cache):
    _, builds = cache
    monkeypatch.setattr(catalog_cache, "RACY_NS", -10**15)  # every file counts as settled
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    fresh_load(directory)
    digested = []
    real = catalog_cache._file_digest
    monkeypatch.setattr(catalog_cache, "_file_digest", lambda name: digested.append(name) or real(name))
    fresh_load(directory)
    assert builds == [1] and digested == []  # size, times and inode as recorded: not read again
    toml = directory / "demo.toml"
    before = toml.stat()
    toml.write_text(toml.read_text().replace('title = "t"', 'title = "w"'))
    os.utime(toml, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime set back; ctime cannot be
    assert fresh_load(directory).get("demo-one").title == "w" and builds == [2]
    assert str(toml) in digested


def test_without_a_folder_named_the_entry_lives_in_pycache_beside_the_set_files(tmp_path, monkeypatch, cache):
    monkeypatch.delenv("TUTOR_CACHE_DIR")
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    fresh_load(directory)
    assert [p.suffix for p in (directory / "__pycache__").iterdir()] == [".pickle"]


def test_catalog_dir_names_another_folder(tmp_path, monkeypatch, cache):
    directory = demo_catalog_dir(tmp_path, DEMO_CATALOG)
    monkeypatch.setenv("TUTOR_CATALOG_DIR", str(directory))
    load_catalog.cache_clear()
    assert [e.id for e in load_catalog().exercises] == ["demo-one"]
