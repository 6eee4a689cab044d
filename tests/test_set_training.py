"""Set ``training`` (seed 001; seed 004 ch. 11): every check, clean and
faulted, through the real worker, pinned to the seeds' numbers or to values
measured and explained where the seeds give none."""

from __future__ import annotations

import ast
import math

import pytest
import torch

from helpers import fact, facts, graded, rows
from tutor.model.answers import AnswerError

#: The training sets (one update, the bigram, the loop, the ledger, numerics) share this prefix.
TRAINING = "training-"


def _series(result, side: str, title_start: str) -> list[float]:
    for item in result.evidence[side]:
        if item["type"] == "series" and item["title"].startswith(title_start):
            return item["values"]
    raise AssertionError(f"no series {title_start!r} on the {side} side")


def _notes(result, side: str) -> str:
    return " ".join(item["text"] for item in result.evidence[side] if item["type"] == "note")


@pytest.fixture(scope="module")
def ok(run):
    """ok(id) -> a run without a prediction that must have status ok and differ."""
    cache = {}

    def _ok(exercise_id):
        if exercise_id not in cache:
            r = run(exercise_id)
            assert r.status == "ok", r.errors
            assert r.differs is True, (r.clean, r.faulted)
            cache[exercise_id] = r
        return cache[exercise_id]
    return _ok


def test_every_training_exercise_has_a_fault(catalog):
    exercises = [e for s in catalog.sets if s.id.startswith(TRAINING) for e in s.exercises]
    # 17 CATALOG.md rows, 12 seed gaps of 000/001, first-nonfinite, and 9 more seed items
    # (step-per-microbatch, clip-nonfinite, mode-not-step, steps-not-epoch, fp8-scaling,
    # reversed-stress, teacher-forcing, evaluate-on-error, mask-times-nan; tests/test_set_training_seed.py)
    # and 9 of seed 001's claims about its own evidence (tests/test_set_training_claims.py), and seed 000's
    # float16 gradients without a loss scale (loss-scaling, tests/test_set_seed000.py), and seed 000 §7's
    # invalid operation prevented rather than masked (mask-the-input, tests/test_set_training_seed.py), and a
    # run's state beyond its weights (adam-coupled-decay, unfreeze-rebuilds-optimizer, resume-random-state;
    # tests/test_set_training_state.py), an evaluate that resets the gradients and copying with no attention
    # (evaluate-zero-grad, copy-needs-no-attention; tests/test_set_training_state.py), and an evaluate that
    # restores only the root's mode (evaluate-mixed-modes, tests/test_set_training_seed.py)
    assert len(exercises) == 56
    # Four seed items measure the engine as shipped, with no edit to predict: what clipping does to an
    # already non-finite forward, what a mode switch changes, how much of the data an epoch's worth of
    # random batches scores, and which transitions a fit rewards. Every other exercise has a fault.
    measured_only = {"clip-nonfinite", "mode-not-step", "steps-not-epoch", "reversed-stress"}
    assert {e.id for e in exercises if catalog.fault_of(e) is None} == measured_only


def test_skip_zero_grad(ok, run):
    r = ok("skip-zero-grad")
    assert r.clean == 1 and r.faulted == 2
    # The hand update is computed from the formula, and it is the seed's [-0.1, 0.2, -0.1].
    hand = [float(v) for v in facts(r, "clean", "One SGD step")["hand update (formula)"]]
    assert hand == pytest.approx([-0.1, 0.2, -0.1], abs=1e-12)
    assert facts(r, "clean", "Facts")["step length / hand step length"] == ["1"]
    assert facts(r, "faulted", "Facts")["step length / hand step length"] == ["2"]
    assert facts(r, "faulted", "Facts")["step matches the hand update"] == ["False"]
    assert run("skip-zero-grad", "2").status == "pass"


