"""The Gradescope recipe end to end: docs/gradescope/setup.sh builds the image, run_autograder grades one submission.

As Gradescope does it, as root: the uploaded files lie in ``AUTOGRADER/source``
(setup.sh, run_autograder, assignment.toml, and tutor.tar.gz, a source archive of
this tree as it stands), setup.sh makes the venv, installs the CPU torch and the
tutor from the archive (a regular install, not an editable one) and ends with
``tutor doctor``; then run_autograder grades the submission and
``results/results.json`` is read back. The scripts' own variables move
/opt/tutor and /autograder into a scratch folder, skip apt-get and let pip take
torch from where this machine keeps it.

Marked slow: a second venv with its own torch, and a build of the tutor from
source (about two minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from installed import CHECKOUT, TORCH, archive, clean_environment, interpreters, remove, scratch
from test_grade_batch import autograder, subject

pytestmark = pytest.mark.slow

RECIPE = CHECKOUT / "docs" / "gradescope"


@pytest.fixture
def image():
    """A scratch folder for the image (prefix), the autograder folder and root's HOME; removed after."""
    if os.geteuid() != 0:
        pytest.skip("Gradescope runs setup.sh and run_autograder as root; these tests do not run as root")
    folder = scratch("tutor-gradescope-")
    yield folder
    remove(folder)


def test_setup_sh_builds_an_image_that_grades_a_submission(image, catalog):
    root = autograder(image, {"answers.toml": 'head-split = "b"\nbroadcast-loss = "(3,)"\n',
                              "skip-zero-grad.py": subject(catalog, "skip-zero-grad")},
                      (RECIPE / "assignment.toml").read_text(encoding="utf-8"))
    for name in ("setup.sh", "run_autograder"):
        shutil.copy2(RECIPE / name, root / "source" / name)
    archive(root / "source" / "tutor.tar.gz")
    # python3 on PATH, as apt-get installs it: its own folder, since the venv's python links to it by that path
    tools = Path(interpreters()[0]).parent
    if not (tools / "python3").is_file():
        pytest.skip(f"no python3 beside {interpreters()[0]}")
    constraints = image / "constraints.txt"  # the CPU torch or none: never the CUDA build from PyPI
    constraints.write_text(TORCH + "\n")
    (image / "home").mkdir()
    env = {**clean_environment(image / "home", tools), "TUTOR_PREFIX": str(image / "opt" / "tutor"),
           "TUTOR_AUTOGRADER": str(root), "TUTOR_TORCH_INDEX": "", "TUTOR_SKIP_APT": "1",
           "PIP_CONSTRAINT": str(constraints)}

    setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], cwd=root / "source", env=env,
                           capture_output=True, text=True, timeout=900)
    said = setup.stdout + setup.stderr
    if setup.returncode and f"No matching distribution found for {TORCH.split('==')[0]}" in said:
        pytest.skip(f"pip finds no {TORCH} here: put its wheel where pip looks (PIP_FIND_LINKS)")
    assert setup.returncode == 0, said[-4000:]
    assert Path(env["TUTOR_PREFIX"], "bin", "tutor").is_file()

    graded = subprocess.run(["bash", str(root / "source" / "run_autograder")], cwd=root, env=env,
                            capture_output=True, text=True, timeout=600)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    tests = {t["extra_data"]["exercise"]: (t["score"], t["max_score"], t["status"]) for t in result["tests"]}
    assert tests == {"head-split": (2.0, 2.0, "passed"), "broadcast-loss": (0.0, 1.0, "failed"),
                     "skip-zero-grad": (1.0, 1.0, "passed")}, result["output"]
    assert result["score"] == 3.0 and result["extra_data"]["learner"] == "ada@uni.edu"
