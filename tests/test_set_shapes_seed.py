"""Set ``shapes``: the documented reduction keyword (seed 000 §1), through the
real worker."""

from helpers import rows


def test_keepdim_is_the_documented_keyword(run):
    r = run("keepdim-sum")
    assert r.status == "ok", r.errors
    shapes = {row[0]: row[1] for row in rows(r, "clean", "Shapes of the row totals")}
    assert shapes["counts.sum(-1, keepdim=True)"] == "(2, 3, 1)"
    # torch 2.13 also takes NumPy's keepdims without a word, with the same result; the exercise teaches
    # the documented spelling and says so, rather than pretending the alias raises.
    assert shapes["counts.sum(-1, keepdims=True) (NumPy's spelling)"] == "(2, 3, 1)"
    notes = " ".join(e["text"] for e in r.evidence["clean"] if e["type"] == "note")
    assert "documents the keyword as keepdim" in notes and "silently" in notes