def test_hand_update(ok, run):
    r = ok("hand-update")
    assert r.clean == pytest.approx(0.908918, abs=1e-6)  # seed 001, Part 1
    p_up = math.exp(-0.2) / (math.exp(-0.2) + 2 * math.exp(0.1))  # the flipped step: [0.1, -0.2, 0.1]
    assert r.faulted == pytest.approx(-math.log(p_up), abs=1e-9)
    rows = facts(r, "clean", "One step")
    assert rows["loss before"] == ["1.09861"]
    assert rows["gradient"] == ["[0.333333, -0.666667, 0.333333]"]
    assert rows["logits after"] == ["[-0.1, 0.2, -0.1]"]
    assert rows["target prob"] == ["0.333333 -> 0.402960"]
    assert facts(r, "clean", "The step against")["same logits as SGD's step"] == ["True"]
    assert facts(r, "faulted", "The step against")["loss went down"] == ["False"]
    assert run("hand-update", "0.909").status == "pass"
    assert run("hand-update", "1.0986").status == "fail"


def test_backward_no_update(ok, run):
    # The subject is engine.train.train_step on the engine GPT in seed 001 Part 6's configuration
    # (block 8). Without the step the loss stays at the GPT's starting value, 1.227703 (CPU, seed 0;
    # the block-12 model this used to build started at 1.190284); with it, 20 updates reach 0.061102.
    r = ok("backward-no-update")
    assert r.clean is False and r.faulted is True
    for side in ("clean", "faulted"):
        assert facts(r, side, "backward() alone")["weights bit-identical afterwards"] == ["True"]
    flat = _series(r, "faulted", "loss before")
    assert len(flat) == 21 and max(flat) == min(flat) == pytest.approx(1.227703, abs=1e-6)
    falling = _series(r, "clean", "loss before")
    assert falling[0] == flat[0] and falling[-1] == pytest.approx(0.061102, abs=1e-5)
    assert facts(r, "faulted", "train_step")["max |change|"] == ["0"]
    assert run("backward-no-update", "yes").status == "pass"


def test_set_to_none(ok, run):
    r = ok("set-to-none")
    assert r.clean == "c" and r.faulted == "a"  # None and skipped / zeros and still moved by AdamW
    # The subject is train_step's reset; the tensor the loss stops reaching is the frozen
    # attention of seed 001's Part 6 GPT (it used to be an unused head of a snippet model).
    assert facts(r, "clean", "The frozen attention")["qkv.weight.grad is"] == ["None"]
    assert facts(r, "faulted", "The frozen attention")["qkv.weight.grad is"] == ["a zero tensor"]
    assert float(facts(r, "faulted", "The frozen attention")["max |change| in step 2"][0]) > 1e-3
    assert run("set-to-none", "a").status == "pass"


