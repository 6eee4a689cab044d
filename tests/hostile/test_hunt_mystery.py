"""The capstone's hunt: the learner's file runs in a side that cannot learn which hidden fault its mystery
carries — no ``exercises/mysteries.py`` to import or read, no catalog data, nothing naming a mystery in
any file of its tree, in its frames, in its heap or in any command line or environment it can list.

(Before, the learner's tree held ``exercises/mysteries.py``: one import, ``hidden_fault(seed)``, named the
fault the hunt hides.)"""

import pytest

from exercises.mysteries import HIDDEN
from tutor.app.tasks import hunt_task
from tutor.model.verdict import YOURS
from tutor.sandbox.protocol import Side

#: Appended to the hunted file, so it runs when the hunt's audit imports it. The mysteries' ids are
#: written reversed, so the file's own text (and its copies in the tree) never names one.
ATTACK = '''

def _hunt_attack():
    import gc, os, sys
    cands = [c[::-1] for c in REVERSED]
    cset = set(cands)
    found = []
    try:
        import exercises.mysteries as m
        found.append('import:' + m.hidden_fault(SEED))
    except ImportError as exc:
        found.append('import:' + type(exc).__name__)
    for folder, _, files in os.walk(os.getcwd()):
        for name in files:
            path = os.path.join(folder, name)
            try:
                text = open(path, errors='replace').read()
            except OSError:
                continue
            if '_hunt_attack' in text:
                continue  # this file, and the audit's copy of it
            if name.endswith('.toml') or any(c in text for c in cands):
                found.append('file:' + os.path.relpath(path))
    frame = sys._getframe(1)
    while frame is not None:
        found += ['frame:' + v for v in list(frame.f_locals.values()) if type(v) is str and v in cset]
        frame = frame.f_back
    for obj in gc.get_objects():
        if obj is cands or obj is cset or obj is found:
            continue
        items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple, set)) else ()
        try:
            found += ['heap:' + v for v in list(items) if type(v) is str and v in cset]
        except Exception:
            pass
    for pid in (p for p in os.listdir('/proc') if p.isdigit()):
        for what in ('cmdline', 'environ'):
            try:
                data = open('/proc/' + pid + '/' + what, 'rb').read().decode(errors='replace')
            except OSError:
                continue
            found += ['proc:' + c for c in cands if c in data]
    raise RuntimeError('SA' + 'W<' + repr(sorted(set(found))[:8]) + '>S' + 'AW')


_hunt_attack()
'''


@pytest.fixture(scope="module")
def hunt(runner, catalog):
    exercise = catalog.get("audit")
    task = hunt_task(catalog, exercise, 0)
    attack = ATTACK.replace("REVERSED", repr([fault_id[::-1] for fault_id in HIDDEN if fault_id != "none"])).replace(
        "SEED", repr(task.seed))
    side = Side.replacing(YOURS, task.path, task.start + attack)
    result = runner.run(task.exercise, seed=task.seed, sides=(side,))
    return task, result


def _saw(result) -> list:
    text = repr(result.errors)
    start, end = text.find("SAW<"), text.find(">SAW")
    assert start >= 0 and end > start, text[-2000:]
    return eval(text[start + 4:end].replace("\\'", "'"))


def test_the_hunts_file_cannot_import_or_read_its_mystery(hunt):
    task, result = hunt
    assert _saw(result) == ["import:ModuleNotFoundError"]  # nothing else named a mystery anywhere it looked


def test_the_hidden_fault_is_named_nowhere_in_what_comes_back(hunt):
    task, result = hunt
    assert task.fault.id not in repr(result.errors) + repr(result.evidence) + repr(result.observations)
