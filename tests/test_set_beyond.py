"""Set ``beyond`` (seed 000 §8): known values with and without each fault."""


def test_nn_affine(run):
    r = run("nn-affine")
    assert r.status == "ok", r.error
    assert r.clean == "a" and r.faulted == "b"          # nearest exemplar A; soft vote 0.45 vs 0.55 picks B
    table = r.evidence["clean"][0]
    assert table["rows"][0][1] == "64 / 64"              # affine argmax == L2 argmin on every query
    classifier = {row[0]: row[1] for row in r.evidence["clean"][2]["rows"]}
    assert classifier["nearest exemplar"] == "0 (label A)"  # q = 0 is nearest the first exemplar, label A
    assert run("nn-affine", "b").status == "pass"


def test_group_baseline(run):
    r = run("group-baseline")
    assert r.status == "ok", r.error
    assert r.clean is True and r.faulted is False
    shapes = {row[0]: row[1] for row in r.evidence["clean"][1]["rows"]}
    assert shapes["baseline shape"] == "(3, 1)"
    assert {row[0]: row[1] for row in r.evidence["faulted"][1]["rows"]}["baseline shape"] == "(1, 4)"
    assert run("group-baseline", "no").status == "pass"


def test_rank_offset(run):
    r = run("rank-offset")
    assert r.status == "ok", r.error
    assert r.clean is True and r.faulted is False
    clean = {row[0]: row[1] for row in r.evidence["clean"][1]["rows"]}
    faulted = {row[0]: row[1] for row in r.evidence["faulted"][1]["rows"]}
    assert clean["read by both"] == "0" and clean["distinct positions"] == "128"
    assert faulted["read by both"] == "64" and faulted["distinct positions"] == "64"
    assert run("rank-offset", "no").status == "pass"
