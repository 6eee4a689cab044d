"""Set ``comparison`` (seed 004): parameter accounting, phase ledger, sweeps, paired seeds.

Timing exercises are graded on a property with a margin (a phase that
dominates by 1.25x; growths within 1.5x), never on a time.
"""


def test_param_accounting(run):
    r = run("param-accounting")
    assert r.status == "ok", r.error
    # 12C² + 9C = 197,760 at C = 128: the token table passes it at V = 1,546.
    # With biases on the attention projections the block gains 4C: V = 1,550.
    assert r.clean == 1546 and r.faulted == 1550
    seed_rows = r.evidence["clean"][0]["rows"]
    assert seed_rows[0][:3] == ["tied", "804,224", "804,224"]
    assert seed_rows[1][:3] == ["untied", "808,960", "808,960"]
    big = {row[0]: row[1:] for row in r.evidence["clean"][1]["rows"]}
    assert big["mlp"] == ["56,669,184", "56,669,184"]
    assert big["total (tied)"] == ["124,402,944", "124,402,944"]
    assert any("disagree" in e.get("text", "") for e in r.evidence["faulted"])
    assert run("param-accounting", "1546").status == "pass"


def test_phase_ledger(run):
    r = run("phase-ledger")
    assert r.status == "ok", r.error
    assert r.clean == "c"      # backward, about 1.7x the forward on the seed's model
    assert r.faulted == "d"    # optimizer, with 8 tokens against 6.4M parameters


def test_seq_sweep(run):
    r = run("seq-sweep")
    assert r.status == "ok", r.error
    assert r.clean == "b"      # the fused SDPA kernel: memory follows B x T
    assert r.faulted == "c"    # explicit (B, H, T, T) scores: sequence length wins


def test_seed_variation(run):
    r = run("seed-variation")
    assert r.status == "ok", r.error
    assert r.clean == "a"      # paired: untied lower at every seed, by more than the spread (60 steps)
    assert r.faulted == "c"    # unpaired: seed noise swamps the same effect
    record = {row[0]: row[1] for row in r.evidence["clean"][0]["rows"]}
    assert record["peak_kind"] == "process peak RSS" and record["device"] == "cpu"
