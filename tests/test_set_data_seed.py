"""Set ``data``: the seed items about how targets are laid out in memory (seed
001, "Make the target unambiguous"), through the real worker."""

from helpers import rows


def test_targets_view_needs_contiguous_targets(run):
    r = run("targets-view", "RuntimeError, none")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == ["none", "none"] and r.faulted == ["RuntimeError", "none"]
    # By hand: tokens is (2, 17), so tokens[:, 1:] has strides (17, 1). Flattened to (32,), element
    # 15 sits at offset 15 and element 16 at offset 17: no single stride, so view raises; the
    # contiguous copy has strides (16, 1) and views fine. reshape (the engine) copies when it must.
    table = {row[0]: row[1:] for row in rows(r, "faulted", "Targets of shape")}
    assert table["tokens[:, 1:]"][:2] == ["(17, 1)", "False"]
    assert table["tokens[:, 1:].contiguous()"][:2] == ["(16, 1)", "True"]
    clean = {row[0]: row[3] for row in rows(r, "clean", "Targets of shape")}
    assert clean["tokens[:, 1:]"] == clean["tokens[:, 1:].contiguous()"]  # same targets, same loss
