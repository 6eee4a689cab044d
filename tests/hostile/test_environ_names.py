"""The worker's environment is a list of exact names: a grader's key under a familiar prefix never reaches a side.

A grader's shell often holds ``NVIDIA_API_KEY`` (NVIDIA's cloud), or a token whose name starts like a
setting the sandbox lets through (``CUDA_``, ``PYTORCH_``, ``LC_``, ``OMP_``). The learner's side reads its
whole environment and reports the names that look like a key and whether any value holds the secret;
none may, and the secret is in no output. ``PYTHONPATH`` there holds only the folders the subject's
packages are imported from, never an entry of the grader's own ``PYTHONPATH``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attack import run_fix
from tutor.sandbox import bwrap

KEY = "nvidia-secret-0123456789"
#: Names a grader's secret can hide under, each starting as a setting torch, CUDA or the C library reads.
SECRETS = ("NVIDIA_API_KEY", "CUDA_TOKEN", "PYTORCH_HUB_TOKEN", "LC_TOKEN", "OMP_TOKEN", "ATEN_TOKEN",
           "CUBLAS_TOKEN", "MKL_TOKEN")
GRADERS_PATH = "/srv/grader-only-modules"

ATTACK = """
import os
keys = sorted(k for k in os.environ if k.endswith(('_KEY', '_TOKEN')))
leaked = sorted(k for k, v in os.environ.items() if 'nvidia-secret' in v)
report([keys, leaked, os.environ.get('PYTHONPATH', '')])
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    before = {name: os.environ.get(name) for name in (*SECRETS, "PYTHONPATH")}
    os.environ.update({name: KEY for name in SECRETS})
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (GRADERS_PATH, before["PYTHONPATH"]) if p)
    try:
        return run_fix(tmp_path_factory.mktemp("environ-names"), ATTACK)
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def test_no_key_under_a_settings_prefix_reaches_the_side(outcome):
    keys, leaked, _ = eval(outcome.saw)  # the attack's own list, printed by repr
    assert keys == [] and leaked == [], (keys, leaked)
    assert KEY not in outcome.text


def test_pythonpath_holds_only_the_packages_folders(outcome):
    _, _, path = eval(outcome.saw)
    entries = path.split(os.pathsep)
    assert GRADERS_PATH not in entries
    assert entries and all(any((Path(p) / name).is_dir() for name in bwrap.SOURCE_PACKAGES) for p in entries), entries


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()


def test_the_allowlist_is_exact_names():
    grader = {name: KEY for name in SECRETS}
    kept = {"CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "2", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8",
            "ATEN_CPU_CAPABILITY": "avx2", "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "PYTORCH_CUDA_ALLOC_CONF": "x",
            "NVIDIA_TF32_OVERRIDE": "0", "MKL_NUM_THREADS": "2"}
    assert bwrap.environment({**grader, **kept}) == kept
