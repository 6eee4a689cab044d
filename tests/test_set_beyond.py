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
    assert r.clean is True and r.faulted is False
    shapes = fact(r, "clean", "Baseline")
    assert shapes["baseline shape"] == "(3, 1)"
    assert fact(r, "faulted", "Baseline")["baseline shape"] == "(1, 4)"
    assert run("group-baseline", "no").status == "pass"


def test_rank_offset(run):
    r = run("rank-offset")
    assert r.status == "ok", r.error
    assert r.clean is True and r.faulted is False
    clean = fact(r, "clean", "Token positions")
    faulted = fact(r, "faulted", "Token positions")
    assert clean["read by both"] == "0" and clean["distinct positions"] == "128"
    assert faulted["read by both"] == "64" and faulted["distinct positions"] == "64"
    assert run("rank-offset", "no").status == "pass"
