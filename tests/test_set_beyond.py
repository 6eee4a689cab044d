"""Set ``beyond`` (seed 000 §8): known values with and without each fault."""

from helpers import fact


def test_nn_affine(run):
    r = run("nn-affine")
    assert r.status == "ok", r.error
    assert r.clean == "a" and r.faulted == "b"          # nearest exemplar A; soft vote 0.45 vs 0.55 picks B
    assert fact(r, "clean", "L2 argmin")["queries that agree"] == "64 / 64"              # affine argmax == L2 argmin on every query
    classifier = fact(r, "clean", "Classifier")
    assert classifier["nearest exemplar"] == "0 (label A)"  # q = 0 is nearest the first exemplar, label A
    assert run("nn-affine", "b").status == "pass"


def test_group_baseline(run):
    r = run("group-baseline")
    assert r.status == "ok", r.error
    assert r.clean is False and r.faulted is True
    shapes = fact(r, "clean", "Baseline")
    assert shapes["baseline shape"] == "(3, 1)"
    assert fact(r, "faulted", "Baseline")["baseline shape"] == "(1, 4)"
    assert run("group-baseline", "yes").status == "pass"


def test_rank_offset(run):
    r = run("rank-offset")
    assert r.status == "ok", r.error
    assert r.clean == 128 and r.faulted == 64  # graded: the distinct positions the two ranks read
    clean = fact(r, "clean", "Token positions")
    faulted = fact(r, "faulted", "Token positions")
    assert clean["read by both"] == "0" and clean["distinct positions (graded)"] == "128"
    assert faulted["read by both"] == "64" and faulted["distinct positions (graded)"] == "64"
    assert run("rank-offset", "64").status == "pass"
    assert run("rank-offset", "128").status == "fail"
    # the ranks ask no hostname of a side's network namespace, so c10d and gloo print no warning before
    # the evidence (they did: "[c10d] The hostname of the client socket cannot be retrieved")
    for side in ("clean", "faulted"):
        printed = r.output.get(side, "")
        assert "c10d" not in printed and "hostname" not in printed, printed


# Seed gaps (CATALOG-3.md)

def test_chunked_scores_equal_with_a_lower_peak(run):
    r = run("chunked-scores", "yes no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [True, False]
    clean = fact(r, "clean", "M = 64 queries")
    # (64, 8192) float32 is 2,048 KiB; all at once the product and the scores coexist: 4,128 KiB.
    assert clean["all pairs at once"] == "4,128 KiB"
    assert int(clean["nearest (subject)"].split()[0].replace(",", "")) < 256


def test_peak_tensor_bytes_by_hand():
    import torch

    from exercises.beyond import _peak_tensor_bytes

    x = torch.ones(1000)
    _, peak = _peak_tensor_bytes(lambda: (x + 1) * 2)  # two 4,000-byte results alive at once
    assert peak == 8000
    _, peak = _peak_tensor_bytes(lambda: x[:10].sum())  # a view of an input is not new memory
    assert peak == 4


def test_l1_as_relu(run):
    r = run("l1-as-relu", "yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True
    assert fact(r, "faulted", "Against")["gradients with respect to a"] == "2"  # 1 against ±1


def test_fixed_old_logprobs(run):
    # CATALOG-3: nonzero gradient through the old side; here exactly -1 times the new side.
    r = run("fixed-old-logprobs", "-1")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 0 and r.faulted == -1
    assert fact(r, "faulted", "Gradient of the surrogate")["total"] == "0"
