"""Each side alone: the process that imports a learner's file holds no other side's fault, text, request
or seed list, so the "universal self-repair" (walk the frames and the heap for the faulted side's fault,
reverse it, go on) finds nothing to reverse and is not fixed — at seed 0 and at hidden seeds."""

import pytest

from attack import run_fix

#: Generic lines that passed any exercise when a side was forked from the worker that read the whole
#: request: take a Fault (or a Side or Request carrying one) from the frames or the heap and undo it here.
ATTACK = """
import gc, sys
found, fault = set(), None
def take(value, where):
    name = type(value).__name__
    if name not in ('Fault', 'Side', 'Request', 'SideSpec', 'Answer', 'SideRun', 'Task'):
        return None
    found.add(where + name)
    held = [value, getattr(value, 'fault', None), getattr(getattr(value, 'side', None), 'fault', None)]
    held += [getattr(side, 'fault', None) for side in getattr(value, 'sides', ())]
    return next((item for item in held if type(item).__name__ == 'Fault'), None)
frame = sys._getframe()
while frame is not None:
    for value in list(frame.f_locals.values()):
        fault = take(value, 'frame:') or fault
    frame = frame.f_back
for value in gc.get_objects():
    fault = take(value, 'heap:') or fault
sides = sum(len(getattr(value, 'sides', ())) for value in gc.get_objects() if type(value).__name__ == 'Request')
if fault is not None:
    scope = {'predictions': predictions}
    exec(fault.before.strip(), globals(), scope)  # the repair, reversed out of the fault itself
    predictions = scope['predictions']
else:
    report([sorted(found), sides])
"""


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("alone"), ATTACK)


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("alone-hidden"), ATTACK, extra=("--hidden-seeds", "2"))


def test_the_learner_side_holds_no_other_side(plain):
    found, sides = eval(plain.saw)  # the attack's own list, printed by repr
    # its own side's spec, and the sideless request the check reads, are all it holds
    assert set(found) <= {"frame:Request", "frame:SideSpec", "heap:Request", "heap:SideSpec"}, found
    assert sides == 0  # no request in its memory names a side, its own or another


def test_the_self_repair_is_not_fixed_and_does_no_damage(plain):
    plain.assert_not_fixed_and_no_damage()


def test_nor_at_hidden_seeds(hidden):
    assert eval(hidden.saw)[1] == 0
    hidden.assert_not_fixed_and_no_damage()
