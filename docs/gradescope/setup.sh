#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu).
# Upload a zip whose root holds setup.sh, run_autograder, assignment.toml and tutor.tar.gz
# (a source archive of this repository: git archive -o tutor.tar.gz HEAD).
#
# Gradescope sets none of these; they let the same steps run elsewhere (tests/test_gradescope_recipe.py):
#   TUTOR_PREFIX       where the tutor's venv goes (default /opt/tutor; run_autograder reads it too)
#   TUTOR_AUTOGRADER   the autograder folder, with source/tutor.tar.gz in it (default /autograder)
#   TUTOR_TORCH_INDEX  the index torch comes from (default PyTorch's CPU index; empty: pip's own settings)
#   TUTOR_SKIP_APT=1   python3 and its venv module are already installed: no apt-get
set -euo pipefail
prefix=${TUTOR_PREFIX:-/opt/tutor}
autograder=${TUTOR_AUTOGRADER:-/autograder}
torch_index=${TUTOR_TORCH_INDEX-https://download.pytorch.org/whl/cpu}
if [[ ${TUTOR_SKIP_APT:-} != 1 ]]; then
    apt-get install -y python3 python3-venv python3-pip
fi
python3 -m venv "$prefix"
mkdir -p "$prefix/src"
tar -xzf "$autograder/source/tutor.tar.gz" -C "$prefix/src"
# the CPU build of torch first, pinned: a bare "torch" would pull a multi-GB CUDA build
"$prefix/bin/pip" install ${torch_index:+--index-url "$torch_index"} torch==2.13.0
"$prefix/bin/pip" install "$prefix/src"
# prove the image can grade before any learner submits: the checks run, confined (exit 0), or the build fails
"$prefix/bin/tutor" doctor --device cpu
