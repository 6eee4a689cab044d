"""The worker's outer wall (bubblewrap), its clean environment, and what the tutor says where a layer is missing."""

import json
import os
import subprocess
import sys

import pytest

from exercises.faults import source_root
from tutor.sandbox import bwrap, confine
from tutor.sandbox.runner import Runner

linux_with_bwrap = pytest.mark.skipif(not bwrap.available().path, reason="no bubblewrap here")


def test_the_environment_is_an_allowlist():
    env = bwrap.environment({"PATH": "/usr/bin", "GRADER_API_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "y", "HOME": "/root",
                             "LC_ALL": "C", "OMP_NUM_THREADS": "1", "TUTOR_PROGRESS_DIR": "/srv/class",
                             "TUTOR_WORKER_CORES": "2", "CUDA_VISIBLE_DEVICES": "0", "SSH_AUTH_SOCK": "/tmp/agent"})
    assert env == {"PATH": "/usr/bin", "LC_ALL": "C", "OMP_NUM_THREADS": "1", "TUTOR_WORKER_CORES": "2",
                   "CUDA_VISIBLE_DEVICES": "0"}


@linux_with_bwrap
def test_the_command_binds_only_what_the_worker_needs():
    argv = bwrap.command(bwrap.available(), [sys.executable, "-m", "tutor.sandbox.worker"], {"PATH": "/usr/bin"})
    pairs = {(argv[i], argv[i + 1]) for i in range(len(argv) - 1)}
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--clearenv",
                 "--die-with-parent", "--new-session"):
        assert flag in argv
    assert ("--cap-drop", "ALL") in pairs and ("--uid", str(bwrap.SANDBOX_ID)) in pairs
    bound = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--bind", "--ro-bind", "--dev-bind-try")}
    root = str(source_root())
    assert root not in bound and str(source_root() / "progress") not in bound  # the packages, not the checkout
    assert {str(source_root() / p) for p in ("tutor", "engine", "exercises")} <= bound
    assert os.path.expanduser("~") not in bound and "/tmp" not in bound
    assert ("--tmpfs", "/tmp") in pairs and ("--proc", "/proc") in pairs and ("--dev", "/dev") in pairs
    assert not any(a == "--bind" for a in argv)  # nothing writable from the host without delegated cgroups


@linux_with_bwrap
def test_the_worker_names_each_layer(catalog):
    runner = Runner(catalog, device="cpu")
    try:
        status = runner.confinement
    finally:
        runner.close()
    assert status.confined, status.why
    assert status.sandbox.startswith("bwrap ") and status.user_namespace and status.capabilities == "0"
    assert status.seccomp and status.landlock >= 1 and status.pid_namespace and status.net_namespace
    assert status.file_cap_mb == confine.FILE_CAP_MB


def _tutor(*args, env):
    environment = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "tutor.cli", *args], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env=environment)


def test_without_bwrap_the_tutor_says_so_and_grading_refuses(tmp_path):
    repaired = tmp_path / "losses.py"
    repaired.write_text((source_root() / "exercises/snippets/losses.py").read_text())
    missing = {bwrap.BWRAP_ENV: str(tmp_path / "no-bwrap-here"), "TUTOR_LEARNER": "instructor"}
    base = ["fix", "broadcast-loss", "--file", str(repaired), "--no-save", "--no-instruments", "--json"]
    refused = _tutor(*base, "--learner", "ada", env=missing)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert "no bubblewrap (bwrap) was found" in error and "--allow-unconfined" in error
    own = _tutor(*base, env=missing)  # a learner's own file runs, and the tutor says which layer is missing
    assert own.returncode == 0, own.stdout + own.stderr
    assert json.loads(own.stdout)["confined"] is False
    assert "ran unconfined here" in own.stderr and "no bubblewrap (bwrap) was found" in own.stderr


def test_without_seccomp_the_probe_says_so_and_is_not_confined(monkeypatch):
    def refuse():
        raise OSError(38, "pyseccomp or libseccomp is missing")
    monkeypatch.setattr(confine.seccomp, "apply", refuse)
    monkeypatch.setattr(confine.seccomp, "available", lambda: False)
    monkeypatch.setattr(confine, "in_user_namespace", lambda: True)
    monkeypatch.setenv(confine.SANDBOX_ENV, "bwrap 0.11.0")
    status = confine.probe()
    if not status.landlock:
        pytest.skip("no Landlock here: the probe names that first")
    assert not status.confined and not status.seccomp
    assert status.why.startswith("no seccomp filter could be loaded")


def test_without_a_user_namespace_the_probe_names_it(monkeypatch):
    monkeypatch.setattr(confine, "in_user_namespace", lambda: False)
    monkeypatch.setenv(confine.SANDBOX_ENV, "bwrap 0.11.0")
    status = confine.probe()
    assert not status.confined and "no user namespace of its own" in status.why


def test_a_bwrap_that_cannot_start_is_named(tmp_path, monkeypatch):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(bwrap.BWRAP_ENV, str(fake))
    wall = bwrap.available()
    assert wall.path == "" and "No permissions to create new namespace" in wall.why
