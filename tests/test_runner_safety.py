"""A subject that raises, hangs, aborts, eats memory or floods output is an outcome,
never a crash of the tutor; the worker is replaced; the tree is never written."""

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path


from exercises.faults import Fault, source_root
from tutor.sandbox.protocol import Request, Side
from tutor.sandbox.runner import Runner, RunResult

SQUEEZE = "    predictions = predictions.squeeze(-1)  # (N, 1) -> (N,): drop only the named axis\n"


def _fault(code: str) -> Fault:
    body = "".join(f"    {line}\n" for line in code.splitlines())
    return Fault(id="t", file="exercises/snippets/losses.py", summary="s", before=SQUEEZE, after=body)


def _request(code, timeout_s=20) -> Request:
    return Request(job=1, check="shapes.broadcast_loss", device="cpu", seed=0, timeout_s=timeout_s,
                   sides=(Side.faulted(_fault(code)),))


def _side(runner, code, timeout_s=20):
    """How the faulted side ended when its fault puts ``code`` in place of the squeeze."""
    return runner.worker.request(_request(code, timeout_s)).sides["faulted"]


def test_an_exception_in_the_subject_is_an_error_outcome(runner):
    side = _side(runner, 'raise ValueError("the subject broke")')
    assert side.status == "error"
    assert "ValueError: the subject broke" in side.error


def test_a_hang_is_a_timeout(runner):
    side = _side(runner, "while True:\n    pass", timeout_s=1.5)
    assert side.status == "timeout" and "1.5 s" in side.error


def test_a_hang_says_which_limit_stopped_it_and_why(runner):
    """The request's reason (the limit follows the machine) ends the timeout's sentence."""
    from dataclasses import replace
    request = replace(_request("while True:\n    pass", timeout_s=1.5), limit_why="this exercise's 0.5 s × 3, because")
    side = runner.worker.request(request).sides["faulted"]
    assert side.status == "timeout"
    # Where it hung comes first (its Python stack, asked for just before it was killed), then the limit.
    # (The loop's two lines, 23 and 24, are where it can be caught.)
    assert re.fullmatch(r"the check did not finish within 1\.5 s and was stopped at exercises/snippets/losses\.py "
                        r"line 2[34] \(squared_errors\); the limit is this exercise's 0\.5 s × 3, because", side.error)


def test_the_speed_probe_leaves_no_child_behind(runner):
    """The probe runs in forked children before the hello; every one of them is reaped: the worker's one
    child left running is its fork server (tutor.sandbox.forkserver), and an ended side's leftovers are
    reaped by the next request."""
    runner.warm_up()
    assert runner.worker.hello.speed is not None
    children = Path(f"/proc/{runner.worker.hello.pid}/task/{runner.worker.hello.pid}/children")
    if children.exists():
        running = [pid for pid in children.read_text().split() if _state(pid) not in ("Z", "gone")]
        assert len(running) == 1, running


def _state(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_an_abort_is_a_crash_outcome_and_the_worker_lives_on(runner):
    side = _side(runner, "import os\nos.abort()")
    assert side.status == "error" and "SIGABRT" in side.error
    assert _side(runner, "pass").status == "ok"


def test_a_flood_of_output_is_cut_to_an_excerpt(runner):
    side = _side(runner, 'print("x" * 5_000_000)')
    assert side.status == "ok"
    assert len(side.output) < 3000 and "more bytes of output not shown" in side.output


def test_unbounded_allocation_is_capped(monkeypatch, catalog):
    monkeypatch.setenv("TUTOR_MEMORY_CAP_MB", "1536")
    r = Runner(catalog, device="cpu")
    try:
        side = _side(r, "hog = []\nwhile True:\n    hog.append(bytearray(64 << 20))", timeout_s=60)
        assert side.status == "error" and "MemoryError" in side.error
    finally:
        r.close()


def test_cancel_replaces_the_worker(catalog):
    import threading
    r = Runner(catalog, device="cpu")
    try:
        r.warm_up()
        first_pid, first_scratch = r.worker.hello.pid, r.worker.hello.scratch
        results = []
        t = threading.Thread(target=lambda: results.append(r.worker.request(
            _request("import time\ntime.sleep(30)", timeout_s=60))))
        t.start()
        import time
        time.sleep(1.0)
        r.cancel()
        t.join(timeout=10)
        assert results == [None]
        result = r.run(catalog.get("broadcast-loss"), "(3, 3)")
        assert isinstance(result, RunResult) and result.status == "pass"
        assert r.worker.hello.pid != first_pid
        assert not os.path.exists(first_scratch)
    finally:
        r.close()


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if any(part in {".git", "__pycache__", ".pytest_cache", ".hypothesis"} for part in path.parts):
            continue
        if path.is_file() and not path.name.endswith(".egg-info"):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_tutor_check_leaves_the_tree_and_progress_untouched(tmp_path):
    """Run `tutor check` from a copy of the checkout and compare the copy before and after."""
    import shutil
    root = tmp_path / "checkout"
    for name in ("tutor", "engine", "exercises", "progress"):
        shutil.copytree(source_root() / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.toml.*"))
    for name in list((root / "progress").iterdir()):
        if name.name != ".gitkeep":
            name.unlink()
    (root / "pyproject.toml").write_text((source_root() / "pyproject.toml").read_text())
    before = _tree_digest(root)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    env.pop("TUTOR_PROGRESS_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "tutor.cli", "check", "broadcast-loss", "head-split",
                           "skip-zero-grad", "cache-offset", "--device", "cpu"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _tree_digest(root) == before
    assert sorted(p.name for p in (root / "progress").iterdir()) == [".gitkeep"]
    leftovers = [p.name for p in scratch.iterdir() if not p.name.startswith("torchinductor")]
    assert leftovers == []  # private copies were removed (torch's own compile cache may stay)


def test_a_cancelled_run_reports_how_long_it_ran(catalog):
    import threading
    import time
    r = Runner(catalog, device="cpu")
    try:
        r.warm_up()
        results = []
        t = threading.Thread(target=lambda: results.append(r.run(catalog.get("non-causal"), "a")))
        t.start()
        time.sleep(1.0)  # the run is training by now
        r.cancel()
        t.join(timeout=20)
        assert results[0].status == "cancelled"
        assert results[0].duration_s >= 0.5  # most of the second it ran before the cancel, not 0
    finally:
        r.close()
