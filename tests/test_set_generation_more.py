"""More of the set ``generation``: CATALOG-3's temperature-effect (004, "Generation is a different program")."""

from helpers import graded, rows


def test_temperature_that_multiplies_reverses_the_diversity_order(run, catalog):
    r = run("temperature-effect", "c")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "a" and r.faulted == "c"
    assert not graded(catalog, r, "a")
    clean, faulted = (rows(r, side, "sampling_distribution") for side in ("clean", "faulted"))
    # the two columns are mirror images: multiplying by t is dividing by 1/t, and t = 1 agrees.
    assert [row[1] for row in clean] == [row[1] for row in reversed(faulted)]
    distinct = [int(row[3]) for row in faulted]
    assert distinct[0] > distinct[2]  # distinct ids fall as the "temperature" rises
