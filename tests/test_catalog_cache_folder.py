"""Where the catalog cache lives: beside a checkout's files, but never in an installation's site-packages.

A regular install's ``site-packages`` holds only what pip put there (so that uninstalling leaves nothing),
even when the tutor runs as root and could write there; its cache goes to the user's cache folder.
"""

from pathlib import Path

from tutor.store import catalog_cache


def test_a_checkouts_cache_is_beside_its_files(tmp_path, monkeypatch):
    monkeypatch.delenv("TUTOR_CACHE_DIR", raising=False)
    exercises = tmp_path / "checkout" / "exercises"
    exercises.mkdir(parents=True)
    assert catalog_cache.cache_folder(exercises) == exercises / "__pycache__"


def test_an_installed_tutors_cache_is_in_the_user_cache_folder_though_site_packages_is_writable(tmp_path, monkeypatch):
    monkeypatch.delenv("TUTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for packages in ("site-packages", "dist-packages"):
        exercises = tmp_path / "venv" / "lib" / "python3.11" / packages / "exercises"
        exercises.mkdir(parents=True)
        folder = catalog_cache.cache_folder(exercises)
        assert folder == Path(tmp_path / "cache" / "tutor" / "catalog"), folder


def test_the_variable_chooses_the_folder_or_turns_the_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert catalog_cache.cache_folder(tmp_path) == tmp_path / "mine"
    monkeypatch.setenv("TUTOR_CACHE_DIR", catalog_cache.OFF)
    assert catalog_cache.cache_folder(tmp_path) is None
