"""Parameter accounting, the performance ledger, the run record and seed variation."""

import pytest
import tomli_w
import torch

from engine.config import GPTConfig
from engine.instruments.param_accounting import agree, build_meta, count_by_group, crossover_vocab, formula
from engine.instruments.performance import PHASES, dominant, isolated, phase_ledger
from engine.instruments.run_record import config_hash, train_run
from engine.instruments.seed_variation import paired, summarize, verdict
from engine.model import GPT

GPT2 = dict(vocab_size=50257, block_size=1024, n_layer=12, n_head=12, n_embd=768)


@pytest.mark.parametrize("tie, total", [(True, 804_224), (False, 808_960)])
def test_seed_configuration_formula_and_model_agree(tie, total):
    config = GPTConfig(tie_weights=tie)
    result = agree(config, GPT(config))
    assert result["agree"] and result["counted"]["total"] == total == result["formula"]["total"]
    groups = result["counted"]["groups"]
    assert (groups["mlp"], groups["attention"], groups["embeddings"], groups["layernorm"]) == \
        (526_848, 262_144, 12_928, 2_304)
    assert groups["lm_head"] == (0 if tie else 4_736)
    assert result["counted"]["tied"] == ([("lm_head.weight", "wte.weight")] if tie else [])


def test_gpt2_scale_on_meta():
    model = build_meta(GPTConfig(**GPT2))
    assert model.wte.weight.device.type == "meta"
    result = agree(GPTConfig(**GPT2), model)
    assert result["agree"]
    g = result["counted"]["groups"]
    assert g["embeddings"] == 39_383_808 and g["attention"] == 28_311_552
    # The engine's MLP has biases (12 x 5C = 46,080 more than the seed's 56,623,104).
    assert g["mlp"] == 56_669_184 and result["counted"]["total"] == 124_402_944
    # Without MLP biases the engine reproduces the seed's table exactly.
    assert agree(GPTConfig(**GPT2, bias=False))["counted"]["total"] == 124_356_864
    untied = formula(50257, 1024, 12, 768, tie_weights=False)
    assert untied["groups"]["lm_head"] == 38_597_376 and untied["total"] == 163_000_320


def test_crossover_vocab_matches_the_model():
    V = crossover_vocab(128)
    block = count_by_group(build_meta(GPTConfig()).blocks[0])["total"]
    assert V == 1546 and block == 12 * 128 ** 2 + 9 * 128
    assert (V - 1) * 128 <= block < V * 128


def test_phase_ledger_reports_every_phase():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, n_embd=32, block_size=16))
    opt = torch.optim.AdamW(model.parameters())
    x = torch.randint(0, 37, (2, 16))
    ledger = phase_ledger(model, opt, x, x, repeats=3, warmup=1)
    assert set(ledger["phases"]) == set(PHASES) and all(v > 0 for v in ledger["phases"].values())
    assert ledger["peak_kind"] == "process peak RSS" and ledger["peak_bytes"] > 0
    assert ledger["tokens_per_s"] == pytest.approx(32 / (ledger["step_ms"] / 1e3))
    assert dominant({"forward": 1.0, "loss": 0.1, "backward": 2.0, "optimizer": 0.5}) == ("backward", 2.0, True)
    assert dominant({"forward": 1.9, "loss": 0.1, "backward": 2.0, "optimizer": 0.5})[2] is False


def test_isolated_runs_in_a_child_and_reports_errors():
    import os
    assert isolated(os.getpid) != os.getpid()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        isolated(lambda: 1 / 0)


def test_run_record_is_toml_and_reproducible():
    config = GPTConfig(vocab_size=37, block_size=16, n_layer=1, n_head=2, n_embd=16)
    a = train_run(config, seed=3, steps=5, batch_size=4, n_chars=5_000)
    b = train_run(config, seed=3, steps=5, batch_size=4, n_chars=5_000)
    assert a["final_val_loss"] == b["final_val_loss"] and a["config_hash"] == config_hash(config)
    assert a["tokenizer"]["vocab_size"] <= 37 and a["params"] == GPT(config).num_params()
    # by hand: wte 592 + wpe 256 + one block 3,216 + ln_f 32
    assert a["params"] == 4_096
    text = tomli_w.dumps(a)
    for key in ("config_hash", "seed", "torch", "device", "final_train_loss", "final_val_loss", "peak_bytes",
                "wall_s"):
        assert f"{key} = " in text


def test_verdict_rule():
    # The 95 % t interval of the mean delta must exclude zero (not a min/max rule over the seeds).
    assert verdict([-0.10, -0.098, -0.072])[0] == "resolved"          # -0.090 ± 0.039
    assert verdict([-0.0005, 0.0002, -0.0027, -0.0003])[0] == "not resolved"  # the seed's tying sweep
    assert verdict([-0.2, -0.5, -0.07])[0] == "not resolved"           # same sign, but -0.257 ± 0.548
    assert verdict([-0.01, -0.5, -0.03, -0.02])[0] == "not resolved"   # one large seed cannot decide it
    assert verdict([-0.1])[0] == "not resolved"
    s = summarize([0.3487, 0.3475, 0.3505, 0.3459, 0.3484, 0.3476])    # the seed's baseline, train loss
    assert s["median"] == pytest.approx(0.3480) and s["spread"] == pytest.approx(0.0046)


def test_paired_uses_the_same_seeds():
    seen = []

    def run(tag):
        def f(seed):
            seen.append((tag, seed))
            return {"final_val_loss": seed + (0.5 if tag == "b" else 0.0)}
        return f

    result = paired(run("a"), run("b"), [1, 2, 3])
    assert result["paired"] and result["deltas"] == [0.5, 0.5, 0.5] and result["verdict"] == "resolved"
    assert [s for t, s in seen if t == "a"] == [s for t, s in seen if t == "b"]
    assert not paired(run("a"), run("b"), [1, 2], seeds_b=[7, 8])["paired"]
