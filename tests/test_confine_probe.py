"""How the worker's probe turns what its forked child found into a Status: pinned in this process.

:func:`tutor.sandbox.confine.probe` forks a child that tries each layer and writes what held;
:func:`tutor.sandbox.confine.status_from` decides, from that, the Landlock ABI, the worker's outer wall,
its user namespace and whether seccomp loads, what the Status says and which missing layer its ``why``
names. The decision is fed hand-made findings here; the probe's own plumbing runs with a stand-in
child body. tests/test_sandbox_layers.py forks the real child on this machine's layers.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from tutor.sandbox import confine, reads
from tutor.sandbox.namespaces import MAX_PROCESSES

HELD = {"pid_ns": True, "net_ns": True, "landlock": True, "seccomp": True, "caps": 0, "joined": ["pids", "memory"]}
HERE = {"sandbox": "bwrap 0.11.0", "sandbox_why": "", "user_namespace": True, "seccomp_loads": True}

NO_WALL = "the check worker was not started inside bubblewrap"
NO_USER = "the check worker has no user namespace of its own, so it keeps the tutor's user"
CAPS = "a side's child could not drop its capabilities"
NO_LANDLOCK = ("this kernel has no Landlock (Linux 5.13 or later with Landlock enabled), so its files are not "
               "protected from it")
LANDLOCK_REFUSED = "the kernel refused to apply Landlock here"
NO_SECCOMP = "no seccomp filter could be loaded (pip install pyseccomp, with the system's libseccomp)"
SECCOMP_REFUSED = "the kernel refused the seccomp filter"
OPEN_NETWORK = "no network namespace and a Landlock older than ABI 4, so it may open network connections"


def status(found=None, abi=6, **here):
    """The Status for what a probe's child said (a dict, sent as JSON, or the raw bytes) on this ABI."""
    found = HELD if found is None else found
    said = found if isinstance(found, bytes) else json.dumps(found).encode()
    return confine.status_from(said, abi, **{**HERE, **here})


def test_where_every_layer_held_it_is_confined_and_names_each_layer():
    assert status() == confine.Status(True, landlock=6, pid_namespace=True, net_namespace=True, network="namespace",
                                      signals=True, processes="cgroup", sandbox="bwrap 0.11.0", user_namespace=True,
                                      capabilities="0", seccomp=True, memory="cgroup",
                                      file_cap_mb=confine.FILE_CAP_MB, why="")


@pytest.mark.parametrize("change, here, why", [
    ({}, {"sandbox": ""}, NO_WALL),
    ({}, {"sandbox": "", "sandbox_why": "no bubblewrap (bwrap) was found on PATH"},
     "no bubblewrap (bwrap) was found on PATH"),
    ({}, {"user_namespace": False}, NO_USER),
    ({"caps": 0x1ff}, {}, CAPS + " (CapEff 1ff)"),
    ({"caps": -1}, {}, CAPS),
    ({"caps": "0"}, {}, CAPS),
    ({"caps": None}, {}, CAPS),
    ({"landlock": False}, {}, LANDLOCK_REFUSED),
    ({"seccomp": False}, {}, SECCOMP_REFUSED),
    ({"seccomp": False}, {"seccomp_loads": False}, NO_SECCOMP),
])
def test_each_missing_layer_is_named_and_leaves_it_unconfined(change, here, why):
    found = status({**HELD, **change}, **here)
    assert not found.confined and found.why == why
    assert found.sentence == f"Code under check runs unconfined here: {why}"


def test_a_kernel_without_landlock_is_named_as_such():
    found = status({**HELD, "landlock": False}, abi=0)
    assert not found.confined and found.why == NO_LANDLOCK and found.landlock == 0


def test_the_first_thing_missing_is_the_one_named():
    nothing = b"the child died before it said anything"
    assert status(nothing, abi=0, sandbox="", user_namespace=False, seccomp_loads=False).why == NO_WALL
    assert status(nothing, abi=0, user_namespace=False, seccomp_loads=False).why == NO_USER
    assert status(nothing, abi=0, seccomp_loads=False).why == CAPS
    assert status({"caps": 0}, abi=0, seccomp_loads=False).why == NO_LANDLOCK
    assert status({"caps": 0, "landlock": True}, abi=3, seccomp_loads=False).why == NO_SECCOMP
    last = status({"caps": 0, "landlock": True, "seccomp": True}, abi=3)
    assert last.why == OPEN_NETWORK and last.confined  # an open network is said, and grading may still run


