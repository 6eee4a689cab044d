"""``tutor show SET``: a set named by its id or title shows its primer and its exercises in order; a name
that is neither an exercise nor a set is one sentence with close ids, exit 2."""

from __future__ import annotations

import json

import pytest

from tutor.cli import main
from tutor.store.catalog_cache import load_catalog


def _show(capsys, *args) -> tuple[int, str, str]:
    code = main(["show", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["training-bigram", "The bigram and its floor", "THE BIGRAM AND ITS FLOOR"])
def test_a_set_by_id_or_title_shows_its_primer_and_exercises_in_order(capsys, name):
    wanted = load_catalog().get_set("training-bigram")
    code, out, _ = _show(capsys, name, "--json")
    shown = json.loads(out)["set"]
    assert code == 0 and shown["id"] == "training-bigram" and shown["primer"] == wanted.primer
    assert [e["id"] for e in shown["exercises"]] == [e.id for e in wanted.exercises]


def test_the_sets_page_draws_the_primer_then_each_exercise(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    wanted = load_catalog().get_set("data")
    code, out, _ = _show(capsys, "data")
    assert code == 0 and "Data (data)" in out
    assert "Data: the tokenizer" in " ".join(out.replace("│", " ").split())  # the primer's seed section
    places = [out.index(f"  {e.id}  ") for e in wanted.exercises]
    assert places == sorted(places)


def test_an_exercise_id_still_shows_the_exercise(capsys):
    code, out, _ = _show(capsys, "hand-update", "--json")
    assert code == 0 and json.loads(out)["id"] == "hand-update"


def test_neither_an_exercise_nor_a_set_is_one_sentence_with_close_ids(capsys):
    code, _, err = _show(capsys, "trainin")
    assert code == 2
    assert "there is no exercise or set 'trainin'; did you mean" in err and "training-update" in err
    code, _, err = _show(capsys, "zzzq")
    assert code == 2 and err.strip().endswith("there is no exercise or set 'zzzq'; 'tutor list' shows every set "
                                              "and exercise id.")
