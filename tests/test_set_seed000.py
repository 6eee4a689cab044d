"""Seed 000's items that were only evidence, hints or explain-back questions,
now exercises of their sets (shapes, modules, attention, autograd, data,
beyond, comparison). Every check observes the value derived here by hand, on
both sides, through the real worker."""

from helpers import fact, facts, rows


def test_tied_gradient_reaches_every_row_only_when_tied(run):
    r = run("tied-gradient-rows", "6")
    assert r.status == "pass", r.error
    # Tied: the head's softmax gives every one of V = 37 rows a gradient; untied, the lookup
    # reaches only the 6 ids the inputs use.
    assert r.clean == 37 and r.faulted == 6
    assert fact(r, "clean", "Rows of the")["lm_head.weight is wte.weight"] == "True"
    untied = fact(r, "faulted", "Rows of the")
    assert untied["lm_head.weight.grad rows that are nonzero"] == "37 of 37"
    assert fact(r, "faulted", "Two matrices")["rows nonzero in wte.grad + lm_head.grad"] == "37 of 37"
    assert fact(r, "faulted", "Two matrices")["max |wte.grad| outside the 6 ids"] == "0"
    assert run("tied-gradient-rows", "37").status == "fail"


def test_unused_parameter_is_held_but_gets_no_grad_and_stays(run):
    r = run("unused-parameter", "yes, yes, no")
    assert r.status == "pass", r.error
    assert r.clean == [True, False, True] and r.faulted == [True, True, False]
    table = fact(r, "faulted", "The position table")
    assert table["registered (in model.parameters())"] == "True" and table["in state_dict()"] == "True"
    assert table["max |change|"] == "0"
    assert fact(r, "faulted", "For comparison")[".grad is None"] == "False"


def test_inplace_init_outside_no_grad_raises_at_construction(run):
    r = run("inplace-init", "RuntimeError")
    assert r.status == "pass", r.error
    assert r.clean == "none" and r.faulted == "RuntimeError"
    assert "in-place operation" in fact(r, "faulted", "Building the engine GPT")["GPT(config)"]
    writes = fact(r, "clean", "Two other in-place writes")
    assert writes["weight.normal_() inside torch.no_grad()"] == "ran; same object, same storage"
    assert writes["sigmoid output *= 2, then backward"].startswith("RuntimeError at backward")
    assert fact(r, "clean", "The built model")["wte.weight std (init 0.02)"] == "0.02"


def test_heads_change_the_head_size_not_the_parameter_count(run):
    r = run("heads-no-parameters", "804224, 16")
    assert r.status == "pass", r.error
    assert r.clean == [804_224, 16]   # the seed model's count (CATALOG.md) at every H; D = 128 / 8
    table = rows(r, "clean", "The seed GPT")
    assert [row[1] for row in table] == ["128", "64", "32", "16", "8"]
    assert {row[2] for row in table} == {"804,224"}
    assert run("heads-no-parameters", "1608448, 16").status == "fail"


def test_gradcheck_fails_on_the_kink_and_abs_passes_by_symmetry(run):
    r = run("gradcheck-kink", "no")
    assert r.status == "pass", r.error
    assert r.clean is True and r.faulted is False
    routes = {row[0]: row[1:] for row in rows(r, "faulted", "hinge(m)")}
    # At m = 1: autograd's relu'(0) convention gives 0; the central difference (0 - 1e-6) / 2e-6 = -0.5.
    assert float(routes["1"][0]) == 0.0 and abs(float(routes["1"][1]) + 0.5) < 1e-6
    assert routes["-0.5"] == ["-1", "-1"]
    assert fact(r, "faulted", "gradcheck")["abs at 0"] == "True"


def test_group_spread_without_eps_is_nan_for_the_degenerate_group(run):
    r = run("group-spread", "no, -1.732")
    assert r.status == "pass", r.error
    # Prompt 0 [1, 1, 1, 0]: mean 0.75, population std sqrt(0.1875) = 0.4330, odd response -0.75 / 0.4330.
    assert r.clean[0] is True and r.faulted[0] is False
    assert abs(r.faulted[1] - (-0.75 / 0.1875 ** 0.5)) < 1e-5 and abs(r.clean[1] - r.faulted[1]) < 1e-4
    conventions = facts(r, "clean", "Prompt 0 under two")
    assert conventions["sample (unbiased=True)"] == ["0.5", "-1.5"]
    assert run("group-spread", "yes, -1.732").status == "fail"


def test_narrowing_without_a_check_wraps_three_ids_silently(run):
    r = run("narrow-ids", "none, 3")
    assert r.status == "pass", r.error
    assert r.clean == ["ValueError", 0] and r.faulted == ["none", 3]
    stored = {row[0]: row[1:] for row in rows(r, "faulted", "Each id")}
    # v mod 65,536 for the three ids above uint16's largest value; each still a valid id of 100,277.
    assert stored["65536"] == ["0", "True"] and stored["70000"] == ["4464", "True"]
    assert stored["100276"] == ["34740", "True"] and stored["50256"] == ["50256", "True"]


def test_broadcast_loss_falls_while_every_prediction_goes_to_the_mean(run):
    r = run("broadcast-trains", "yes, 2")
    assert r.status == "pass", r.error
    assert r.clean == [True, 3.0] and r.faulted == [True, 2.0]
    loss = fact(r, "faulted", "The loss")
    # Start: every prediction 0, mean of t^2 = 14/3 either way; end: mean of (2 - t)^2 over the table = 2/3.
    assert abs(float(loss["first"]) - 14 / 3) < 1e-5 and abs(float(loss["final"]) - 2 / 3) < 1e-5
    assert abs(float(fact(r, "clean", "The loss")["final"])) < 1e-6
    assert run("broadcast-trains", "yes, 3").status == "fail"


def test_vocab_padding_times_the_head_but_grades_only_the_sampler(run):
    r = run("vocab-padding", "47, yes")
    assert r.status == "pass", r.error
    assert r.clean == [47, False] and r.faulted == [47, True]
    for side in ("clean", "faulted"):
        timing = {row[0]: row[1:] for row in rows(r, side, "Not graded: median ms")}
        assert timing["50,257"][1] == "False" and timing["50,304"][1] == "True"   # 50,304 = 64 * 786
        assert float(timing["50,257"][0]) > 0 and float(timing["50,304"][0]) > 0


def test_numpy_write_between_forward_and_backward_goes_unnoticed(run):
    r = run("numpy-write-after-forward", "none, 2")
    assert r.status == "pass", r.error
    # Copied batch: the gradient of (w * ones).sum() is 1; wrapped: backward reads the refilled twos.
    assert r.clean == ["none", 1.0] and r.faulted == ["none", 2.0]
    saved = fact(r, "faulted", "The batch the forward saved")
    assert saved["version counter before the refill"] == saved["version counter after the refill"] == "0"
    assert fact(r, "faulted", "backward")["x.fill_(2.0) in PyTorch"].startswith("RuntimeError")
    assert run("numpy-write-after-forward", "RuntimeError, 1").status == "fail"


def test_float16_gradients_below_half_the_smallest_subnormal_vanish_unscaled(run):
    r = run("loss-scaling", "1")
    assert r.status == "pass", r.error
    # True gradients 5e-9 .. 1.5e-8 < 2**-24 / 2 ~ 2.98e-8: all round to 0; scaled by 2**16 none does.
    assert r.clean == 0.0 and r.faulted == 1.0
    assert float(fact(r, "clean", "The weight's gradient")["median relative error"]) < 0.01
    assert fact(r, "clean", "float16")["smallest subnormal"] == "5.96e-08"
