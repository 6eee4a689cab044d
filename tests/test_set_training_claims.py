"""Set ``training``: seed 001's claims about its own evidence, through the real
worker. Each right value is worked out by hand (or from the seed's numbers)
apart from the code that measures it."""

import math
from collections import Counter

import pytest

from helpers import fact

TEXT = "a cat sat. a cat ran. a rat ran. a rat sat."  # seed 001's toy text


def _pairs() -> list[tuple[str, str]]:
    return list(zip(TEXT[:-1], TEXT[1:]))  # 42 (current, next) pairs


def _conditional_floor() -> float:
    """-mean ln P(next | current) over the pairs, from counts in plain Python."""
    pairs = _pairs()
    starts = Counter(a for a, _ in pairs)
    counts = Counter(pairs)
    return -sum(c * math.log(c / starts[a]) for (a, _), c in counts.items()) / len(pairs)


def test_the_hand_floor_is_the_seeds():
    assert len(_pairs()) == 42 and len(set(TEXT)) == 8
    assert _conditional_floor() == pytest.approx(0.731409, abs=5e-7)  # seed 001, Part 3


def test_update_snapshot_without_a_copy_sees_nothing_move(run):
    r = run("update-snapshot", "0, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # Part 6's GPT by hand: wte (tied with the head), wpe, ln_1 and ln_2 (weight, bias), qkv and
    # proj (no biases), the MLP's fc and proj (weight, bias), ln_f (weight, bias): 14 tensors.
    assert r.clean == [14, True] and r.faulted == [0, True]
    for side in ("clean", "faulted"):  # the weights really moved on both sides
        assert fact(r, side, "The first optimizer step")["the check's own detach().clone() copies"] == "14/14"


def test_reset_per_microbatch_keeps_only_the_last_share(run):
    r = run("reset-per-microbatch", "0, 0.29")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # 30 and 12 of 42 targets: the full mean weights them 30/42 and 12/42; a reset before the
    # second backward wipes the first, leaving 0 and 12/42.
    assert r.clean == [round(30 / 42, 4), round(12 / 42, 4)]
    assert r.faulted == [0.0, round(12 / 42, 4)]
    assert float(fact(r, "clean", "Accumulated against full batch")["max |Δ gradient| to the full batch"]) < 1e-12


def test_part6_fits_without_attention(run):
    r = run("part6-without-attention", "0.00")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # Seed 001: 1.156632 -> 0.002131 in 80 updates on its GPT; both routes end below 0.01 here.
    assert r.clean < 0.01 and r.faulted < 0.01
    assert r.clean == pytest.approx(0.002317, abs=2e-6)  # CPU, seed 0
    clean, faulted = (fact(r, side, "80 updates") for side in ("clean", "faulted"))
    assert float(clean["max |change| of the qkv weight"]) > 0.01
    # Without the sub-layer ln_1 (weight, bias), qkv and proj get no gradient: 10 of the 14 tensors do.
    assert faulted["parameter tensors with a gradient"] == "10/14"
    assert float(faulted["max |change| of the qkv weight"]) == 0.0
    assert fact(r, "clean", "What the targets depend on")["next token fixed by the current one"] == "True"


def test_adamw_first_step_is_lr_not_the_sgd_step(run):
    r = run("adamw-first-step", "0.3")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # One AdamW step from empty state: m_hat = g, v_hat = g^2, so the target moves by
    # lr * |g| / (|g| + eps) with g = -2/3, lr = 0.3, eps = 1e-8.
    g = 2 / 3
    assert r.clean == pytest.approx(0.3 * g / (g + 1e-8), abs=1e-9)
    assert r.faulted == pytest.approx(0.2, abs=1e-9)  # SGD: 0 - 0.3 * (-2/3), seed 001


@pytest.mark.parametrize("exercise_id, faulted", [("floor-every-cell", "d"), ("floor-joint-frequencies", "c")])
def test_counting_floor_faults(run, exercise_id, faulted):
    r = run(exercise_id, faulted)
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "a" and r.faulted == faulted
    facts = fact(r, "clean", "Floors and losses")
    assert float(facts["the subject's floor"]) == pytest.approx(_conditional_floor(), abs=1e-6)
    assert float(facts["trained bigram, 200 steps"]) == pytest.approx(0.735081, abs=1e-6)  # seed 001


def test_joint_floor_is_the_pair_entropy(run):
    r = run("floor-joint-frequencies", "c")
    pairs = _pairs()
    # Normalised by all 42 pairs the table holds P(current, next); its loss is the pair entropy,
    # the conditional floor plus the entropy of the current character.
    joint = -sum(c / 42 * math.log(c / 42) for c in Counter(pairs).values())
    first = -sum(c / 42 * math.log(c / 42) for c in Counter(a for a, _ in pairs).values())
    assert joint == pytest.approx(_conditional_floor() + first, abs=1e-12)
    assert float(fact(r, "faulted", "Floors and losses")["the subject's floor"]) == pytest.approx(joint, abs=5e-5)  # shown to 5 digits
    assert joint > math.log(8)


def test_backward_through_a_used_graph_raises(run):
    r = run("backward-same-graph", "RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "RuntimeError"
    outcome = fact(r, "faulted", "Two backward passes")["the subject's two_gradients"]
    assert "backward through the graph a second time" in outcome


def test_finite_difference_needs_float64(run):
    r = run("finite-difference-float32", "no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is True and r.faulted is False
    estimate = float(fact(r, "faulted", "The subject's estimate")["estimate"])
    # Two float32 losses in [1, 2) differ by a whole number of 2^-23 steps; 2 * eps * 2/3 = 1.33e-6
    # is 11.2 steps, so the estimate is -11 * 2^-23 / 2e-6 = -0.65565 (seed 001: -0.666667).
    assert estimate == pytest.approx(-11 * 2**-23 / 2e-6, abs=1e-6)
    assert float(fact(r, "clean", "The subject's estimate")["estimate"]) == pytest.approx(-2 / 3, abs=1e-8)


def _sgd(z: list[float], target: int, lr: float = 0.3) -> list[float]:
    """One SGD step on the cross entropy of logits z, by hand: z - lr * (softmax(z) - onehot)."""
    exps = [math.exp(v) for v in z]
    p = [e / sum(exps) for e in exps]
    return [v - lr * (pi - (i == target)) for i, (v, pi) in enumerate(zip(z, p))]


def _ce(z: list[float], target: int) -> float:
    return math.log(sum(math.exp(v) for v in z)) - z[target]


def test_loss_falls_before_the_argmax_moves(run):
    r = run("loss-before-accuracy", "no, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [False, True] and r.faulted == [False, False]
    after = _sgd([1.0, 0.0, 0.0], 1)
    assert max(range(3), key=after.__getitem__) == 0  # candidate 0 still leads
    facts = fact(r, "clean", "Two ways to score it")
    assert facts["loss before -> after"] == f"{_ce([1.0, 0.0, 0.0], 1):.6f} -> {_ce(after, 1):.6f}"
    z, step = after, 1
    while max(range(3), key=z.__getitem__) != 1:
        z, step = _sgd(z, 1), step + 1
    assert facts["first update after which the target leads"] == str(step) == "3"
