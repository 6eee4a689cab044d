"""A side says what really capped it and what it left behind: a cgroup its warden could not join, and a
private tree that could not be removed, are each told in one sentence, never passed over.

The refusals are made here, in this process: the low-level write that moves a process into a cgroup
(``namespaces._write`` of ``cgroup.procs``) and the unlink that removes a tree's file are made to raise,
and the real code that meets them (the probe, the side's warden, the worker's side) runs as it does in
the worker.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tutor.cli.common import confinement_notices
from tutor.sandbox import child, confine, namespaces, protocol, side, tree
from tutor.sandbox.protocol import Answer, Request, Side
from tutor.sandbox.runner import grade


def refuse_joining(monkeypatch) -> None:
    """Make every move into a cgroup fail as cgroup v2 refuses it (EACCES on ``cgroup.procs``); any other
    cgroup file is written as before."""
    real = namespaces._write

    def write(path: str, text: str) -> None:
        if os.path.basename(path) == "cgroup.procs":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        real(path, text)

    monkeypatch.setattr(namespaces, "_write", write)


def test_join_cgroup_returns_the_refusal_instead_of_swallowing_it(tmp_path, monkeypatch):
    assert namespaces.join_cgroup(None) == ""
    refuse_joining(monkeypatch)
    assert namespaces.join_cgroup(str(tmp_path)) == os.strerror(errno.EACCES)


def test_the_probe_says_cgroup_only_where_its_child_could_join_one(monkeypatch):
    made = namespaces.make_pids_cgroup(f"tutor-test-{os.getpid()}", 8)
    namespaces.remove_cgroup(made)
    if made is None:
        pytest.skip("no pids cgroup can be made here: the probe says 'counted' either way")
    assert confine.probe().processes == "cgroup"
    refuse_joining(monkeypatch)
    status = confine.probe()  # its forked child meets the same refusal a warden would
    assert (status.processes, status.memory) == ("counted", "rlimit")


def run_warden(tmp_path: Path, device: str = "cpu") -> tuple[side.SideRun, str]:
    """Fork the real warden of a side whose cgroups are two folders here, read what it and its child wrote on
    the side's pipe, and feed it to the worker's :class:`side.SideRun` as the worker does; the run and its log."""
    groups = [tmp_path / "pids", tmp_path / "memory"]
    for folder in groups:
        folder.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    key = os.urandom(32)
    log_fd = os.open(tmp_path / "output.log", os.O_RDWR | os.O_CREAT, 0o600)
    request = Request(job=1, check="no_such_module.check", device=device, seed=0, timeout_s=30.0, sides=())
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # never returns: the warden ends with os._exit
        os.close(read_fd)
        child.warden(request, str(tree), 1, write_fd, key, confine.Status(False), (), str(groups[0]),
                     str(groups[1]), log_fd=log_fd)
    os.close(write_fd)
    os.close(log_fd)
    with os.fdopen(read_fd, "rb") as fh:
        said = fh.read()  # until the warden and its child are gone: the check fails at its import
    os.waitpid(pid, 0)
    run = side.SideRun(Side("yours"), request, threads=1)
    run._key, run.cgroup, run.memory_cgroup = key, str(groups[0]), str(groups[1])
    run.feed(said)
    return run, (tmp_path / "output.log").read_text(errors="replace")


def test_a_warden_refused_its_cgroups_says_so_and_the_side_reports_the_caps_that_held(tmp_path, monkeypatch):
    refuse_joining(monkeypatch)
    run, log = run_warden(tmp_path)
    why = os.strerror(errno.EACCES)
    assert run.unjoined == {"pids": why, "memory": why}, log
    assert run.limits == {"processes": "counted", "memory": "rlimit" if child.MEMORY_CAP_MB > 0 else "none"}
    pids, memory = run.refused[:2]
    assert pids.startswith(f"could not join its pids cgroup ({why})") and "the warden counted them" in pids
    assert memory.startswith(f"could not join its memory cgroup ({why})") and "RLIMIT_AS" in memory
    for sentence in (pids, memory):
        assert ". " not in sentence and not sentence.endswith(".")  # one sentence each, after "the yours side"
    assert run.tampered == 0 and isinstance(run._last, protocol.Raised)  # the warden's lines are signed


def test_a_warden_that_joined_its_cgroups_says_nothing_and_keeps_them(tmp_path):
    run, log = run_warden(tmp_path)  # plain folders: the write into cgroup.procs succeeds
    assert run.unjoined == {} and run.limits == {"processes": "cgroup", "memory": "cgroup"}, log
    assert not any("cgroup" in what for what in run.refused)


def test_a_cuda_side_without_its_memory_cgroup_is_told_its_memory_was_not_capped():
    sentence = side.unjoined_sentence("memory", "Permission denied", "cuda")
    assert sentence.endswith("its memory was not capped at all") and "RLIMIT_AS" not in sentence


def refuse_unlinking(monkeypatch, name: str) -> None:
    """Make removing any file called ``name`` fail (EPERM), as a file the tree cannot lose would."""
    real = os.unlink

    def unlink(path, *args, **kwargs):
        if os.path.basename(os.fspath(path)) == name:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)


def test_a_tree_that_cannot_be_removed_is_said_never_kept_silently(tmp_path, monkeypatch):
    folder = tmp_path / "yours-x"
    (folder / "engine").mkdir(parents=True)
    (folder / "engine" / "stuck.py").write_text("x = 1\n")
    (folder / "gone.py").write_text("y = 2\n")
    refuse_unlinking(monkeypatch, "stuck.py")
    said = tree.remove_tree(str(folder))
    assert said == (f"left its tree, which could not be removed: {folder / 'engine' / 'stuck.py'} "
                    f"({os.strerror(errno.EPERM)})")
    assert not (folder / "gone.py").exists()  # the rest went
    monkeypatch.undo()
    assert tree.remove_tree(str(folder)) == "" and not folder.exists()


def test_a_side_whose_tree_is_left_behind_says_so_in_its_row_and_its_notice(tmp_path, monkeypatch, catalog):
    exercise = catalog.get("broadcast-loss")
    request = Request(job=1, check=exercise.check, device="cpu", seed=0, timeout_s=30.0, sides=())
    # a file outside the subject packages: the tree is copied, then refused, then removed
    run = side.SideRun(Side("yours", files=(("nowhere/losses.py", "x = 1\n"),)), request, threads=1,
                       scratch=str(tmp_path))
    refuse_unlinking(monkeypatch, "losses.py")
    run.start()
    ended = run.finish(timed_out=False)
    monkeypatch.undo()
    assert ended.status == "error" and "must lie inside" in ended.error
    assert ended.refused and ended.refused[0].startswith("left its tree, which could not be removed: ")
    assert f"(it {ended.refused[0]})" in ended.error
    result = grade(exercise, Answer(job=1, torch="t", device="cpu", duration_s=0.0, sides={"yours": ended}), None, 0)
    notices: list[str] = []
    confinement_notices(result, notices.append)
    assert [n for n in notices if "left its tree" in n] == [f"the yours side {ended.refused[0]}"]


def deep_tree(folder: Path, depth: int) -> None:
    """``folder`` holding a chain of ``depth`` folders, one file in each: deeper than any path can name whole."""
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def test_a_tree_deeper_than_shutil_recurses_is_removed_whole(tmp_path):
    folder = tmp_path / "tree"
    deep_tree(folder, 3000)  # shutil.rmtree recurses once a level: past the recursion limit
    assert tree.remove_tree(str(folder)) == "" and not folder.exists()


def test_a_deep_tree_that_cannot_be_removed_is_said_not_raised(tmp_path, monkeypatch):
    folder = tmp_path / "tree"
    deep_tree(folder, 3000)
    real = os.rmdir

    def refuse(path, *args, dir_fd=None):
        if path == "d" and dir_fd is not None:
            raise PermissionError(errno.EPERM, "Operation not permitted", path)
        return real(path, *args, dir_fd=dir_fd)

    monkeypatch.setattr(tree.os, "rmdir", refuse)
    said = tree.remove_tree(str(folder))
    monkeypatch.undo()
    # what is left is as deep still: removed here, or pytest's own clean-up of old temp folders meets it
    assert tree.remove_tree(str(folder)) == "" and not folder.exists()
    assert said.startswith("left its tree, which could not be removed: d (Operation not permitted)"), said
