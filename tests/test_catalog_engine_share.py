"""The catalog's faults lean on the engine: at least half of them edit engine/.

An idea that lives in a GPT or its training loop is taught as a fault of the
engine (docs/authoring.md); snippets are for tensor-level ideas. A fault
shared by two exercises counts once per exercise, as the authoring guide's
one-liner counts it.
"""


def test_at_least_half_the_faults_edit_the_engine(catalog):
    faults = [catalog.fault_of(e) for e in catalog.exercises if catalog.fault_of(e)]
    engine = sum(f.file.startswith("engine/") for f in faults)
    assert 2 * engine >= len(faults), f"{engine} of {len(faults)} faults edit engine/"