def test_ce_on_probs(ok, run):
    # Cross entropy on probabilities is not a proper scoring rule, now shown on the
    # engine's own loss line. An engine GPT with block_size 1 (a bigram in effect, floor 0.731409)
    # trained with the faulted loss: the true cross entropy falls to 1.009994 at step 34, then
    # rises to 1.783530 by step 200 (CPU, seed 0; the snippet bigram it replaced gave 0.903 at
    # step 18 and 1.843), while the honest loss falls throughout to 0.735944.
    # Graded: whether the true cross entropy ends more than 0.1 nats above its lowest point (the
    # faulted loss climbs 0.77 past it; the honest one ends at its lowest).
    r = ok("ce-on-probs")
    assert r.clean is False and r.faulted is True
    clean, faulted = _series(r, "clean", "GPT trained"), _series(r, "faulted", "GPT trained")
    assert clean[0] == faulted[0] == pytest.approx(2.138890, abs=1e-6)
    assert clean[-1] == pytest.approx(0.735944, abs=1e-6)
    floor = float(facts(r, "clean", "True cross entropy")["counting floor (a bigram's best)"][0])
    assert floor == pytest.approx(0.731409, abs=1e-6) and clean[-1] > floor  # approached from above
    # Honest: the lowest point is the last one; AdamW wobbles on the way (no rise above 0.006).
    assert min(range(201), key=clean.__getitem__) == 200
    assert max(b - a for a, b in zip(clean, clean[1:])) < 0.006
    assert min(range(201), key=faulted.__getitem__) == 34
    assert faulted[34] == pytest.approx(1.009994, abs=1e-5)
    assert faulted[-1] == pytest.approx(1.783530, abs=1e-5)
    assert facts(r, "faulted", "True cross entropy")["34 (lowest)"] == ["1.00999"]
    assert facts(r, "faulted", "True cross entropy")["last minus lowest (graded: more than 0.1?)"] == ["0.773536"]
    assert facts(r, "clean", "True cross entropy")["last minus lowest (graded: more than 0.1?)"] == ["0"]
    after_a = facts(r, "faulted", "After 200 steps")
    assert after_a["'t'"] == ["0.5000", "0.9711"]  # pushed toward the most common successor
    # ...but not all the way: the faulted loss's own optimum for 'a' (successors 't' 1/2, ' ' 1/3,
    # 'n' 1/6 of V = 8), minimised here independently over the simplex, keeps 0.029 on ' '. At the
    # corner p_t = 1, moving mass to ' ' changes the loss by -(1/3 - 1/2) + (1 - e) / (e + 7) < 0.
    f = torch.tensor([0.5, 1 / 3, 1 / 6, 0, 0, 0, 0, 0], dtype=torch.float64)
    z = torch.zeros(8, dtype=torch.float64, requires_grad=True)
    adam = torch.optim.Adam([z], lr=0.05)
    for _ in range(4000):
        adam.zero_grad()
        p = z.softmax(-1)
        (-(f * p).sum() + torch.logsumexp(p, -1)).backward()
        adam.step()
    optimum = z.softmax(-1).detach()
    assert optimum[0].item() == pytest.approx(0.971, abs=2e-3) and optimum[1].item() == pytest.approx(0.029, abs=2e-3)
    assert float(after_a["'t'"][1]) == pytest.approx(optimum[0].item(), abs=3e-3)
    assert "short of all of it (for 'a', about 0.971" in _notes(r, "faulted")
    assert facts(r, "clean", "After 200 steps")["'t'"] == ["0.5000", "0.4976"]  # near the counts
    assert facts(r, "faulted", "The GPT's reported loss")["equal (1e-9)"] == ["False"]
    assert "not cross entropy" in _notes(r, "faulted") and not _notes(r, "clean")
    assert run("ce-on-probs", "yes").status == "pass"


def test_microbatch_weighting(ok, run):
    # The subject is engine.train.accumulate_gradients on a small GPT (7 windows x 6
    # tokens, split 30 + 12 targets); every one of its 14,848 parameters is compared.
    r = ok("microbatch-weighting")
    assert r.clean is True and r.faulted is False
    assert facts(r, "clean", "Accumulated")["parameters compared"] == ["14,848"]
    assert float(facts(r, "clean", "Accumulated")["max |Δ gradient|"][0]) <= 1e-6
    assert float(facts(r, "faulted", "Accumulated")["max |Δ gradient|"][0]) > 1e-3
    assert facts(r, "clean", "Microbatches")["30 targets"] == ["0.7143", "0.7143"]
    assert facts(r, "faulted", "Microbatches")["12 targets"] == ["0.2857", "0.5000"]
    assert run("microbatch-weighting", "no").status == "pass"


def test_masked_mean(ok, run):
    r = ok("masked-mean")
    assert r.clean == 2.5 and r.faulted == 2.0
    # Both rules are computed from the losses and the mask, not written as 10/4 and (1+3)/2.
    assert facts(r, "clean", "Means")["every token weighs the same"] == ["2.5"]
    assert facts(r, "clean", "Means")["every sequence weighs the same"] == ["2"]
    nan_rows = facts(r, "clean", "A NaN")
    assert nan_rows["masked_mean"] == ["2.5"]
    assert nan_rows["0 * NaN"] == ["nan"] and nan_rows["(losses * mask).sum() / n"] == ["nan"]
    assert "all positions masked: ValueError" in _notes(r, "clean")
    assert run("masked-mean", "2").status == "pass"


