"""Set ``training``: a run's state beyond its weights (seed 001 Parts 3 and 4,
"In the real world"; seed 000 §3), through the real worker, pinned by hand."""

from helpers import fact, facts, graded


def test_coupled_decay_moves_an_idle_weight_by_a_whole_lr(run, catalog):
    r = run("adam-coupled-decay", "1")
    assert r.status == "pass", (r.status, r.error, r.observed)
    clean, faulted = fact(r, "clean", "Position rows 8-31"), fact(r, "faulted", "Position rows 8-31")
    assert clean["optimizer"] == "AdamW" and faulted["optimizer"] == "Adam"
    assert clean["max |gradient|"] == faulted["max |gradient|"] == "0"
    # AdamW: |Δw| = lr · λ · |w|, so max |Δw| / lr = 0.1 · max |w|; Adam's first step on g = λw: lr · sign(w)
    assert abs(r.clean - 0.1 * float(clean["max |w| before"])) < 1e-4
    assert abs(r.faulted - 1.0) < 1e-3
    assert not graded(catalog, r, "0.0066")


def test_a_rebuilt_optimizer_forgets_the_heads_ten_steps(run, catalog):
    r = run("unfreeze-rebuilds-optimizer", "1")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 11 and r.faulted == 1  # 10 updates + 1 kept, or one first step of a fresh AdamW
    assert fact(r, "clean", "The head's weight")["parameter groups"] == "2"
    assert fact(r, "faulted", "The head's weight")["parameter groups"] == "1"
    # a first step moves every weight by about lr; the continued one by less
    assert float(fact(r, "faulted", "The head's weight")["mean |Δw| of update 11 / lr"]) > 0.9
    assert not graded(catalog, r, "11")


def test_a_resume_without_the_random_state_matters_only_with_dropout(run, catalog):
    r = run("resume-random-state", "yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [True, False]
    for side in ("clean", "faulted"):
        table = facts(r, side, "Resumed against straight")
        assert table["0"][1] == table["0.1"][1] == "True"  # the sampler's state was saved both times
        starts = fact(r, side, "Batch starts")
        assert starts["straight"] == starts["resumed"] != starts["a fresh sampler (no data position)"]
    assert facts(r, "clean", "Resumed against straight")["0.1"][0] == "0"
    assert float(facts(r, "faulted", "Resumed against straight")["0.1"][0]) > 1e-4


def test_an_evaluate_that_zeroes_gradients_leaves_half_a_batch(run, catalog):
    r = run("evaluate-zero-grad", "no, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, False] and r.faulted == [False, True]
    clean, faulted = fact(r, "clean", "The gradient around"), fact(r, "faulted", "The gradient around")
    assert clean["|grad| after evaluate()"] == clean["|grad| after microbatch 1"]
    assert float(faulted["|grad| after evaluate()"]) == 0.0
    assert faulted["|grad| after microbatch 2"] == faulted["|microbatch 2's half alone|"]


def test_copying_token_t_needs_no_attention(run, catalog):
    r = run("copy-needs-no-attention", "yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [True, False]
    # with one layer and no attention, nothing but token t itself reaches position t
    assert float(fact(r, "faulted", "Trained on y = x")["max |Δ last logits| over earlier tokens changed"]) == 0.0
    for side in ("clean", "faulted"):
        assert float(fact(r, side, "Trained on y = x")["loss after 60 updates"]) < 0.1
    assert not graded(catalog, r, "no, no")
