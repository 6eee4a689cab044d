"""A check worker that ends before its hello is reported with what it said on the way out.

Whatever stops it — an interpreter bubblewrap cannot execute, a missing torch, a broken installation — the
sentence carries the last line the worker (or bubblewrap) wrote on stderr, so the learner reads the real cause.
"""

import pytest

from tutor.sandbox import runner as runner_module
from tutor.sandbox.launch import STDERR_LINES, launch, why_not_started
from tutor.sandbox.runner import Runner, WorkerError


def _fake_python(tmp_path, body: str):
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def test_a_worker_that_ends_before_its_hello_is_reported_with_its_last_words(catalog, tmp_path, monkeypatch):
    monkeypatch.setenv("TUTOR_CONFINE", "off")  # the interpreter itself, so the fake one is what starts
    last = "bwrap: execvp /venv/bin/python: No such file or directory"
    monkeypatch.setattr(runner_module.sys, "executable", _fake_python(tmp_path, f"echo first >&2; echo '{last}' >&2; exit 1"))
    runner = Runner(catalog, device="cpu")
    try:
        with pytest.raises(WorkerError) as caught:
            runner.warm_up()
    finally:
        runner.close()
    assert str(caught.value) == f"the check worker did not start: {last}"


def test_a_worker_that_says_nothing_is_asked_about_torch(tmp_path):
    proc = launch([_fake_python(tmp_path, "exit 1")], {})
    assert why_not_started(proc) == "it said nothing; is torch installed? Run: pip install torch==2.13.0"


def test_only_the_last_lines_are_kept_however_much_it_writes(tmp_path):
    proc = launch([_fake_python(tmp_path, "i=0; while [ $i -lt 5000 ]; do echo line $i >&2; i=$((i+1)); done")], {})
    assert why_not_started(proc) == "line 4999"
    assert len(proc.said) == STDERR_LINES and proc.said[0] == f"line {5000 - STDERR_LINES}\n"