def test_misaligned_targets(ok, catalog):
    r = ok("misaligned-targets")
    assert r.clean == "a" and r.faulted == "b"
    clean, faulted = facts(r, "clean", "After 200 steps"), facts(r, "faulted", "After 200 steps")
    floor = float(clean["bigram floor (one character of context)"][0])
    assert float(faulted["loss on get_batch's own targets"][0]) < 0.1 < floor
    assert float(faulted["loss on the real next token"][0]) > math.log(37)
    assert 0.5 < float(clean["loss on get_batch's own targets"][0]) < 3.0
    assert clean["check_alignment(x, y)"] == ["True"] and faulted["check_alignment(x, y)"] == ["False"]
    sample = facts(r, "faulted", "Greedy")["this run"][0]
    assert len(set(ast.literal_eval(sample)[4:])) == 1  # the copier repeats one character
    assert graded(catalog, r, "b")


def test_bigram_floor(ok, run):
    r = ok("bigram-floor")
    rows = facts(r, "clean", "Bigram on the toy text")
    assert rows["V, targets"] == ["8, 42"]
    assert _series(r, "clean", "training loss")[0] == pytest.approx(2.079442, abs=1e-6)
    assert float(rows["counting floor"][0]) == pytest.approx(0.731409, abs=1e-6)
    assert r.clean == pytest.approx(0.735081, abs=1e-4)
    assert float(rows["max row probability error"][0]) < 0.01  # seed: 0.005222
    assert r.faulted < 0.731409  # below the floor: the inputs leak the targets
    assert run("bigram-floor", "0.735").status == "pass"


def test_zero_lr(ok, run):
    r = ok("zero-lr")
    assert r.faulted == pytest.approx(math.log(8), abs=1e-9) == pytest.approx(2.079442, abs=1e-6)
    assert facts(r, "faulted", "Bigram, 200")["ln 8"] == ["2.07944"]  # V = 8, computed from the vocabulary
    assert r.clean == pytest.approx(0.735081, abs=1e-4)
    assert run("zero-lr", "2.0794").status == "pass"


def test_fit_vs_stress(ok, run):
    r = ok("fit-vs-stress")
    assert r.clean == "a" and r.faulted == "b"
    rows = facts(r, "clean", "Loss")
    assert [float(v) for v in rows["train 0 1 0 1 …"]] == pytest.approx([0.693147, 0.025389], abs=1e-5)
    assert [float(v) for v in rows["stress"]] == pytest.approx([0.693147, 3.686117], abs=1e-4)
    assert run("fit-vs-stress", "a").status == "pass"


def test_init_scale(ok, catalog):
    # The fault now leaves only the tied token table at N(0, 1), as in seed 004
    # (ratio 33.08, initial loss 119.463 on its batch); measured here 34.02 and 122.839.
    r = ok("init-scale")
    assert r.clean == "a" and r.faulted == "c"
    clean, faulted = facts(r, "clean", "Initial logits"), facts(r, "faulted", "Initial logits")
    assert float(clean["initial loss / ln V"][0]) == pytest.approx(1.00807, abs=1e-4)  # seed 004: 1.02
    assert float(faulted["initial loss / ln V"][0]) == pytest.approx(34.0188, abs=1e-3)  # seed 004: 33.08
    assert float(faulted["initial loss"][0]) == pytest.approx(122.839, abs=1e-2)  # seed 004: 119.463
    assert float(faulted["std of the token table"][0]) == pytest.approx(1.0, abs=0.02)
    assert float(faulted["std of the position table"][0]) == pytest.approx(0.02, abs=0.001)  # kept small
    assert "OBJECTIVE/initial loss" in _notes(r, "faulted")
    assert graded(catalog, r, "c")


