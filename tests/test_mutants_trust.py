"""What the sandbox trusts, pinned by behaviour: a signed line, and the folders a child may read.

A side's result pipe is read with :func:`tutor.sandbox.protocol.verify`: only a line signed with
that side's own key is the check's; anything the subject writes there, however it is dressed, is
tampering. The read policy (:func:`tutor.sandbox.reads.read_roots`) cuts a forbidden folder (the worker's
scratch, where every side's tree lies) out of an allowed one, and only that folder: a sibling whose name merely starts the same stays readable.
"""

from __future__ import annotations

import os
import sys

import pytest

from tutor.sandbox import reads
from tutor.sandbox.protocol import Progress, ProtocolError, encode, sign, verify

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
MESSAGE = Progress(fraction=0.5, message="halfway")


def test_a_line_signed_with_the_sides_key_is_read():
    assert verify(KEY, sign(KEY, MESSAGE).rstrip(b"\n")) == MESSAGE


def test_a_line_signed_with_another_key_is_tampered():
    with pytest.raises(ProtocolError, match="^the line is not signed with this side's key$"):
        verify(KEY, sign(OTHER_KEY, MESSAGE).rstrip(b"\n"))


@pytest.mark.parametrize("mac", [b"0" * 64, b"f" * 64, sign(KEY, MESSAGE)[:64].upper()])
def test_a_subjects_line_of_64_hex_digits_and_valid_json_is_tampered(mac):
    line = mac + b" " + encode(MESSAGE).encode()
    with pytest.raises(ProtocolError, match="^the line is not signed with this side's key$"):
        verify(KEY, line)


@pytest.mark.parametrize("line", [encode(MESSAGE).encode(), b"", b" " + encode(MESSAGE).encode()])
def test_a_line_without_a_signature_is_tampered(line):
    with pytest.raises(ProtocolError, match="^the line is not signed with this side's key$"):
        verify(KEY, line)


def test_a_signed_line_whose_json_was_changed_is_tampered():
    signed = sign(KEY, MESSAGE).rstrip(b"\n")
    with pytest.raises(ProtocolError, match="not signed"):
        verify(KEY, signed.replace(b"0.5", b"1.0"))


def test_a_forbidden_folder_is_cut_out_and_a_sibling_that_starts_like_it_stays(tmp_path, monkeypatch):
    packages = tmp_path / "site-packages"
    for name in ("tree", "tree2", "tree-other"):
        (packages / name).mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(packages)])
    roots = reads.read_roots(forbidden=[str(packages / "tree")])
    real = os.path.realpath(packages)
    assert os.path.join(real, "tree2") in roots and os.path.join(real, "tree-other") in roots
    assert os.path.join(real, "tree") not in roots and real not in roots
    assert not any(r == os.path.join(real, "tree") or r.startswith(os.path.join(real, "tree") + os.sep)
                   for r in roots)


def test_a_folder_that_starts_like_a_forbidden_one_is_allowed_whole(tmp_path, monkeypatch):
    packages = tmp_path / "site-packages"
    (packages / "x").mkdir(parents=True)
    (tmp_path / "site-packages-private").mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(packages)])
    roots = reads.read_roots(forbidden=[str(tmp_path / "site-packages-private")])
    assert os.path.realpath(packages) in roots  # not cut open: nothing forbidden lies inside it


def test_the_read_roots_are_the_installation_its_packages_metadata_and_the_system_folders(tmp_path, monkeypatch):
    # a made-up installation: its prefix, the four sysconfig folders outside it, sys.path entries of each kind
    def folder(*parts):
        path = tmp_path.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return str(path)
    prefix = folder("prefix", "lib")[:-len("/lib")]
    paths = {key: folder("sysconfig", key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    entries = [folder("prefix", "inside"), folder("x", "site-packages"), folder("y", "dist-packages"),
               folder("checkout"), str(tmp_path / "missing"), ""]
    folder("checkout", "tutor.egg-info")
    folder("checkout", "engine-1.0.dist-info")
    folder("checkout", "private")
    for name in ("prefix", "base_prefix", "exec_prefix", "base_exec_prefix"):
        monkeypatch.setattr(sys, name, prefix)
    monkeypatch.setattr(sys, "path", entries)
    monkeypatch.setattr(reads.sysconfig, "get_paths", lambda: paths)
    monkeypatch.setattr(reads, "SYSTEM_READ", (folder("system"),))
    real = os.path.realpath
    monkeypatch.setattr(reads, "installed_packages", lambda names=(): [])
    assert reads.read_roots() == tuple(sorted(real(p) for p in [
        prefix + "/lib", entries[0], entries[1], entries[2], *paths.values(), tmp_path / "system",
        tmp_path / "checkout" / "tutor.egg-info", tmp_path / "checkout" / "engine-1.0.dist-info"]))
    assert reads.policy().listed == ()


def test_the_tutor_and_engine_are_readable_where_installed_and_the_installed_catalog_only_listed(tmp_path, monkeypatch):
    # a regular install: all three packages in site-packages, beside a package the side imports late
    packages = tmp_path / "site-packages"
    for name in ("tutor", "engine", "exercises", "pyseccomp"):
        (packages / name).mkdir(parents=True)
    checkout = tmp_path / "checkout"
    (checkout / "tutor").mkdir(parents=True)
    (checkout / "progress").mkdir()
    monkeypatch.setattr(sys, "path", [str(packages)])
    monkeypatch.setattr(reads, "SYSTEM_READ", ())
    where = {"tutor": packages / "tutor", "engine": packages / "engine", "exercises": packages / "exercises"}
    monkeypatch.setattr(reads, "installed_packages", lambda names=(): [str(where[n]) for n in names])
    roots = reads.read_roots()
    real = os.path.realpath
    for name in ("tutor", "engine", "pyseccomp"):
        assert real(packages / name) in roots
    assert not any(r == real(packages / "exercises") or r.startswith(real(packages / "exercises") + os.sep)
                   or r == real(packages) for r in roots)
    assert reads.policy().listed == (real(packages),)  # names in site-packages, for imports; no contents
    # an editable checkout: its package folders are readable, the checkout around them (progress/) is not
    where["tutor"] = checkout / "tutor"
    roots = reads.read_roots()
    assert real(checkout / "tutor") in roots
    assert not any(r == real(checkout) or r.startswith(real(checkout / "progress")) for r in roots)


def test_a_forbidden_folder_is_cut_out_down_to_thirteen_levels_and_below_that_nothing_is_allowed(tmp_path):
    level, siblings = tmp_path, []
    for depth in range(1, 16):  # tmp/d1/d2/.../d15, each level with a sibling folder s beside its d
        (level / "s").mkdir()
        siblings.append(str(level / "s"))
        level = level / f"d{depth}"
        level.mkdir()
    out = []
    reads._allow_except(str(tmp_path), [str(level)], out)
    assert sorted(out) == sorted(siblings[:13])  # the folders beside the path to the forbidden one, thirteen levels down
    (tmp_path / "file").write_text("")
    out = []
    reads._allow_except(str(tmp_path / "file"), [str(tmp_path / "file" / "x")], out)
    assert out == []  # a file with something forbidden "inside" it is no folder to cut open
