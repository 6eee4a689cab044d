"""Seed 004's claims that were only evidence before, now exercises (CPU, seed 0).

Each test says how its values follow by hand: which tensor a probe without
its copy writes into, which characters the corpus has beyond its first 2,000,
which config fields a sizes-only hash reads, what greedy decoding in eval mode
draws from the global generator, which objects an optimizer got before a tie,
and how many widths a batch padded to its longest prompt takes.
"""

from collections import Counter

from helpers import fact, graded, rows

from engine.corpus import make_corpus


def test_a_probe_without_its_copy_changes_nothing_and_overwrites_the_batch(run, catalog):
    r = run("probe-changes-nothing", "yes, no, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # The reading-ahead model's position 7 reads token 8, so a real probe moves its past; one that
    # writes into the batch runs both passes on the same ids: every delta 0, and the batch is changed.
    assert r.clean == [False, True, True] and r.faulted == [True, False, False]
    clean = {row[0]: row[1:] for row in rows(r, "clean", "Tokens after position 7")}
    faulted = {row[0]: row[1:] for row in rows(r, "faulted", "Tokens after position 7")}
    assert clean["engine GPT"][0] == "0" and float(clean["engine GPT"][1]) > 0.1
    assert clean["engine GPT"][2] == "True" and clean["reads one token ahead"][2] == "False"
    assert float(clean["reads one token ahead"][0]) > 0.1
    assert all(faulted[m][:2] == ["0", "0"] and faulted[m][2] == "False" for m in faulted)
    assert not graded(catalog, r, "yes, yes, yes")


def test_a_forgiving_tokenizer_passes_the_range_check_and_fails_the_round_trip(run, catalog):
    r = run("silent-unknown", "c")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "a" and r.faulted == "c"
    text = make_corpus(seed=0)
    missing = sorted(set(text) - set(text[:2000]))
    assert missing == ["B"]  # the corpus at seed 0: no sentence of the first 2,000 characters starts with B
    lost = sum(Counter(text)[c] for c in missing)
    evidence = fact(r, "faulted", "A tokenizer fit on")
    assert evidence["V (its vocabulary)"] == "36" and evidence["corpus characters it lacks"] == "B"
    assert evidence["positions that came back different"] == f"{lost:,}" == "89"
    assert evidence["every id in [0, V)"] == "True" and evidence["decode(encode(corpus)) == corpus"] == "False"
    assert f"first, at {text.index('B'):,}" in evidence
    assert "KeyError" in fact(r, "clean", "A tokenizer fit on")["encode(corpus)"]


def test_a_sizes_only_hash_puts_tied_and_untied_under_one_hash(run, catalog):
    r = run("record-hash", "no, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [False, True]
    # tied: 104,000 parameters (run_record.SMALL_RUN); untied adds one (V, C) = 37 x 64 head
    params = [row[3] for row in rows(r, "faulted", "Run records")]
    assert params == ["104,000", "104,000", f"{104_000 + 37 * 64:,}"]
    hashes = {side: [row[2] for row in rows(r, side, "Run records")] for side in ("clean", "faulted")}
    assert len(set(hashes["faulted"])) == 1 and len(set(hashes["clean"])) == 2
    assert not graded(catalog, r, "yes, yes")


def test_a_sample_that_leaves_eval_mode_on_turns_dropout_off_from_step_eleven(run, catalog):
    r = run("sample-during-training", "no, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [False, False]
    # greedy decoding in eval mode draws nothing, so the runs agree until the first step after a
    # sample that left dropout off: step 11
    notes = {side: [e["text"] for e in r.evidence[side] if e["type"] == "note"] for side in ("clean", "faulted")}
    assert notes["faulted"] == ["first step whose loss differs: 11"]
    assert notes["clean"] == ["first step whose loss differs: none"]
    losses = {row[0]: row[1:] for row in rows(r, "faulted", "Training loss")}
    assert losses["10"][0] == losses["10"][1] and losses["11"][0] != losses["11"][1]


def test_tying_after_the_optimizer_leaves_it_a_dead_head_and_changes_no_step(run, catalog):
    r = run("tie-after-optimizer", "yes, yes, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [False, True, True] and r.faulted == [True, True, True]
    own = {row[0]: row[1:] for row in rows(r, "faulted", "Ownership")}
    # small engine tied: 104,000 values in 24 tensors; the optimizer also keeps the old (37, 64) head
    assert own["model.parameters() (unique)"] == ["24", "104,000"]
    assert own["in the optimizer"] == ["25", f"{104_000 + 37 * 64:,}"]
    assert own["in the optimizer, not in the model"] == ["1", "2,368"]
    assert own["in the model, not in the optimizer"] == ["0", "0"]
    dropped = fact(r, "faulted", "The head the tie dropped")
    assert dropped == {"still in the optimizer": "True", "grad after training": "None", "moved": "False"}
    assert not graded(catalog, r, "yes, no, no")


def test_a_static_compile_traces_once_per_width_and_once_with_a_bucket(run, catalog):
    r = run("compile-padded-lengths", "yes, yes, yes, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # widths 5, 6, 7, 8 with the fault (the longest prompt), 8 for all four with the bucket of 8
    assert r.clean == [True, False, False, False] and r.faulted == [True, True, True, True]
    widths = {side: [row[1] for row in rows(r, side, "dynamic=False")] for side in ("clean", "faulted")}
    assert widths["clean"] == ["8"] * 4 and widths["faulted"] == ["5", "6", "7", "8"]
    traced = [int(row[1]) for row in rows(r, "faulted", "Unbucketed widths")]
    assert traced[0] > 0 and traced[1:] == [0, 0, 0]  # dynamic=True: T is a symbol, traced once
    same = fact(r, "clean", "Same answers")
    assert float(same["max |Δ last logits|, compiled vs eager"]) == 0.0
    assert float(same["max |Δ last logits|, batch of width T vs each prompt alone"]) < 1e-5
    assert not graded(catalog, r, "yes, no, no, no")