def test_detached_residual(ok, catalog):
    r = ok("detached-residual")
    assert r.clean == "none" and r.faulted == "gradient"
    assert "GRADIENT/present" in _notes(r, "faulted")
    assert graded(catalog, r, "gradient")


def test_stale_optimizer(ok, catalog):
    r = ok("stale-optimizer")
    assert r.clean == "none" and r.faulted == "ownership"
    head = facts(r, "faulted", "The new lm_head.weight")
    assert head["in the optimizer"] == ["False"] and head["has a gradient"] == ["True"]
    assert head["moved during training"] == ["False"]
    assert graded(catalog, r, "ownership")


def test_lr_10x(ok, catalog):
    # Measured, not from a seed: 3e-3 passes every link; 3e-2 stalls near 2 nats -> CAPABILITY.
    r = ok("lr-10x")
    assert r.clean == "none" and r.faulted == "capability"
    assert _series(r, "clean", "CAPABILITY")[-1] < 0.1
    assert _series(r, "faulted", "CAPABILITY")[-1] > 0.5
    # The loss before any update is measured, and told apart from CAPABILITY's first
    # point, which comes after the UPDATE link's step (CPU, seed 0, one torch thread per side:
    # with two the reductions add in another order and the first loss reads 3.14726, as it does
    # with AVX-512's kernels, which the runner replaces with AVX2's: docs/determinism.md).
    clean, faulted = facts(r, "clean", "The run"), facts(r, "faulted", "The run")
    assert clean["loss before any update"] == faulted["loss before any update"] == ["3.62959"]
    assert clean["CAPABILITY's first loss (after UPDATE's step)"] == ["3.26089"]
    assert faulted["CAPABILITY's first loss (after UPDATE's step)"] == ["3.14727"]
    assert graded(catalog, r, "capability")


def test_eval_vs_no_grad(ok, run):
    r = ok("eval-vs-no-grad")
    assert r.clean == "a" and r.faulted == "d"
    switches = facts(r, "clean", "Each switch alone")
    assert switches["model.eval() only"] == ["False", "True"]  # dropout off, graph still recorded
    assert switches["torch.no_grad() only"] == ["True", "False"]  # dropout on, no graph
    assert run("eval-vs-no-grad", "d").status == "pass"


def test_overfit_batch(ok, catalog):
    r = ok("overfit-batch")
    assert r.clean < 0.05  # near zero (seed 004: 0.0029 after 400 steps at 4 layers)
    start = float(facts(r, "faulted", "One fixed batch")["start"][0])
    assert r.faulted == pytest.approx(start, abs=1e-5) and abs(r.faulted - math.log(37)) < 0.1
    # a range is the honest answer: the loss stays where the random init put it, near ln 37
    assert catalog.get("overfit-batch").kind.name == "range"
    assert graded(catalog, r, f"{start - 0.09:.3f} to {start + 0.09:.3f}")
    assert not graded(catalog, r, "0 to 0.2") and not graded(catalog, r, f"{start + 0.01:.3f} to {start + 0.2:.3f}")
    with pytest.raises(AnswerError, match="at most 0.2 wide"):
        graded(catalog, r, "3 to 4")  # so wide it predicts nothing


def test_sources_cite_the_sections_the_ideas_come_from(catalog):
    # The masked mean is 000 §7's example; the counting floor is 001's bigram section.
    assert catalog.get("masked-mean").source == "000 · 7. Masking chooses which examples count—and how much"
    assert catalog.get("bigram-floor").source == "001 · Learn the same probabilities that counting estimates"


# ---------------------------------------------------------------------------
# Seed gaps (CATALOG-3.md): measured on CPU, seed 0, unless a seed gives the number


