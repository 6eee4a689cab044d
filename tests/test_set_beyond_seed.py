"""Set ``beyond``: the seed items of cancellation and ties, and of advantages
that open a gradient path (seed 000 §8), through the real worker."""

from helpers import fact, rows


def test_cancellation_ties(run):
    r = run("cancellation-ties", "no, yes, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [False, True, True]
    # By hand: scores 2qx - x^2 are 100,012,000 (A) and 100,012,000.2 (B). float32's spacing at 1e8
    # is 2^(26 - 23) = 8, so both round to 100,012,000: a tie, and argmax takes the first, A.
    table = {row[0]: row[1:] for row in rows(r, "clean", "A = (10,000, 0)")}
    assert table["float32"][:2] == ["100012000.00 / 100012000.00", "A"]
    assert table["float64"][1] == "B"
    assert table["float32, centred"][0] == "-0.35 / -0.15"  # A, B at -/+0.5, q at +0.1: 2qx - x^2
    assert rows(r, "clean", "Two identical exemplars")[0] == ["5, 5, 0", "0"]  # the first of equal maxima


def test_advantage_path_reaches_the_value_head_without_detach(run):
    r = run("advantage-path", "yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True
    clean, faulted = (fact(r, side, "After policy_loss") for side in ("clean", "faulted"))
    assert clean["value head (weight and bias)"] == "0" and float(faulted["value head (weight and bias)"]) > 0.1
    # The policy's own gradient is the same either way: detach changes only the path into the values.
    assert clean["policy logits (B, G)"] == faulted["policy logits (B, G)"]


def test_a_policy_mask_with_the_prompt_trains_tokens_nobody_chose(run):
    r = run("policy-mask-prompt", "12")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # response t >= 4: 3 tokens a row, 6 in all, each -adv / 6; with the prompt every t >= 1: 12, each -adv / 12
    assert r.clean == 6 and r.faulted == 12
    clean, faulted = rows(r, "clean", "Gradient on each token"), rows(r, "faulted", "Gradient on each token")
    assert clean[0][2:] == ["[0.0, 0.0, 0.0]", "[-0.1667, -0.1667, -0.1667]"]
    assert clean[1][3] == "[0.1667, 0.1667, 0.1667]"
    assert faulted[0][2:] == ["[-0.0833, -0.0833, -0.0833]", "[-0.0833, -0.0833, -0.0833]"]


def test_byte_level_ids_need_no_table_of_characters(run, catalog):
    r = run("byte-level-ids", "3, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # UTF-8: é = C3 A9 (195, 169), € = E2 82 AC (226, 130, 172), a = 97; code points 233, 8364, 97
    assert r.clean == [6, True] and r.faulted == [3, False]
    assert fact(r, "clean", "The whole text")["ids"] == "[195, 169, 226, 130, 172, 97]"
    assert fact(r, "clean", "The whole text")["decoded"] == "é€a"
    assert fact(r, "faulted", "The whole text")["ids"] == "[233, 8364, 97]"
    assert [row[2] for row in rows(r, "clean", "Each character")] == ["2", "3", "1"]


def test_numpy_refuses_the_meta_device_as_it_refuses_cuda(run):
    r = run("numpy-off-host", "TypeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "NotImplementedError" and r.faulted == "TypeError"
    meta = {row[0]: row[1:] for row in rows(r, "faulted", "to_numpy on each device")}
    assert meta["meta"][1].startswith("can't convert meta device type tensor to numpy. Use Tensor.cpu()")
    assert meta["cpu"] == ["none", "an array of shape (3,)"]
