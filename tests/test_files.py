"""tutor.store.files: the one atomic writer (fsync before the rename, the umask's mode) and safe CSV cells."""

from __future__ import annotations

import os
import stat

import pytest

from tutor.store import files
from tutor.store.files import spreadsheet_safe, write_bytes_atomically, write_text_atomically


@pytest.fixture()
def umask():
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def test_the_file_is_fsynced_before_it_is_renamed_into_place(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(files.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(files.os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    write_bytes_atomically(tmp_path / "a.toml", b"x = 1\n")
    assert events == ["fsync", "replace"]
    assert (tmp_path / "a.toml").read_bytes() == b"x = 1\n"


def test_a_new_file_gets_the_umasks_mode_and_a_rewritten_one_keeps_its_own(tmp_path, umask):
    umask(0o027)
    path = tmp_path / "gradebook.csv"
    write_text_atomically(path, "line,learner\n")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    os.chmod(path, 0o600)
    write_text_atomically(path, "line,learner\r\n1,zoë\n")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_bytes() == "line,learner\r\n1,zoë\n".encode()  # line ends as given


def test_a_failed_rename_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    path = tmp_path / "ada.toml"
    path.write_text("old")

    def refuse(a, b):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError):
        write_text_atomically(path, "new")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["ada.toml"]


@pytest.mark.parametrize("cell, shown", [
    ("=SUM(A1:A9)", "'=SUM(A1:A9)"), ("@cmd", "'@cmd"), ("+x", "'+x"), ("-x", "'-x"), ("\tx", "'\tx"),
    ("-0.25", "-0.25"), ("+1e-3", "+1e-3"), ("(3, 3)", "(3, 3)"), ("", ""), (3, 3), (None, None),
    # arithmetic is a formula to a spreadsheet (-1+3 shows 2): only a lone number passes as it is
    ("-1/4", "'-1/4"), ("-1+3", "'-1+3"), ("+1-1", "'+1-1"),
])
def test_a_cell_that_reads_as_a_formula_is_shown_not_run(cell, shown):
    assert spreadsheet_safe(cell) == shown