def test_a_child_that_said_nothing_readable_held_nothing():
    for said in (b"", b"{not json", json.dumps({"caps": -1, "joined": []}).encode()):
        found = confine.status_from(said, 6, **HERE)
        assert found == confine.Status(False, landlock=0, network="none", processes="counted", sandbox="bwrap 0.11.0",
                                       user_namespace=True, capabilities="", memory="rlimit",
                                       file_cap_mb=confine.FILE_CAP_MB, why=CAPS)


@pytest.mark.parametrize("net_ns, landlock, abi, network", [
    (True, False, 0, "namespace"), (True, True, 3, "namespace"), (False, True, 4, "landlock"),
    (False, True, 6, "landlock"), (False, True, 3, "none"), (False, False, 6, "none"),
])
def test_the_network_is_refused_by_a_namespace_or_by_landlock_from_abi_4(net_ns, landlock, abi, network):
    found = status({**HELD, "net_ns": net_ns, "landlock": landlock}, abi=abi)
    assert found.network == network and found.net_namespace is net_ns
    if landlock:  # the missing network is said only when nothing else is missing first
        assert found.confined and found.why == ("" if network != "none" else OPEN_NETWORK)


@pytest.mark.parametrize("landlock, abi, signals, reported", [(True, 6, True, 6), (True, 7, True, 7),
                                                              (True, 5, False, 5), (False, 6, False, 0)])
def test_signals_are_refused_from_landlock_abi_6_and_the_abi_is_said_only_where_landlock_held(landlock, abi, signals,
                                                                                             reported):
    found = status({**HELD, "landlock": landlock}, abi=abi)
    assert found.signals is signals and found.landlock == reported


@pytest.mark.parametrize("joined, processes, memory", [
    (["pids", "memory"], "cgroup", "cgroup"), (["pids"], "cgroup", "rlimit"), (["memory"], "counted", "cgroup"),
    ([], "counted", "rlimit"), (None, "counted", "rlimit"), ("pids memory", "counted", "rlimit"),
])
def test_a_cgroup_counts_only_where_the_child_joined_it(joined, processes, memory):
    found = status({**HELD, "joined": joined})
    assert (found.processes, found.memory) == (processes, memory) and found.confined


@pytest.mark.parametrize("pid_ns, net_ns", [(True, False), (False, True), (1, 0)])
def test_the_namespaces_are_said_each_for_itself(pid_ns, net_ns):
    found = status({**HELD, "pid_ns": pid_ns, "net_ns": net_ns}, abi=6)
    assert (found.pid_namespace, found.net_namespace) == (bool(pid_ns), bool(net_ns))


@pytest.mark.parametrize("caps, shown", [(0, "0"), (0x1ff, "1ff"), (-1, ""), ("0", ""), (None, "")])
def test_the_capabilities_left_are_said_in_hex(caps, shown):
    assert status({**HELD, "caps": caps}).capabilities == shown


def test_the_wall_and_the_user_namespace_are_said_as_found():
    found = status(sandbox="bwrap 0.9.0", user_namespace=False)
    assert (found.sandbox, found.user_namespace, found.seccomp) == ("bwrap 0.9.0", False, True)
    assert status({**HELD, "seccomp": False}).seccomp is False


# --- the probe itself, with a stand-in for its child's body -------------------------------------------

def test_with_confinement_turned_off_the_probe_forks_nothing(monkeypatch):
    monkeypatch.setenv(confine.ENV, "off")
    monkeypatch.setattr(confine.os, "fork", lambda: pytest.fail("the probe forked with confinement off"))
    assert confine.probe() == confine.Status(False, why="TUTOR_CONFINE=off turned confinement off")


