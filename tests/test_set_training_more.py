"""More of the set ``training``: CATALOG-3's first-nonfinite (000 §7)."""

from helpers import rows


def test_first_nonfinite_names_the_projection_after_the_broken_softmax(run, catalog):
    r = run("first-nonfinite", "d")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "a" and r.faulted == "d"
    assert rows(r, "faulted", "causal_mask")[0][1] == "0 0 0 0"  # query 0 may attend nothing
    ledger = {row[0]: int(row[2]) for row in rows(r, "faulted", "Non-finite ledger")}
    assert ledger["blocks.1.mlp.proj"] == 0 and ledger["blocks.2.attn.qkv"] == 0
    assert ledger["blocks.2.attn.proj"] == 128  # position 0's 128 channels
    assert ledger["blocks.3.attn.proj"] == 16 * 128  # attention spread it to every position
    assert all(n == 0 for n in (int(row[2]) for row in rows(r, "clean", "Non-finite ledger")))
