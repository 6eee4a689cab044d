"""Set ``attention``: the seed item that heads are split after the learned
projection (seed 000 §4), through the real worker."""

from helpers import rows


def test_head_channels_every_head_reads_every_channel(run, catalog):
    r = run("head-channels", "128")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # q = x @ W_q^T: each of head 0's D = 32 values is a row of W_q (128 weights, N(0, 0.02), none
    # zero) times all of x, so all C = 128 channels count; a split of the raw embedding would give 32.
    assert r.clean == 128
    assert [row[1] for row in rows(r, "clean", "Input channels each head")] == ["128"] * 4
    assert run("head-channels", "32").status == "fail"
