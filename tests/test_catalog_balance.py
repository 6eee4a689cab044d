"""The catalog's graded answers are balanced: "no" everywhere, or one letter always, must not score well.

The truth of an exercise is measured, so its base rates are too: the slow
test runs every yes/no, lettered-choice and list exercise through the real
worker (as ``tutor check`` does) and asserts the shares ``tutor check``
prints are in band. The default suite cannot run them all quickly; it tests
the counting itself on exercises built here, with observations given.
"""

from dataclasses import replace

import pytest

from tutor.cli.author import MOST_PER_LETTER, YES_BAND, base_rates, base_rates_sentence


def _exercise(catalog, kind: str):
    """A real exercise of ``kind`` (the counting reads only its kind and choices)."""
    return next(e for e in catalog.exercises if e.kind.name == kind and (kind != "choice" or len(e.choices[0][0]) == 1))


def test_base_rates_count_graded_yes_letters_and_list_items(catalog):
    yes_no, lettered, listed = (_exercise(catalog, k) for k in ("bool", "choice", "list"))
    worded = replace(lettered, choices=(("causality", "x"), ("shape", "y")))
    rates = base_rates([(yes_no, True), (yes_no, False), (yes_no, False), (yes_no, None),
                        (lettered, "a"), (lettered, "c"), (lettered, "c"), (lettered, "d"), (worded, "shape"),
                        (listed, [True, 3.0, False, True]), (listed, None)])
    assert rates["bools"] == 3 and rates["yes"] == pytest.approx(1 / 3)  # the unmeasured one is left out
    assert rates["lettered"] == 4 and rates["letters"] == {"a": 0.25, "c": 0.5, "d": 0.25}  # worded ids apart
    assert rates["list_items"] == 3 and rates["list_yes"] == pytest.approx(2 / 3)  # numbers are not yes/no


def test_a_warm_up_is_no_part_of_the_base_rates(catalog):
    yes_no, lettered = _exercise(catalog, "bool"), _exercise(catalog, "choice")
    rates = base_rates([(yes_no, True), (replace(yes_no, graded=False), False), (replace(lettered, graded=False), "a")])
    assert rates["bools"] == 1 and rates["yes"] == 1.0 and rates["lettered"] == 0  # the ungraded bets are left out


def test_base_rates_of_nothing_measured_are_none(catalog):
    rates = base_rates([(_exercise(catalog, "bool"), None)])
    assert rates["yes"] is None and rates["bools"] == 0 and rates["letters"] == {} and rates["list_yes"] is None


def test_the_base_rates_line_says_which_share_is_out_of_band(catalog):
    yes_no, lettered = _exercise(catalog, "bool"), _exercise(catalog, "choice")
    always_no = base_rates([(yes_no, False)] * 9 + [(yes_no, True)] + [(lettered, "b")] * 2 + [(lettered, "a")])
    line = base_rates_sentence(always_no)
    assert line.startswith("base rates: yes in 10 % of 10 yes/no answers; correct letters (3): a 33 %, b 67 %")
    assert line.endswith(" — out of band: yes/no answers should be yes 35 % to 65 % of the time; "
                         "no letter should be right in more than 35 % of lettered exercises")
    balanced = base_rates([(yes_no, False), (yes_no, True), (lettered, "a"), (lettered, "b"), (lettered, "c")])
    assert "out of band" not in base_rates_sentence(balanced)


@pytest.mark.slow
def test_the_measured_base_rates_of_the_catalog_are_in_band(runner, catalog):
    counted = [e for e in catalog.exercises if e.kind.name in ("bool", "choice", "list")]
    graded = []
    for ex in counted:
        result = runner.run(ex, None)
        assert result.status == "ok", (ex.id, result.status, result.error)
        graded.append((ex, result.observed))
    rates = base_rates(graded)
    low, high = YES_BAND
    assert low <= rates["yes"] <= high, rates
    assert max(rates["letters"].values()) <= MOST_PER_LETTER, rates
    assert low <= rates["list_yes"] <= high, rates


def test_a_subset_s_base_rates_are_not_judged_against_the_catalog_s_bands(catalog):
    """Two yes/no questions of one set, both yes: the line gives the shares and judges no band."""
    yes_no = _exercise(catalog, "bool")
    rates = base_rates([(yes_no, True), (yes_no, True)])
    line = base_rates_sentence(rates, whole=False)
    assert "out of band" not in line and "judged over the whole catalog only" in line
    assert line.startswith("base rates: yes in 100 % of 2 yes/no answers; no lettered choices; no yes/no list items")
    assert "out of band" in base_rates_sentence(rates)  # the same shares over the whole catalog are judged
