"""The progress file's format, read from its bytes: which files are damaged, which are newer, how format 1 migrates.

:mod:`tutor.store.migration` touches no file; these tests hand it bytes. (The store's round trip, a
format-1 file written back as format 2 on the next save, is tests/test_edit.py's.)
"""

from __future__ import annotations

import pytest

from tutor.store.migration import FORMAT_VERSION, MAX_FILE_BYTES, OLDER_VERSIONS, classify, migrate

ATTEMPT = '''time = "2026-11-29T10:01:00+00:00"
prediction = "b"
observed = "b"
correct = true
status = "pass"
device = "cpu"
engine_hash = "3f2a9c0d1b7e"
seed = 0
'''


def _file(version, mode: str = "") -> bytes:
    return (f'format_version = {version}\nlearner = "ada"\n\n[exercises.head-split]\n\n'
            f'[[exercises.head-split.attempts]]\n{ATTEMPT}{mode}').encode()


def test_this_tutor_writes_format_2_and_migrates_format_1():
    assert (FORMAT_VERSION, OLDER_VERSIONS) == (2, (1,))


def test_a_format_1_file_reads_with_every_attempt_a_prediction_and_nothing_else_changed():
    reading = classify(_file(1))
    assert reading.problem is None and reading.newer is None
    [attempt] = reading.data["exercises"]["head-split"]["attempts"]
    assert reading.data["format_version"] == 2 and attempt["mode"] == "predict"
    current = classify(_file(2)).data["exercises"]["head-split"]["attempts"][0]
    assert {k: v for k, v in attempt.items() if k != "mode"} == current


def test_migration_leaves_a_mode_already_given_and_the_input_document_as_it_was():
    data = {"format_version": 1, "exercises": {"x": {"attempts": [{"mode": "fix"}, {}]}}}
    migrated = migrate(data)
    assert [a["mode"] for a in migrated["exercises"]["x"]["attempts"]] == ["fix", "predict"]
    assert migrated["format_version"] == 2 and data["format_version"] == 1
    assert migrate({"format_version": 2, "exercises": {}}) == {"format_version": 2, "exercises": {}}


def test_a_current_file_reads_as_it_is():
    reading = classify(_file(2, 'mode = "break"\n'))
    assert reading.problem is None and reading.data["exercises"]["head-split"]["attempts"][0]["mode"] == "break"


def test_a_newer_file_is_shown_read_only():
    reading = classify(_file(FORMAT_VERSION + 1))
    assert reading.newer == FORMAT_VERSION + 1 and reading.problem is None and reading.data is not None


@pytest.mark.parametrize("version", ["true", "2.0", '"2"', "0"])
def test_a_version_that_is_not_a_whole_known_number_is_damage(version):
    reading = classify(_file(version))
    assert reading.data is None and reading.problem.startswith("its format_version is ")


def test_no_file_and_damaged_files():
    assert classify(None).data is None and classify(None).problem is None
    assert classify(b"x" * (MAX_FILE_BYTES + 1)).problem == "it is larger than 8 MiB"
    assert classify(b"format_version = ").problem.startswith("it is not valid TOML (")
    assert classify(b"\xff\xfe").problem.startswith("it is not valid TOML (")
    assert classify(b"\xef\xbb\xbf" + _file(2)).problem is None  # a byte-order mark is no damage
    assert classify(_file(2).replace(b"\n", b"\r\n")).problem is None
    assert classify(b'format_version = 2\nexercises = 3\n').problem == "its exercises entry is not a table"
