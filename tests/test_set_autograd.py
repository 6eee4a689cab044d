"""Set ``autograd``: every check observes the known value on both sides
(CATALOG.md; seed 000 §5), through the real worker."""

from helpers import facts


def test_gradcheck_passes_3x2_and_fails_2x2(run):
    r = run("wrong-backward", "no")
    assert r.status == "pass", r.error
    assert r.clean is True and r.faulted is False
    # the faulted rule is off by exactly x^2: 0.25, 1.44, 4 at x = 0.5, -1.2, 2
    gaps = [float(row[-1]) for row in facts(r, "faulted", "Derivative").values()]
    assert gaps == [0.25, 1.44, 4.0]
    assert run("wrong-backward", "yes").status == "fail"


def test_matmul_grad_hand_formulas_match_autograd_until_a_transpose_moves(run):
    r = run("matmul-grad", "no")
    assert r.status == "pass", r.error
    assert r.clean is True and r.faulted is False
    rows = facts(r, "faulted", "Hand formula")
    assert rows["A in A@B"][-1] == "True" and rows["B in A@B"][-1] == "True"
    assert rows["B in A@B@C"] == ["(3, 3)", rows["B in A@B@C"][1], "False"]
    assert float(rows["B in A@B@C"][1]) > 1e-3  # the wrong formula misses by far more than rounding


def test_broadcast_grad_summed_over_the_batch_only_keeps_a_row_per_position(run):
    r = run("broadcast-grad", "(5, 4)")
    assert r.status == "pass", r.error
    assert r.clean == [4] and r.faulted == [5, 4]
    shapes = facts(r, "clean", "Operands")
    assert shapes["bias"] == ["(4,)", "(4,)", "(4,)"]
    assert shapes["weight"] == ["(4, 3)", "(4, 3)", "(4, 3)"]
    assert facts(r, "faulted", "Operands")["bias"] == ["(4,)", "(4,)", "(5, 4)"]  # autograd keeps the operand's shape
    assert run("broadcast-grad", "(4,)").status == "fail"  # the clean shape is not the graded one


def test_prefix_grad_without_the_direct_term_differs(run):
    r = run("prefix-grad", "no")
    assert r.status == "pass", r.error
    assert r.clean is True and r.faulted is False
    rows = facts(r, "faulted", "dL/dx")
    hand_last, auto_last = rows["5"][1:]
    assert hand_last == auto_last          # nothing after the last prefix
    assert rows["0"][1] != rows["0"][2]
