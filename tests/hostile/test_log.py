"""A side's output is read through the descriptor opened before its fork: what the subject puts at
``output.log`` afterwards (a FIFO, a link to a classmate's file) is never read."""

import os

import pytest

from attack import run_fix
from tutor.sandbox.side import excerpt, open_log, read_tail

#: Replace the side's log by a FIFO (a worker that reopened it by path blocked forever), or failing that by a
#: link to the classmate's file (it came back as "your output"), then print and fail.
ATTACK = """
import os
made = []
for make in (lambda: os.mkfifo('output.log'), lambda: os.symlink(CLASSMATE, 'output.log')):
    try:
        os.unlink('output.log')
    except OSError:
        pass
    try:
        make()
        made.append('yes')
        break
    except OSError as exc:
        made.append(exc.errno)
print('attack output', made, flush=True)
report(made)
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("log"), ATTACK)


def test_the_run_ends_and_reads_the_log_it_opened(outcome):
    assert outcome.saw, outcome.text[-2000:]  # the attack ran to its report
    assert "ada's own" not in outcome.text  # the classmate's file never comes back as output
    outcome.assert_not_fixed_and_no_damage()


def test_a_fifo_or_link_put_at_the_path_later_is_never_read(tmp_path, witness):
    fd = open_log(str(tmp_path))
    try:
        os.write(fd, b"the side's own words\n")
        os.unlink(tmp_path / "output.log")
        os.mkfifo(tmp_path / "output.log")  # a reader by path would block here
        assert excerpt(fd) == "the side's own words\n"
        os.unlink(tmp_path / "output.log")
        os.symlink(witness.classmate, tmp_path / "output.log")
        assert "ada" not in excerpt(fd) + read_tail(fd, 8192)
    finally:
        os.close(fd)
    assert witness.changed() == {}


def test_the_log_is_never_made_through_a_link_already_there(tmp_path, witness):
    os.symlink(witness.classmate, tmp_path / "output.log")
    with pytest.raises(FileExistsError):
        open_log(str(tmp_path))
    assert witness.changed() == {}


def test_the_excerpt_is_capped(tmp_path):
    fd = open_log(str(tmp_path))
    try:
        os.write(fd, b"x" * 100_000)
        text = excerpt(fd)
    finally:
        os.close(fd)
    assert len(text) < 2100 and "98000 more bytes" in text
