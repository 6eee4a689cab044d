"""Set ``attention``: the seed items that heads are split after the learned
projection (seed 000 §4) and that each layer keeps its own K and V (§6),
through the real worker."""

from helpers import facts, graded, rows


def test_head_channels_every_head_reads_every_channel(run, catalog):
    r = run("head-channels", "128")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # q = x @ W_q^T: each of head 0's D = 32 values is a row of W_q (128 weights, N(0, 0.02), none
    # zero) times all of x, so all C = 128 channels count; a split of the raw embedding would give 32.
    assert r.clean == 128
    assert [row[1] for row in rows(r, "clean", "Input channels each head")] == ["128"] * 4
    assert run("head-channels", "32").status == "fail"


def test_one_cache_for_every_layer_breaks_only_a_deeper_model(run, catalog):
    r = run("cache-one-for-all-layers", "yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [True, False]
    # a prefill of 3: each layer stores its own 3 keys; shared, layer 1 appends after layer 0 (6) and cache[1] stays empty
    assert facts(r, "clean", "Each layer's cached length")["2"] == ["[3, 3]"]
    assert facts(r, "faulted", "Each layer's cached length")["2"] == ["[6, 0]"]
    assert facts(r, "faulted", "Each layer's cached length")["1"] == ["[3]"]
    assert not graded(catalog, r, "no, no")
