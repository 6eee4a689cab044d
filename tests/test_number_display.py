"""Numbers shown as typed and as measured: a whole number in all its digits, never in exponent form, zero
without a sign, other floats to the decimals the exercise's tolerance tells apart; the same in ``--json``."""

from __future__ import annotations

import json

import pytest

from test_cli import tutor
from tutor.model.answers import make
from tutor.model.answers.base import show_number
from tutor.store.catalog_cache import load_catalog


@pytest.mark.parametrize("value, tolerance, shown", [
    (1068417.0, 0.0, "1068417"),
    (1068416, 0.0, "1068416"),
    (-2048.0, 0.0, "-2048"),
    (-0.0, 0.0, "0"),
    (0.1, 0.0, "0.1"),
    (0.1 + 0.2, 0.0, "0.3"),
    (1 / 3, 0.01, "0.333"),
    (2.5, 0.01, "2.5"),
    (float("nan"), 0.0, "nan"),
])
def test_a_number_is_shown_exactly_or_to_its_tolerance(value, tolerance, shown):
    assert show_number(value, tolerance) == shown


def test_a_large_whole_prediction_reads_back_in_all_its_digits():
    exercise = load_catalog().get("swiglu-hidden-4c")
    for typed in ("1068417", "1,068,417", "1_068_417"):
        assert exercise.kind.show_prediction(exercise.kind.parse(typed)) == "1068417"


def test_a_list_of_whole_numbers_is_shown_in_all_their_digits():
    kind = make("list", length=2)
    assert kind.show_observation([1068416.0, -0.0]) == "[1068416, 0]"


def test_tutor_run_shows_a_large_count_exactly_in_text_and_json():
    """The prediction and the observation of a parameter count, as measured by the check now."""
    proc = tutor("run", "swiglu-hidden-4c", "--predict", "1068417", "--no-save", "--json", "--device", "cpu")
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data["prediction_text"] == "1068417"
    text = tutor("run", "swiglu-hidden-4c", "--predict", "1068417", "--no-save", "--device", "cpu").stdout
    assert "1068417" in text and "e+06" not in text
    observed = data["observed"]
    assert float(observed).is_integer()  # a count: shown in all its digits wherever it appears
    assert str(int(observed)) in text
