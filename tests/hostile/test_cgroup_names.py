"""A side's cgroup names nothing of any side's tree: from the cgroups it can list (its own and its siblings',
under the worker's) it learns no other side's private folder, nor its own.

(Before, each side's cgroups were named after its tree, ``tutor-<worker>-clean-x1y2z3``: a side listing its
parent cgroup read where the clean and faulted sides' trees lay.)
"""

import pytest

from attack import run_fix

ATTACK = """
import os
names, looked = set(), 0
for line in open('/proc/self/cgroup').read().splitlines():
    hierarchy, controllers, path = line.split(':', 2)
    for root in ('/sys/fs/cgroup/' + controllers.split(',')[0], '/sys/fs/cgroup'):
        parent = root + os.path.dirname(path.rstrip('/'))
        try:
            names.update(os.listdir(parent))
            looked += 1
        except OSError:
            pass
own = os.path.basename(os.getcwd())
found = sorted(n for n in names if any(side + '-' in n for side in ('clean', 'faulted', 'repeat', 'yours')))
report([looked, found[:4], own in ' '.join(names)])
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("cgroups"), ATTACK)


def test_no_cgroup_a_side_can_list_names_a_tree(outcome):
    looked, found, own = outcome.reported
    assert found == [] and own is False, outcome.reported


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
