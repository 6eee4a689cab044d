"""The same check gives the same numbers whatever cores the worker is given.

Every side runs torch on one intra-op and one inter-op thread
(``tutor.sandbox.child.SIDE_THREADS``); a worker told it has 1 core and one told it
has 4 (``TUTOR_WORKER_CORES``, what ``tutor check -j N`` sets) must measure
the same observation and the same evidence, digit for digit. ``lr-10x`` is
the witness: its first loss after one AdamW step moves in the 6th digit when
a side's reductions are split over two threads.
"""

import pytest

from tutor.sandbox.runner import Runner


def _evidence_without_timings(result):
    """Every side's evidence, less the tables of wall-clock times (shown, never graded)."""
    return {side: [item for item in items if "ms" not in str(item.get("title", "")).split()]
            for side, items in result.evidence.items()}


@pytest.mark.parametrize("exercise_id", ["lr-10x"])
def test_one_core_and_four_cores_measure_the_same(catalog, exercise_id):
    results = []
    for cores in (1, 4):
        runner = Runner(catalog, device="cpu", cores=cores)
        try:
            assert runner.warm_up()["cores"] == cores
            results.append(runner.run(catalog.get(exercise_id)))
        finally:
            runner.close()
    one, four = results
    assert one.status == four.status == "ok", (one.error, four.error)
    assert (one.clean, one.faulted) == (four.clean, four.faulted)
    assert _evidence_without_timings(one) == _evidence_without_timings(four)
    first = {row[0]: row[1:] for item in one.evidence["faulted"] if item.get("title") == "The run"
             for row in item["rows"]}
    assert first["CAPABILITY's first loss (after UPDATE's step)"] == ["3.14727"]
