"""Set ``comparison``: the seed items about accounting at scale (seed 004),
through the real worker, pinned to values worked out by hand."""

import pytest

from helpers import fact, rows


def test_subword_breakdown_by_hand(run):
    r = run("subword-breakdown", "0.56")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # V = 32,000, C = 512, 4 layers, block 64, tied: table 32,000 * 512 = 16,384,000; one block
    # 12C^2 + 9C = 3,150,336; positions 64 * 512; ln_f 2C.
    C, V = 512, 32_000
    block = 12 * C * C + 9 * C
    total = V * C + 64 * C + 4 * block + 2 * C
    assert block == 3_150_336 and total == 29_019_136
    assert r.clean == pytest.approx(V * C / total, abs=1e-4) == pytest.approx(0.5646, abs=1e-4)
    assert r.faulted == pytest.approx(V * C / (total + V * C), abs=1e-4)  # a copied head: another V*C
    facts = fact(r, "clean", "The token table against one block")
    assert facts["one block"] == f"{block:,}" and facts["total"] == f"{total:,}"
    assert facts["smallest V whose table outgrows one block at C=512"] == f"{block // C + 1:,}" == "6,154"


def test_seed_backends(run):
    r = run("seed-backends", "yes, no, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, False, False]
    table = {row[0]: row[1:] for row in rows(r, "clean", "Against fused SDPA")}
    assert table["the same route, built twice"] == ["True", "0"]
    # Different rounding, same mathematics: the differences sit at float32's resolution, far below
    # anything a trained model would notice, and never exactly zero.
    for route in ("written-out attention", "float64"):
        assert 0 < float(table[route][1]) < 1e-5
