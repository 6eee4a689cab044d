"""Set ``autograd``: the seed items of gradcheck on ordinary functions and of
parallel scans (seed 000 §5), through the real worker."""

import math

import pytest

from helpers import fact, rows


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
