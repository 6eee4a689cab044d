"""What a side's child says its subject tried, and how the worker says it confines: pinned in this process.

:class:`tutor.sandbox.confine.Attempts` is the audit hook a side's child installs: it refuses nothing
(the kernel does), it only says what was tried, ending "refused" only where an active layer refuses
that call. :class:`tutor.sandbox.confine.Status` travels from the worker to the runner. Both run
inside the worker's children in real runs, where no test of this process reaches them; here each
sentence is called for directly.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from tutor.sandbox import confine, landlock
from tutor.sandbox.landlock import Policy
from tutor.sandbox.namespaces import MAX_PROCESSES

TREE = "/work/side"
HOME = "/home/ada"


def said(event, args, **layers):
    """The sentences one call makes an Attempts hook say, in a side whose tree is TREE and may read /usr."""
    notes = []
    policy = Policy(tree=TREE, read=("/usr",), network=layers.pop("network", True))
    hook = confine.Attempts(policy, notes.append, home=HOME, **layers)
    hook(event, args)
    return notes


@pytest.mark.parametrize("args, sentence", [
    (("/home/ada/x", "w", 0), "tried to write ~/x: refused"),
    (("/home/ada/x", "a", 0), "tried to write ~/x: refused"),
    (("/home/ada/x", "r+", 0), "tried to write ~/x: refused"),
    (("/home/ada/x", "r", os.O_WRONLY), "tried to write ~/x: refused"),
    (("/home/ada/x", None, os.O_CREAT), "tried to write ~/x: refused"),
    (("/home/ada/x", "r", 0), "tried to read ~/x: refused"),
    (("/home/ada/x",), "tried to read ~/x: refused"),
    (("/srv/class/bob.toml", "rb", 0), "tried to read /srv/class/bob.toml: refused"),
    ((b"/srv/x", "r", 0), "tried to read /srv/x: refused"),
])
def test_an_open_outside_the_tree_is_said_refused(args, sentence):
    assert said("open", args) == [sentence]


@pytest.mark.parametrize("args", [(f"{TREE}/a.py", "w", 0), (f"{TREE}/../side/b", "w", 0), ("/dev/null", "w", 0),
                                  ("/usr/lib/x.so", "r", 0), ("/proc/self/status", "r", 0), (3, "r", 0),
                                  (None, "r", 0), (object(), "r", 0)])
def test_an_open_the_side_may_make_says_nothing(args):
    assert said("open", args) == []


def test_a_relative_path_is_read_from_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert said("open", ("x.txt", "r", 0)) == [f"tried to read {tmp_path / 'x.txt'}: refused"]


def test_an_open_for_the_path_alone_is_no_read():
    """O_PATH gives a descriptor that reads nothing (Landlock checks no such open): the confinement's own
    rules open each folder so, a list-only one outside every read root among them."""
    assert said("open", ("/srv/class", None, os.O_PATH | os.O_CLOEXEC)) == []
    assert said("open", ("/srv/class", None, os.O_RDONLY | os.O_CLOEXEC)) == ["tried to read /srv/class: refused"]


def test_a_list_only_folder_may_be_listed_but_its_files_are_refused(tmp_path):
    """Below a folder the policy lets a side list, a folder opened to list it is no attempt (Landlock allows
    it); a file opened there is a read, refused."""
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "catalog.toml").write_text("")
    notes = []
    hook = confine.Attempts(Policy(tree=TREE, read=("/usr",), listed=(str(tmp_path),)), notes.append, home=HOME)
    for path in (tmp_path, tmp_path / "exercises", tmp_path / "exercises" / "catalog.toml", tmp_path / "gone"):
        hook("open", (str(path), None, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    assert notes == [f"tried to read {tmp_path / 'exercises' / 'catalog.toml'}: refused",
                     f"tried to read {tmp_path / 'gone'}: refused"]


_CONFINED = """
import json, os, sys
from tutor.sandbox import confine, landlock
listed, tree, abi = sys.argv[1], sys.argv[2], int(sys.argv[3])
notes = []
policy = landlock.Policy(tree=tree, read=(), listed=(listed,))
confine.Attempts(policy, notes.append).install()
landlock.restrict(policy, abi)
names = sorted(os.listdir(listed))
try:
    open(os.path.join(listed, "secret.toml")).read()
    read = "read"
except PermissionError:
    read = "refused"
