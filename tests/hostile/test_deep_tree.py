"""A side that leaves a tree deeper than the grader's own removal recurses is still its own outcome: the tree
is removed whole, and the side is *not fixed*, never "could not run".

(Before, ``shutil.rmtree`` raised RecursionError in the worker: the worker died, the row read "could not
run", and a batch exited 3, "grade them again when the machine is quiet".)
"""

import pytest

from attack import run_fix

# made through libc, past the audit hook (which would look up the working folder at every level)
ATTACK = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for _ in range(2500):
    if libc.mkdir(b'd', 0o700) or libc.chdir(b'd'):
        report('stopped at errno ' + str(ctypes.get_errno()))
report('deep')
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("deep"), ATTACK)


def test_the_side_is_not_fixed_and_ran(outcome):
    assert outcome.saw == "deep", outcome.text[-3000:]
    verdict = outcome.data.get("verdict") or {}
    assert verdict.get("status") != "could not run" and "could not run" not in outcome.text, outcome.text[-3000:]
    assert "left its tree" not in outcome.text, outcome.text[-3000:]


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