def test_log_softmax_numerics(ok, run):
    r = ok("log-softmax-numerics")
    assert r.clean == [True, True, True] and r.faulted == [True, True, False]
    clean = facts(r, "clean", "Logits [100, 0, -100]")
    faulted = facts(r, "faulted", "Logits [100, 0, -100]")
    assert [clean[k][1] for k in ("0", "1", "2")] == ["0", "-100", "-200"]  # exact: z - logsumexp(z)
    assert faulted["1"][1] == "-99.9831" and faulted["2"][1] == "-inf"  # a subnormal, then log(0)
    assert run("log-softmax-numerics", "yes yes no").status == "pass"


def test_inference_mode(ok, run):
    r = ok("inference-mode")
    assert r.clean == "none" and r.faulted == "RuntimeError"
    outcome = facts(r, "faulted", "head(features)")["the features"][0]
    assert outcome.startswith("RuntimeError: Inference tensors cannot be saved for backward")
    assert facts(r, "faulted", "The features")["is_inference()"] == ["True"]
    assert facts(r, "faulted", "head(features)")["features.clone()"][0].startswith("ran")
    assert run("inference-mode", "RuntimeError").status == "pass"


def test_autocast_bf16(ok, run):
    # CPU, torch 2.13: Linear and matmul are cast down to bf16 from float32 inputs, cross_entropy is
    # cast up to float32 from a bf16 input, and softmax/log_softmax/layer_norm are on neither list:
    # they follow their input (the catalog's "softmax bf16" was true only because it was fed the
    # Linear's bf16 output; fed float32 logits, they stay float32).
    r = ok("autocast-bf16")
    assert r.clean == "b" and r.faulted == "c"
    ops = rows(r, "clean", "Under autocast")
    assert [row[:3] for row in ops] == [
        ["Linear", "float32", "bfloat16"], ["matmul", "float32", "bfloat16"],
        ["softmax", "bfloat16", "bfloat16"], ["softmax", "float32", "float32"],
        ["log_softmax", "bfloat16", "bfloat16"], ["log_softmax", "float32", "float32"],
        ["layer_norm", "bfloat16", "bfloat16"], ["layer_norm", "float32", "float32"],
        ["cross_entropy", "bfloat16", "float32"]]
    assert {row[0]: row[3] for row in ops if row[0] != "softmax" and row[0] != "log_softmax"
            and row[0] != "layer_norm"} == {"Linear": "cast down by autocast", "matmul": "cast down by autocast",
                                            "cross_entropy": "cast up by autocast"}
    assert {row[3] for row in ops[2:8]} == {"follows its input"}
    against = facts(r, "clean", "Against float32")
    assert float(against["relative"][0]) < float(against["bfloat16 epsilon (2^-7)"][0])  # within bf16 tolerance
    # the weights row reads the subject's own model: float32 under autocast, bfloat16 once the fault casts it
    assert fact(r, "clean", "The subject's forward")["weights (the subject's model)"] == "float32"
    assert fact(r, "faulted", "The subject's forward")["weights (the subject's model)"] == "bfloat16"
    assert run("autocast-bf16", "b").status == "pass"


def test_batch_mean_gradient(ok, run):
    # The subject is the engine GPT's loss line; B = 2, T = 4 gives N = 8 positions.
    r = ok("batch-mean-gradient")
    assert r.clean == 1 and r.faulted == 8  # N = 8
    clean, faulted = facts(r, "clean", "Position 0"), facts(r, "faulted", "Position 0")
    assert clean["the engine's loss"] == clean["(softmax - onehot) / N"]
    assert faulted["(softmax - onehot) / N"] == clean["(softmax - onehot) / N"]  # same logits either way
    step = {side: float(facts(r, side, "Facts")["SGD step length at lr 0.1, every parameter"][0])
            for side in ("clean", "faulted")}
    assert step["faulted"] == pytest.approx(8 * step["clean"], rel=1e-4)
    assert run("batch-mean-gradient", "8").status == "pass"


