"""Set ``autograd``: the seed items of gradcheck on ordinary functions and of
parallel scans (seed 000 §5), through the real worker."""

import math

import pytest

from helpers import fact, graded, rows


def test_gradcheck_composite(run):
    r = run("gradcheck-composite", "no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is True and r.faulted is False
    # By hand: d/dx x*s(x) = s + x*s*(1 - s). The detached gate leaves only s(x).
    for side, full in (("clean", True), ("faulted", False)):
        for x, auto, numeric in rows(r, side, "d/dx of sum"):
            x = float(x)
            s = 1 / (1 + math.exp(-x))
            assert float(numeric) == pytest.approx(s + x * s * (1 - s), abs=1e-5)  # the forward is unchanged
            assert float(auto) == pytest.approx(s + x * s * (1 - s) if full else s, abs=1e-5)
    # float32 inputs: finite differences at eps 1e-6 drown in rounding, so the default check fails.
    assert fact(r, "clean", "gradcheck")["float32, same values"] == "False"


def test_parallel_scan(run):
    r = run("parallel-scan", "no, 3")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, 3] and r.faulted == [False, 3]
    # n = 8: stages at steps 1, 2, 4 (ceil(log2 8) = 3); products 7 + 6 + 4 = 17 against 7 serial.
    work = {row[0]: row[1:] for row in rows(r, "clean", "Prefix products of 8")}
    assert work["dependent stages"] == ["7", "3"] and work["matrix products in all"] == ["7", "17"]
    assert work["gradients of sum(P) agree (1e-10)"][1] == "True"
    # Composition of affine maps is associative too: the same scan reproduces X_i = X_{i-1} R_i + S_i.
    assert fact(r, "clean", "The same scan on affine maps")["agree (1e-10)"] == "True"
    assert fact(r, "faulted", "The same scan on affine maps")["agree (1e-10)"] == "False"


def test_gradcheck_refuses_aliased_entries_whose_nudge_moves_all_three(run, catalog):
    r = run("gradcheck-overlap", "RuntimeError, 9")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # ∂/∂a₀ sum(a²) = 2 · 1.5 = 3; with stride 0 a nudge of entry 0 moves all three: 3 · 3 = 9
    assert r.clean == ["none", 3.0] and r.faulted == ["RuntimeError", 9.0]
    assert fact(r, "faulted", "The input and one nudge")["stride"] == "(0,)"
    assert fact(r, "clean", "The input and one nudge")["stride"] == "(1,)"
    assert not graded(catalog, r, "RuntimeError, 3")
