#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu).
# Upload a zip whose root holds setup.sh, run_autograder, assignment.toml and tutor.tar.gz
# (a source archive of this repository: git archive -o tutor.tar.gz HEAD).
set -euo pipefail
apt-get install -y python3 python3-venv python3-pip
python3 -m venv /opt/tutor
mkdir -p /opt/tutor/src
tar -xzf /autograder/source/tutor.tar.gz -C /opt/tutor/src
# the CPU build of torch first, pinned: a bare "torch" would pull a multi-GB CUDA build
/opt/tutor/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
/opt/tutor/bin/pip install /opt/tutor/src
# prove the image can run a check before any learner submits
/opt/tutor/bin/tutor check head-split --device cpu
