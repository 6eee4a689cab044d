"""The set ``data`` observes the known values of seed 004, "Data" (CATALOG.md)."""

from helpers import rows


def test_tokenizer_fit_on_a_sample_raises_key_error_on_b(run, catalog):
    # Seed 004 reports 'S' for its corpus; this corpus (make_corpus(), seed 0) first misses 'B'.
    r = run("tokenizer-sample", "KeyError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "KeyError"
    assert rows(r, "faulted", "Characters missing") == [["'B'", "3,746"]]
    outcome = rows(r, "faulted", "prepare(corpus)")[0][0]
    assert outcome.startswith("KeyError: character 'B' (at position 3746)")
    assert rows(r, "clean", "prepare(corpus)")[0][0].endswith("V = 37, ids in [0, 36], round trip True")


def test_id_equal_to_vocab_size_raises_index_error(run, catalog):
    r = run("id-out-of-range", "IndexError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "IndexError"
    lookups = dict(rows(r, "faulted", "The same ids"))
    assert lookups["nn.Embedding (CPU)"] == "IndexError: index out of range in self"
    assert lookups["engine GPT"].startswith("IndexError: token id 36 is outside [0, 36)")
    # The explain-back asks which id has no row and how often it occurs; the evidence shows it.
    # 'y' is the 37th character in sorted order; it occurs 391 times in the first 50,000 corpus characters.
    assert dict(rows(r, "faulted", "Ids against rows"))["ids with no row, and how often"] == "36 ('y'): 391 of 50,000 ids"
    assert dict(rows(r, "clean", "Ids against rows"))["ids with no row, and how often"] == "none"


def test_alignment_check_passes_aligned_fails_shifted_twice(run, catalog):
    # Graded: which of three one-line checks pass: x one ahead of y (the contract), two ahead, one behind.
    r = run("alignment-contract", "no, yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, False, False] and r.faulted == [False, True, False]
    assert dict(rows(r, "faulted", "Three checks")) == {
        "torch.equal(x[:, 1:], y[:, :-1])": "False", "torch.equal(x[:, 2:], y[:, :-2])": "True",
        "torch.equal(x[:, :-1], y[:, 1:])": "False"}
    hand = dict(rows(r, "clean", "torch.equal(x[:, 1:], y[:, :-1]) on hand-built"))
    assert hand == {"no shift (y = x)": "False", "shift by one": "True", "shift by two": "False"}


# Seed gaps (CATALOG-3.md)

def test_int32_ids_embedding_accepts_cross_entropy_refuses(run, catalog):
    r = run("int32-ids", "none RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == ["none", "none"] and r.faulted == ["none", "RuntimeError"]
    calls = dict(rows(r, "faulted", "The engine GPT"))
    assert calls["model(x, targets=y)"] == "RuntimeError: expected target dtype to be Long or Byte, but got Int"