@pytest.mark.parametrize("environment, child_says, loads, why", [
    ({confine.SANDBOX_ENV: "bwrap 0.11.0"}, {}, False, ""),
    ({confine.SANDBOX_WHY_ENV: "bubblewrap could not start"}, {}, False, "bubblewrap could not start"),
    ({}, {}, False, NO_WALL),
    ({confine.SANDBOX_ENV: "bwrap 0.11.0"}, {"seccomp": False}, False, NO_SECCOMP),
    ({confine.SANDBOX_ENV: "bwrap 0.11.0"}, {"seccomp": False}, True, SECCOMP_REFUSED),
])
def test_the_probe_hands_its_child_the_cgroups_reads_what_it_said_and_cleans_up(monkeypatch, environment, child_says,
                                                                                loads, why):
    made, removed, forked = [], [], []
    parent = os.getpid()
    monkeypatch.setenv(confine.ENV, "on")
    for name in (confine.SANDBOX_ENV, confine.SANDBOX_WHY_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(confine, "landlock_abi", lambda: 4)
    monkeypatch.setattr(confine.seccomp, "available", lambda: loads)
    monkeypatch.setattr(confine, "in_user_namespace", lambda: True)
    monkeypatch.setattr(confine, "make_pids_cgroup", lambda name, cap: made.append(("pids", name, cap)) or "/cg/p")
    monkeypatch.setattr(confine, "make_memory_cgroup", lambda name, cap: made.append(("memory", name, cap)) or None)
    monkeypatch.setattr(confine, "remove_cgroup", removed.append)
    fork = os.fork

    def recorded_fork():
        pid = fork()
        forked.append(pid)
        return pid

    def child(abi, write_fd, groups):
        if os.getpid() == parent:
            raise AssertionError("the probe ran its child's body in its own process")
        try:  # the child's findings, or nothing readable where it was handed the wrong ABI or cgroups
            right = abi == 4 and groups == {"pids": "/cg/p", "memory": None}
            os.write(write_fd, json.dumps({**HELD, "joined": ["pids"], **child_says}).encode() if right else b"?")
        finally:
            os._exit(0)

    monkeypatch.setattr(confine.os, "fork", recorded_fork)
    monkeypatch.setattr(confine, "_probe_child", child)
    found = confine.probe()
    assert made == [("pids", f"tutor-probe-{parent}", MAX_PROCESSES), ("memory", f"tutor-probe-{parent}", 1 << 30)]
    assert removed == ["/cg/p", None]
    with pytest.raises(ChildProcessError):  # the probe waited for its child: nothing is left to reap
        os.waitpid(forked[0], os.WNOHANG)
    assert found == confine.Status(why == "", landlock=4, pid_namespace=True,
                                   net_namespace=True, network="namespace", signals=False, processes="cgroup",
                                   sandbox=environment.get(confine.SANDBOX_ENV, ""), user_namespace=True,
                                   capabilities="0", seccomp=child_says.get("seccomp", True), memory="rlimit",
                                   file_cap_mb=confine.FILE_CAP_MB, why=why)


# --- whether the worker has a user namespace of its own ------------------------------------------------

@pytest.mark.parametrize("uid_map, own", [("         0          0 4294967295\n", False), ("0 0 4294967295\n\n", False),
                                          ("\n0 0 4294967295\n", False), ("0 1000 1\n", True),
                                          ("0 0 4294967294\n", True), ("", True)])
def test_a_user_namespace_of_its_own_is_any_uid_map_but_the_whole_range(monkeypatch, tmp_path, uid_map, own):
    mapped = tmp_path / "uid_map"
    mapped.write_text(uid_map)
    monkeypatch.setattr(confine, "open", lambda path, *a: open(mapped if path == "/proc/self/uid_map" else path, *a),
                        raising=False)
    assert confine.in_user_namespace() is own


def test_a_uid_map_that_cannot_be_read_is_no_user_namespace(monkeypatch, tmp_path):
    monkeypatch.setattr(confine, "open", lambda *a: open(tmp_path / "missing"), raising=False)
    assert confine.in_user_namespace() is False


# --- where the private packages lie ------------------------------------------------------------------------

def test_the_private_packages_are_found_imported_or_on_the_path_and_resolved(monkeypatch, tmp_path):
    imported, on_path = tmp_path / "imported", tmp_path / "lib" / "onpath"
    imported.mkdir()
    on_path.mkdir(parents=True)
    (on_path / "__init__.py").write_text("")
    (tmp_path / "link").symlink_to(imported)
    module = type(sys)("tutor_test_imported")
    module.__path__ = [str(tmp_path / "link")]
    monkeypatch.setitem(sys.modules, "tutor_test_imported", module)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "lib"), *sys.path])
    monkeypatch.setattr(reads, "PRIVATE_PACKAGES", ("tutor_test_imported", "onpath", "tutor_test_absent"))
    assert reads.installed_packages() == [os.path.realpath(imported), os.path.realpath(on_path)]
