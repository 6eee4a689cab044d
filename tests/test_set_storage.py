"""The set ``storage`` observes the known values of seed 000 §2 (CATALOG.md), clean and faulted."""

from helpers import graded


YES_NO_TABLE = [True, True,    # view: shares storage, keeps a grad path
                False, True,   # clone
                True, False,   # detach
                False, False]  # detach().clone()


def test_view_vs_reshape(run, catalog):
    r = run("view-vs-reshape", "RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "RuntimeError"
    for side in ("clean", "faulted"):
        spellings = {row[0]: row[1] for item in r.evidence[side] if item.get("title") == "Reference spellings"
                     for row in item["rows"]}
        assert spellings["x.T.reshape(-1)"] == "[0, 3, 1, 4, 2, 5]"
    assert not graded(catalog, r, "none")


def test_clone_detach_table_and_snapshot(run, catalog):
    r = run("clone-detach", "yes yes, no yes, yes no, no no, yes no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == YES_NO_TABLE + [False, False]   # detach().clone(): independent, no grad path
    assert r.faulted == YES_NO_TABLE + [True, False]  # detach() only: shares x's storage
    assert not graded(catalog, r, "yes yes, no yes, yes no, no no, no no")


def test_numpy_sharing(run, catalog):
    r = run("numpy-sharing", "no, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True  # torch.tensor copies; from_numpy shares
    assert r.observed == [False, True]
    assert not graded(catalog, r, "yes, yes")


def test_inplace_saved_raises_at_backward(run, catalog):
    r = run("inplace-saved", "RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "RuntimeError"
    stages = dict(r.evidence["faulted"][0]["rows"])
    assert stages == {"forward": "ran", "backward": "raised"}
    assert any("version" in item.get("text", "") for item in r.evidence["faulted"])


# Seed gaps (CATALOG-3.md)

def test_view_noncontig_a_noncontiguous_tensor_can_still_be_viewed(run, catalog):
    r = run("view-noncontig", "none")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "ValueError"
    views = {row[0]: row[1] for row in next(e for e in r.evidence["clean"] if e.get("title") == "Views of x")["rows"]}
    assert views["split_rows(x, 2)"] == "(2, 2, 3), strides (12, 6, 1), shares storage True"
    assert views["x.view(12)"].startswith("RuntimeError: view size is not compatible")