print(json.dumps({"notes": notes, "names": names, "read": read}))
"""


def test_confinement_with_a_list_only_folder_says_only_the_refused_read(tmp_path):
    """A child confined as a side is, with a list-only folder (site-packages around an installed catalog):
    applying the policy says nothing, listing the folder works and says nothing, reading a file there is
    refused by the kernel and said so."""
    abi = landlock.landlock_abi()
    if not abi:
        pytest.skip("this kernel has no Landlock")
    listed, tree = tmp_path / "site-packages", tmp_path / "side"
    listed.mkdir()
    tree.mkdir()
    (listed / "secret.toml").write_text("answer = 1\n")
    done = subprocess.run([sys.executable, "-c", _CONFINED, str(listed), str(tree), str(abi)], capture_output=True,
                          text=True, cwd=tree, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"notes": [f"tried to read {listed / 'secret.toml'}: refused"],
                                       "names": ["secret.toml"], "read": "refused"}


def test_a_write_to_a_read_only_folder_is_said_refused():
    assert said("open", ("/usr/lib/x.so", "w", 0)) == ["tried to write /usr/lib/x.so: refused"]


def test_without_landlock_an_open_is_said_but_not_refused():
    assert said("open", ("/home/ada/x", "w", 0), landlock=False) == ["tried to write ~/x"]


@pytest.mark.parametrize("event, verb", [("os.chmod", "chmod"), ("os.chown", "chown"), ("os.utime", "touch"),
                                         ("os.setxattr", "set an attribute on"),
                                         ("os.removexattr", "remove an attribute of")])
def test_metadata_changes_are_refused_by_seccomp_even_inside_the_tree(event, verb):
    assert said(event, (f"{TREE}/a.py",), seccomp=True) == [f"tried to {verb} {TREE}/a.py: refused"]
    assert said(event, (f"{TREE}/a.py",)) == []  # no filter: inside the tree it is the side's own file
    assert said(event, ("/srv/x",)) == [f"tried to {verb} /srv/x"]  # no filter: said, never claimed refused
    assert said(event, ()) == []


@pytest.mark.parametrize("event, verb", [("os.remove", "remove"), ("os.rename", "rename"),
                                         ("os.mkdir", "make a folder in"), ("os.symlink", "symlink"),
                                         ("shutil.rmtree", "remove"), ("shutil.move", "rename")])
def test_tree_only_calls_outside_the_tree_are_refused_by_landlock(event, verb):
    assert said(event, ("/home/ada/notes",)) == [f"tried to {verb} ~/notes: refused"]
    assert said(event, ("/home/ada/notes",), landlock=False) == [f"tried to {verb} ~/notes"]
    assert said(event, (f"{TREE}/tmp/x",)) == []
    assert said(event, ()) == []


def test_a_unix_socket_is_refused_only_under_seccomp():
    import socket
    assert said("socket.__new__", (None, socket.AF_UNIX, 1, 0), seccomp=True) == ["tried to open a UNIX socket: refused"]
    assert said("socket.__new__", (None, socket.AF_UNIX, 1, 0)) == ["tried to open a UNIX socket"]
    assert said("socket.__new__", (None, socket.AF_INET, 1, 0), seccomp=True) == []


@pytest.mark.parametrize("family, protocol, kind", [
    (40, 0, "a vsock socket"), (16, 4, "a netlink socket"), (17, 0, "a raw packet socket"),
    (38, 0, "a socket of family AF_ALG"), (999, 0, "a socket of family 999")])
def test_every_family_but_tcp_and_udp_is_refused_only_under_seccomp(family, protocol, kind):
    assert said("socket.__new__", (None, family, 1, protocol), seccomp=True) == [
        f"tried to open {kind}: refused"]
    assert said("socket.__new__", (None, family, 1, protocol)) == [f"tried to open {kind}"]
    assert said("socket.__new__", (None, socket.AF_INET6, 2, 0), seccomp=True) == []


@pytest.mark.parametrize("protocol", [0, -1])
def test_routing_netlink_is_no_attempt(protocol):
    assert said("socket.__new__", (None, 16, 3, protocol), seccomp=True) == []  # getifaddrs: let through


def test_a_vsock_address_is_never_said_refused_by_the_network_namespace():
    class Vsock:
        family = 40
    # a vsock socket that exists was refused by no layer: the network namespace does not hold vsock
    assert said("socket.bind", (Vsock(), (2, 1234))) == ["tried to listen on 2:1234"]
    assert said("socket.connect", (Vsock(), (2, 1234)), seccomp=True) == ["tried to connect to 2:1234"]


@pytest.mark.parametrize("event, address, sentence", [
    ("socket.connect", ("10.0.0.1", 443), "tried to connect to 10.0.0.1:443: refused"),
    ("socket.sendto", ("8.8.8.8", 53), "tried to connect to 8.8.8.8:53: refused"),
    ("socket.bind", ("0.0.0.0", 8080), "tried to listen on 0.0.0.0:8080: refused"),
    ("socket.connect", ("10.0.0.1",), "tried to connect to 10.0.0.1:: refused"),
])
def test_a_connection_off_the_loopback_is_refused(event, address, sentence):
    assert said(event, (None, address)) == [sentence]
    assert said(event, (None, address), network_refused=False) == [sentence.removesuffix(": refused")]


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_its_own_loopback_is_no_attempt_unless_the_policy_refuses_all_network(host):
    assert said("socket.connect", (None, (host, 80)), network=False) == []
    assert said("socket.connect", (None, (host, 80))) == [f"tried to connect to {host}:80: refused"]


def test_a_socket_address_that_is_no_tuple_is_no_connection():
    assert said("socket.connect", (None, "/run/x.sock")) == []
    assert said("socket.connect", (None,)) == []


@pytest.mark.parametrize("pid", [-1, 1, MAX_PROCESSES * 16 + 1])
def test_a_signal_out_of_the_side_is_said(pid):
    assert said("os.kill", (pid, 9), signals=True) == [f"tried to send a signal to process {pid}: refused"]
    assert said("os.kill", (pid, 9)) == [f"tried to send a signal to process {pid}"]


@pytest.mark.parametrize("pid", [0, 2, MAX_PROCESSES * 16, "this process"])
def test_a_signal_inside_the_side_is_no_attempt(pid):
    pid = os.getpid() if pid == "this process" else pid  # an id named the same in every collection
    assert said("os.kill", (pid, 0), signals=True) == []


def test_each_sentence_is_said_once_and_at_most_limit_sentences_in_all():
    notes = []
    hook = confine.Attempts(Policy(tree=TREE, read=()), notes.append, home=HOME, limit=3)
    for i in (1, 1, 2, 3, 4):
        hook("open", (f"/srv/{i}", "r", 0))
    assert notes == ["tried to read /srv/1: refused", "tried to read /srv/2: refused", "tried to read /srv/3: refused"]


def test_a_report_that_raises_or_an_odd_event_never_reaches_the_subject():
    def broken(sentence):
        raise OSError("the pipe is gone")

    hook = confine.Attempts(Policy(tree=TREE, read=()), broken, home=HOME)
    hook("open", ("/srv/x", "r", 0))  # the report raised: the subject's call goes on
    hook("open", ("/srv/x", "r", "not flags"))  # flags of the wrong type: ignored
    hook("os.kill", ("1", 9))
    assert hook.seen == {"tried to read /srv/x: refused"}


@pytest.mark.parametrize("home, path, shown", [(HOME, "/home/ada/x", "~/x"), ("/", "/home/ada/x", "/home/ada/x"),
                                               ("/tmp", "/tmp/x", "/tmp/x"), ("", "/home/ada/x", "/home/ada/x"),
                                               ("/home/ad", "/home/ada/x", "/home/ada/x"),
                                               ("/home/ada/", "/home/ada/x", "~/x")])
def test_only_a_real_home_is_written_as_a_tilde(home, path, shown):
    notes = []
    confine.Attempts(Policy(tree=TREE, read=()), notes.append, home=home)("open", (path, "r", 0))
    assert notes == [f"tried to read {shown}: refused"]


def test_install_adds_the_hook_to_this_process(monkeypatch):
    added = []
    monkeypatch.setattr(confine.sys, "addaudithook", added.append)
    hook = confine.Attempts(Policy(tree=TREE, read=()), print)
    hook.install()
    assert added == [hook]


# --- how the worker confines, on the wire -----------------------------------------------------------

def test_a_status_comes_back_as_it_went_and_ignores_fields_it_does_not_know():
    status = confine.Status(True, landlock=6, pid_namespace=True, net_namespace=True, network="namespace",
                            signals=True, processes="cgroup", sandbox="bwrap 0.11.0", user_namespace=True,
                            capabilities="0", seccomp=True, memory="cgroup", file_cap_mb=64, why="")
    assert confine.Status.from_wire(status.to_wire()) == status
    assert confine.Status.from_wire({**status.to_wire(), "from_a_newer_worker": 1}) == status
    assert confine.Status.from_wire({"confined": False, "why": "no Landlock"}) == confine.Status(False, why="no Landlock")


@pytest.mark.parametrize("data", [None, [], "confined"])
def test_a_worker_that_does_not_say_is_taken_as_unconfined(data):
    status = confine.Status.from_wire(data)
    assert status == confine.Status(False, why="the check worker did not say how it confines code")
    assert status.sentence == "Code under check runs unconfined here: the check worker did not say how it confines code"


def test_a_confined_status_says_nothing():
    assert confine.Status(True).sentence == ""


@pytest.mark.parametrize("value, on", [("", True), ("on", True), ("1", True), ("off", False), (" OFF ", False),
                                       ("0", False), ("no", False), ("False", False)])
def test_tutor_confine_turns_confinement_off_only_by_a_word_for_off(value, on, monkeypatch):
    monkeypatch.setenv(confine.ENV, value)
    assert confine.enabled() is on


def test_confinement_is_on_when_tutor_confine_is_unset(monkeypatch):
    monkeypatch.delenv(confine.ENV, raising=False)
    assert confine.enabled() is True


def test_an_open_with_a_mode_and_no_flags_is_read_by_its_mode():
    assert said("open", ("/home/ada/x", "w")) == ["tried to write ~/x: refused"]
    assert said("open", ("/home/ada/x", "r"), landlock=False) == ["tried to read ~/x"]


def test_a_unix_socket_named_by_its_family_alone_is_said():
    import socket
    assert said("socket.__new__", (None, socket.AF_UNIX)) == ["tried to open a UNIX socket"]


def test_a_signal_out_of_the_side_is_said_whatever_the_signal():
    assert said("os.kill", (1, 0)) == ["tried to send a signal to process 1"]


def test_a_tree_ending_in_a_capital_x_holds_only_what_is_below_it():
    notes = []
    confine.Attempts(Policy(tree="/work/X", read=()), notes.append, home=HOME)("open", ("/work/a", "w", 0))
    assert notes == ["tried to write /work/a: refused"]