def test_validation_split(ok, run, catalog):
    # Seed 001, Part 4, reproduced to six decimals: train / validation after n updates.
    r = ok("validation-split")
    assert r.clean == pytest.approx(0.739163, abs=1e-6) and r.faulted == pytest.approx(0.735081, abs=1e-6)
    seed = {"0": ["2.079442", "2.079442"], "1": ["1.945874", "1.945888"], "10": ["1.125601", "1.128769"],
            "50": ["0.748651", "0.752532"], "200": ["0.735081", "0.739163"]}
    assert facts(r, "clean", "Loss after n updates") == seed
    assert facts(r, "faulted", "The validation pairs")["identical to the start of the training pairs"] == ["True"]
    assert run("validation-split", "0.739").status == "pass"
    # A reasoned "a little above the training loss, 0.74" passes (|0.74 - 0.739163| = 0.0008); the
    # tolerance used to be 5e-4 and refused it. The training loss itself, 0.735, does not pass
    # (0.0042 away), nor does "much worse, like the start", 2.08.
    assert graded(catalog, r, "0.74") and not graded(catalog, r, "0.735") and not graded(catalog, r, "2.08")


def test_train_step_gpt(ok, run):
    # Seed 001, Part 6's configuration: V = 3, C = 16, 1 layer, 2 heads, block 8, tied. By hand:
    # token table 3*16 = 48, positions 8*16 = 128, one block 2*32 (LayerNorms) + 16*48 (qkv) +
    # 16*16 (proj) + (16*64 + 64) + (64*16 + 16) (MLP) = 3,216, final LayerNorm 32: 3,424. The seed's
    # 3,488 is 64 more, a qkv bias (48) and a projection bias (16) the engine's attention lacks (this
    # check used to build block 12, whose 4 extra position rows, 64 values, matched 3,488 by accident).
    # The shared (3, 16) table counted twice gives 3,472. The seed's run fell 1.156632 -> 0.002131 in
    # 80 updates with its own init; the engine's gives 1.227703 -> 0.002317 (CPU, seed 0).
    r = ok("train-step-gpt")
    assert r.clean == 48 + 128 + (2 * 32 + 16 * 48 + 16 * 16 + 16 * 64 + 64 + 64 * 16 + 16) + 32 == 3424
    assert r.faulted == 3424 + 48
    assert r.clean + 3 * 16 + 16 == 3488  # the seed's count, with the attention biases
    run_ = facts(r, "clean", "80 updates")
    assert float(run_["loss before"][0]) == pytest.approx(1.227703, abs=1e-4)
    assert float(run_["loss after"][0]) < 0.01 < math.log(3)
    assert float(run_["max |change| of the qkv weight"][0]) > 0.1  # attention learned too
    assert facts(r, "clean", "Shapes")["logits"] == ["(2, 8, 3)"]
    assert run("train-step-gpt", "3472").status == "pass"
    assert run("train-step-gpt", "3488").status == "fail"  # the seed's figure is not what the engine builds


def test_pre_update_loss(ok, run):
    r = ok("pre-update-loss")
    assert r.clean is False and r.faulted is True
    faulted = facts(r, "faulted", "One train_step")
    assert faulted["returned by train_step"] == faulted["at the updated weights (evaluate)"] == ["3.20235"]
    assert faulted["at the starting weights (evaluate)"] == ["3.60648"]
    assert run("pre-update-loss", "yes").status == "pass"


def test_optimizer_in_loop(ok, run):
    # Graded: how many recorded losses the curves share before they part. The loss before any
    # update, and the one after a first step (a first step in both runs), agree; the third parts.
    r = ok("optimizer-in-loop")
    assert r.clean == 40 and r.faulted == 2
    assert facts(r, "faulted", "Facts")["losses shared before they part (graded)"] == ["2"]
    moved = facts(r, "faulted", "After 40 steps")["mean |Δw| between the last two forwards / lr"]
    assert float(moved[0]) == pytest.approx(1.0, abs=1e-3)  # every step a first step: about lr per weight
    assert float(moved[1]) < 0.2  # built once: the steps have shrunk
    assert run("optimizer-in-loop", "2").status == "pass"
    assert run("optimizer-in-loop", "1").status == "fail"  # the first update is a first step in both runs


