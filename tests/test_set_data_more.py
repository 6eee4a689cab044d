"""More of the set ``data``: CATALOG-3's float-ids (004, "Data: the tokenizer")."""

from helpers import fact


def test_float_ids_raise_at_the_embedding_without_the_engine_check(run, catalog):
    r = run("float-ids", "RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "TypeError" and r.faulted == "RuntimeError"
    assert fact(r, "clean", "model(ids)")["raised in"] == "model.py, in forward"
    assert fact(r, "faulted", "model(ids)")["raised in"] == "functional.py, in embedding"
    notes = [item["text"] for item in r.evidence["faulted"] if item["type"] == "note"]
    assert any("Long, Int" in text for text in notes)  # PyTorch names the index types it accepts
    assert any("2.7 as 2" in text for text in notes)
