"""More of the set ``modules``: CATALOG-3's head-divisibility (004) and packed-qkv (000 §4)."""

from helpers import fact


def test_head_divisibility_fails_deep_in_attention_without_the_check(run, catalog):
    r = run("head-divisibility", "RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "ValueError" and r.faulted == "RuntimeError"
    clean, faulted = (fact(r, side, "GPT with n_embd") for side in ("clean", "faulted"))
    assert clean["stage reached"] == "config" and clean["raised in"] == "config.py, in __post_init__"
    assert faulted["stage reached"] == "forward" and faulted["raised in"] == "model.py, in split_heads"
    # by hand: 2 x 8 x 64 = 1,024 values cannot be viewed as (2, 8, 3, 21).
    assert any("[2, 8, 3, 21]" in item.get("text", "") and "1024" in item["text"]
               for item in r.evidence["faulted"])


def test_packed_qkv_keeps_shape_and_causality_but_not_the_values(run, catalog):
    r = run("packed-qkv", "a")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "b" and r.faulted == "a"
    faulted = fact(r, "faulted", "Attention of block 0")
    assert faulted["output shape"] == "(2, 8, 64)" and float(faulted["max |Δ| at 0..3 when x[4:] changes"]) == 0.0
    assert float(faulted["max |Δ| against the row-block reference"]) > 1e-3
    assert float(fact(r, "clean", "Attention of block 0")["max |Δ| against the row-block reference"]) <= 1e-6