def test_decay_split(ok, run):
    r = ok("decay-split")
    assert r.clean is False and r.faulted is True
    expected = 0.999 ** 100  # (1 - lr * wd)^100 = 0.904792...
    clean, faulted = facts(r, "clean", "100 steps"), facts(r, "faulted", "100 steps")
    assert float(clean["LayerNorm gains (mean)"][2]) == 1.0
    assert float(faulted["LayerNorm gains (mean)"][2]) == pytest.approx(expected, abs=1e-5)
    assert float(clean["matrices (norm)"][2]) == pytest.approx(expected, abs=1e-5)
    assert run("decay-split", "yes").status == "pass"


def test_clip_order(ok, run):
    # The gradient (3, 4) has norm 5: clipped to 1 before the step, read whole after it.
    r = ok("clip-order")
    assert r.clean == pytest.approx(1.0, abs=1e-4) and r.faulted == pytest.approx(5.0, abs=1e-9)
    gpt = facts(r, "clean", "One train_step")["small engine GPT"]
    assert gpt[1] == gpt[2] == "0.5"  # the engine GPT's norm read and update, clipped to max_norm
    assert float(facts(r, "faulted", "One train_step")["small engine GPT"][1]) > 0.5
    assert run("clip-order", "5").status == "pass"


def test_schedule_order(ok, run):
    # CATALOG-3: [.25, .5, .75, 1, 1] in order; [.5, .75, 1, 1, 1] with the scheduler stepped first.
    r = ok("schedule-order")
    assert r.clean == [0.25, 0.5, 0.75, 1.0, 1.0] and r.faulted == [0.5, 0.75, 1.0, 1.0, 1.0]
    assert "Detected call of `lr_scheduler.step()` before `optimizer.step()`" in _notes(r, "faulted")
    assert "no scheduler warning" in _notes(r, "clean")
    assert run("schedule-order", "0.5 0.75 1 1 1").status == "pass"


def test_checkpoint_resume(ok, run):
    r = ok("checkpoint-resume")
    assert r.clean is True and r.faulted is False
    assert facts(r, "clean", "The checkpoint")["tensors with optimizer state after loading"] == ["24 of 24"]
    assert facts(r, "faulted", "The checkpoint")["tensors with optimizer state after loading"] == ["0 of 24"]
    updates = facts(r, "faulted", "Each update")
    assert updates["4"][1] == updates["4"][2] and updates["5"][1] != updates["5"][2]
    assert "The losses part from update 5 on" in _notes(r, "faulted")
    # The rate of every update: warm-up of 3 steps from lr 3e-3 gives 0.001, 0.002, 0.003, then 0.003.
    # Resumed with both states, updates 4-7 run at 0.003. Weights only: the fresh optimizer sits at
    # lr * λ(0) = 0.001 for update 4 (loading the schedule's counter does not rewrite the rate), and
    # the next scheduler.step() sets 0.003. (The old evidence read "lr after loading 0.003" after the
    # four resumed updates had run, which hid the 0.001.)
    straight = ["0.001 / 0.001", "0.002 / 0.002", "0.003 / 0.003", "0.003 / 0.003"]
    assert [facts(r, "clean", "Each update")[str(k)][0] for k in range(8)] == straight + ["0.003 / 0.003"] * 4
    assert [updates[str(k)][0] for k in range(8)] == straight + [
        "0.003 / 0.001", "0.003 / 0.003", "0.003 / 0.003", "0.003 / 0.003"]
    assert facts(r, "faulted", "The checkpoint")["lr of the resumed updates 4-7"] == ["0.001, 0.003, 0.003, 0.003"]
    assert facts(r, "clean", "The checkpoint")["lr of the resumed updates 4-7"] == ["0.003, 0.003, 0.003, 0.003"]
    assert facts(r, "faulted", "The checkpoint")["lr just after loading (before update 4)"] == ["0.001"]
    assert run("checkpoint-resume", "no").status == "pass"
