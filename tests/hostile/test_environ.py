"""The grader's environment never reaches a learner's file: not in its own, nor in any process it can see."""

import pytest

from attack import SECRET, run_fix

ATTACK = """
import os
readable, grader = [], False
for pid in [p for p in os.listdir('/proc') if p.isdigit()] + ['self']:
    try:
        text = open('/proc/' + pid + '/environ', 'rb').read()
    except OSError:
        continue
    readable.append(pid)
    grader = grader or b'GRADER' in text or b'TUTOR_PROGRESS_DIR' in text
names = sorted(k for k in os.environ if not k.startswith(('LC_', 'OMP_', 'PYTORCH_', 'PYTHON')))
report([names, 'grader' if grader or 'GRADER_API_TOKEN' in os.environ else 'none', readable])
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("environ"), ATTACK)


def test_the_attack_ran_and_saw_a_clean_environment(outcome):
    names, grader, readable = eval(outcome.saw)  # the attack's own list, printed by repr
    assert "PATH" in names and "GRADER_API_TOKEN" not in names and "TUTOR_PROGRESS_DIR" not in names, names
    assert grader == "none"
    assert readable  # it read its own environment, and that one is clean
    assert str(outcome.witness.progress) not in outcome.saw  # no host path of the grader's either


def test_not_fixed_and_no_damage(outcome):
    assert SECRET not in outcome.text
    outcome.assert_not_fixed_and_no_damage()
