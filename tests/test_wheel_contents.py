"""What the wheel holds: every file of the tutor's packages, and nothing of the tests or of anyone's progress.

The tutor reads, at run time, more than its modules: the set files
(``exercises/*.toml``, which the catalog loader lists by pattern), the
snippet and subject modules a check copies and faults as text, and the
stylesheet the TUI names (``CSS_PATH``). A regular install has only what the
wheel carries, so each of these must be in it (pyproject.toml's
``[tool.setuptools.package-data]`` names the files that are not modules).
"""

from __future__ import annotations

import subprocess
import zipfile

import pytest

from installed import CHECKOUT, tree_files, wheel  # noqa: F401  (the wheel fixture)

PACKAGES = ("tutor", "engine", "exercises")


@pytest.fixture(scope="module")
def names(wheel):
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def tracked(*patterns):
    """The files git tracks under ``patterns`` that are in the tree now."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", *patterns], cwd=CHECKOUT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    return {name for name in listed if name and (CHECKOUT / name).is_file()}


def test_every_file_of_the_tutors_packages_is_in_the_wheel(names):
    """Modules, snippet and subject files, set files, the stylesheet: a package folder holds only what runs."""
    files = {name for name in tree_files() if name.startswith(tuple(f"{p}/" for p in PACKAGES))}
    assert files >= tracked(*PACKAGES)  # what is built is at least what is committed
    assert sorted(files - names) == []


def test_the_files_read_by_pattern_or_by_name_are_in_the_wheel(names):
    """The set files the catalog lists and the stylesheet the TUI names, which are not modules."""
    from tutor.ui.app import TutorApp
    sets = tracked("exercises/*.toml")
    assert sets, "no set files found"
    assert sorted(sets - names) == []
    assert f"tutor/ui/{TutorApp.CSS_PATH}" in names


def test_nothing_of_the_tests_or_of_progress_is_in_the_wheel(names):
    tops = {name.split("/", 1)[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == set(PACKAGES)
    assert [name for name in names if "__pycache__" in name or name.endswith((".pyc", ".toml.lock"))] == []
