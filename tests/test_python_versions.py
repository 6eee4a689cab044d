"""The wheel on every Python the project says it supports (``requires-python``), as far as each can be tried here.

For each interpreter of 3.10 to 3.13 this machine has (on PATH, in /usr/bin or
under pyenv): a fresh venv, the wheel with every dependency but torch, then
``tutor list`` and ``tutor show`` — the catalog, the store and the views, none of
which imports torch — so a construct newer than the oldest supported Python
fails here. Where the floor's CPU build of torch installs for that Python, a
check runs too (``tutor run``); where pip finds no such build, that part is
skipped with the reason. A version this machine lacks is skipped, named.

Slow: each venv takes a minute of installs.
"""

from __future__ import annotations

import glob
import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from installed import TORCH, clean_environment, pip, remove, scratch, wheel  # noqa: F401  (wheel: a fixture)

pytestmark = pytest.mark.slow

#: The minor versions ``requires-python`` (>=3.10) admits and the project tries.
VERSIONS = ("3.10", "3.11", "3.12", "3.13")


def interpreter(version: str) -> str | None:
    """A Python ``version`` on this machine: on PATH, in /usr/bin, or the newest pyenv build of it."""
    for found in (shutil.which(f"python{version}"), f"/usr/bin/python{version}",
                  *sorted(glob.glob(f"/root/.pyenv/versions/{version}.*/bin/python{version}"), reverse=True)):
        # a pyenv shim for a version not selected is on PATH but runs nothing: only one that runs counts
        if found and Path(found).is_file() and subprocess.run([found, "-c", "pass"], capture_output=True).returncode == 0:
            return found
    return None


def requirements_but_torch(wheel_path: Path) -> list[str]:
    """The wheel's own dependencies (``Requires-Dist`` without an extra), torch left out."""
    with zipfile.ZipFile(wheel_path) as archive:
        [metadata] = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
    needs = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]
    return [need for need in needs if "extra ==" not in need and not re.match(r"torch\b", need)]


def test_requires_python_is_the_versions_tried_here():
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^requires-python = ">=3\.10"$', text, re.M), "change VERSIONS with requires-python"


@pytest.fixture(scope="module", params=VERSIONS)
def venv(request, wheel):  # noqa: F811  (wheel: the fixture imported above)
    python = interpreter(request.param)
    if python is None:
        pytest.skip(f"no Python {request.param} on this machine")
    root = scratch(f"tutor-py{request.param}-")
    made = subprocess.run([python, "-m", "venv", str(root / "venv")], capture_output=True, text=True)
    if made.returncode:
        remove(root)
        pytest.skip(f"Python {request.param} makes no venv here: {made.stderr.strip()[-200:]}")
    venv = root / "venv"
    pip(venv, *requirements_but_torch(wheel))
    pip(venv, "--no-deps", str(wheel))
    (root / "home").mkdir()
    (root / "work").mkdir()
    yield request.param, venv, root
    remove(root)


def tutor(venv: Path, root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "tutor"), *args], cwd=root / "work", capture_output=True, text=True,
                          env=clean_environment(root / "home", venv / "bin"), timeout=600)


def test_the_catalog_and_the_views_run_on_each_supported_python(venv):
    version, folder, root = venv
    listed = tutor(folder, root, "list", "--json")
    assert listed.returncode == 0, f"Python {version}: tutor list: {listed.stderr}"
    ids = [e["id"] for s in json.loads(listed.stdout)["sets"] for e in s["exercises"]]
    assert "broadcast-loss" in ids and len(ids) == len(set(ids))
    shown = tutor(folder, root, "show", "broadcast-loss", "--json")
    assert shown.returncode == 0, f"Python {version}: tutor show: {shown.stderr}"
    assert json.loads(shown.stdout)["id"] == "broadcast-loss"


def test_a_check_runs_on_each_supported_python_where_the_floors_torch_installs(venv):
    version, folder, root = venv
    done = subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", TORCH],
                          capture_output=True, text=True)
    if done.returncode:
        said = [line for line in done.stderr.splitlines() if line.startswith("ERROR")] or [done.stderr.strip()]
        pytest.skip(f"pip finds no {TORCH} for Python {version} here ({said[0][:160]}): "
                    "only the catalog and the views were tried on it")
    done = tutor(folder, root, "run", "broadcast-loss", "--predict", "(3, 3)", "--no-save", "--json")
    assert done.returncode == 0, f"Python {version}: {done.stdout}{done.stderr}"
    assert json.loads(done.stdout)["correct"] is True
