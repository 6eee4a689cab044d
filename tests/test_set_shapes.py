"""The set ``shapes`` observes the known values of seed 000 §1 (CATALOG.md), clean and faulted."""

from helpers import graded


def test_broadcast_loss(run, catalog):
    r = run("broadcast-loss", "(3, 3)")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [3] and r.faulted == [3, 3]


def test_squeeze_batch_drops_the_batch_axis_at_batch_size_one(run, catalog):
    r = run("squeeze-batch", "(5,)")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [1, 5] and r.faulted == [5]
    assert not graded(catalog, r, "(1, 5)")


def test_softmax_axis_columns_sum_to_one_with_the_same_shape(run, catalog):
    r = run("softmax-axis", "yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True
    shapes = {side: dict(r.evidence[side][0]["rows"]) for side in ("clean", "faulted")}
    assert shapes["clean"] == shapes["faulted"] == {"logits": "(2, 4, 6)", "probs": "(2, 4, 6)"}


def test_pairwise_index_pairs_versus_block(run, catalog):
    r = run("pairwise-index", "3")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [3, 3] and r.faulted == [3]
    values = [row[-1] for row in r.evidence["faulted"][1]["rows"]]
    assert values == ["2", "13", "24"]  # coordinates (0, 2), (1, 3), (2, 4)


def test_index_assign_read_copies_assignment_writes(run, catalog):
    r = run("index-assign", "yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True
    # The kept probability is computed from the logits: 1/5 = 0.2 for V = 5.
    assert "keep probability 0.2, 0.2 (1/V for V = 5" in " ".join(
        e["text"] for e in r.evidence["faulted"] if e["type"] == "note")


def test_gather_repeat_gives_the_repeated_entry_gradient_two(run, catalog):
    r = run("gather-repeat", "1 0 1 0 2 0")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [1.0, 0.0, 1.0, 0.0, 2.0, 0.0]
    assert r.faulted == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert not graded(catalog, r, "1 0 1 0 1 0")
    # scatter_ with repeated indices is documented as nondeterministic; say so.
    note = " ".join(e["text"] for e in r.evidence["faulted"] if e["type"] == "note")
    assert "nondeterministic" in note and "holds 1 either way" in note
    assert "nondeterministic" in catalog.get("gather-repeat").hints[-1]


def test_token_logprob_without_the_singleton_axis_raises(run, catalog):
    # Measured in torch 2.13: gather refuses an index with fewer axes than its input.
    r = run("token-logprob", "RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "RuntimeError"
    assert any("same number of dimensions" in item.get("text", "") for item in r.evidence["faulted"])


# Seed gaps (CATALOG-3.md)

def test_keepdim_sum_raises_or_broadcasts_wrongly(run, catalog):
    # (2, 3, 5) / (2, 3) cannot broadcast; (4, 4, 4) / (4, 4) can, against the wrong axes.
    r = run("keepdim-sum", "RuntimeError no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == ["none", True] and r.faulted == ["RuntimeError", False]
    faulted = {row[0]: row[1:] for row in _rows(r, "faulted", "counts_to_probs")}
    assert faulted["(4, 4, 4)"][0] == "(4, 4, 4)" and faulted["(4, 4, 4)"][1] != "1 .. 1"
    assert not graded(catalog, r, "none no")


def test_batched_transpose_reverses_every_axis(run, catalog):
    r = run("batched-transpose", "(4, 5, 3, 2)")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [2, 3, 4, 5] and r.faulted == [4, 5, 3, 2]  # (D, T, H, B)
    notes = " ".join(e["text"] for e in r.evidence["faulted"] if e["type"] == "note")
    assert "deprecated" in notes
    assert dict((row[0], row[1]) for row in _rows(r, "faulted", "Keys"))["scores(q, k)"].startswith("RuntimeError")


def _rows(result, side, title_start):
    for item in result.evidence[side]:
        if item["type"] == "table" and item["title"].startswith(title_start):
            return item["rows"]
    raise AssertionError(title_start)


def test_broadcast_loss_also_measures_the_loss_against_moved_targets(run):
    """Targets 2, 3, 4 against predictions 1, 2, 3: clean (1, 1, 1) → 1; broadcast (3, 3) → 21 / 9."""
    r = run("broadcast-loss", "(3, 3)")
    rows = {side: dict(r.evidence[side][0]["rows"]) for side in ("clean", "faulted")}
    assert rows["clean"]["values"] == rows["faulted"]["values"] == "1 2 3"
    assert float(rows["clean"]["loss against targets + 1 (intended 1)"]) == 1.0
    assert abs(float(rows["faulted"]["loss against targets + 1 (intended 1)"]) - 21 / 9) < 1e-5
