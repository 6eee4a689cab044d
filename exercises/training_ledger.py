"""Checks for the set ``training``, part 3: the learning ledger on the engine, modes,
and the end-to-end proof (seed 004, "Training: prove it is happening"; seed 001).

Each ledger check trains an engine GPT from ``ctx.gpt`` on a fixed batch of
the corpus and reports the first link of the learning chain that fails.
"""

import math

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, series, table
from exercises.training_common import corpus, fixed_batch

LEDGER_BATCH = (4, 32)  # B, T of the fixed batch the learning ledger checks
LEDGER_STEPS = 150  # CAPABILITY's step budget
LEDGER_BELOW = 0.1  # CAPABILITY's threshold, nats per token


def _ledger_table(ledger, title: str) -> dict:
    first = ledger.first_divergence
    rows = []
    for r in ledger.rows:
        mark = "ok" if r.ok else ("X <- first" if f"{r.link}/{r.check}" == first else "X")
        rows.append([r.link, r.check, r.value, mark])
    return table(title, ["link", "check", "value", "ok"], rows)


def _run_ledger(ctx: Context, model, optimizer, x, y, overfit_steps: int = LEDGER_STEPS):
    from engine.instruments.learning_ledger import learning_ledger

    def on_step(step: int, total: int) -> None:
        if step % 10 == 0:
            ctx.progress(0.1 + 0.9 * step / total, f"overfitting the batch: step {step}/{total}")

    ctx.progress(0.05, "learning ledger: TASK to UPDATE")
    return learning_ledger(model, optimizer, x, y, overfit_steps=overfit_steps,
                           overfit_below=LEDGER_BELOW, on_step=on_step)


def _ledger_measurement(ledger, title: str, extra: list | None = None) -> Measurement:
    """Observed: the first failing link in lower case, or "none"."""
    link = ledger.first_failing_link
    evidence = [_ledger_table(ledger, title)]
    if ledger.curve:
        evidence.append(series("CAPABILITY: loss on the fixed batch, one point per step", ledger.curve, "nats"))
    evidence += extra or []
    evidence.append(note(f"first divergence: {ledger.first_divergence or 'none'}"))
    return Measurement(observed=link.lower() if link else "none", evidence=evidence)


def init_scale(ctx: Context) -> Measurement:
    """Initial loss ÷ ln V of the seed-sized engine, and the learning ledger.

    GPT 4 layers, 4 heads, C = 128, block 64, V = 37 (tied), one batch 8 x 32
    from the corpus, AdamW lr 1e-3; the ledger runs TASK to UPDATE (no
    CAPABILITY). Observed choice by the ratio: a < 1.5, b 1.5-5, c 5-100,
    d > 100 (seed 004: 1.02 with the small init, 33.08 and an initial loss of
    119.463 when only the tied token table keeps N(0, 1); measured here on
    CPU, seed 0: 1.008 and 34.02, initial loss 122.839).
    """
    data, tokenizer = corpus(ctx)
    model = ctx.gpt("seed", vocab_size=tokenizer.vocab_size)
    x, y = fixed_batch(ctx, data, 8, 32)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with torch.no_grad():
        logits, loss = model(x, y)
    ratio = loss.item() / math.log(tokenizer.vocab_size)
    ledger = _run_ledger(ctx, model, optimizer, x, y, overfit_steps=0)
    observed = "a" if ratio < 1.5 else "b" if ratio < 5 else "c" if ratio < 100 else "d"
    extra = [table("Initial logits", ["quantity", "value"], [
        ["initial loss", loss.item()], ["initial loss / ln V", ratio],
        ["std of the token table", model.wte.weight.std().item()],
        ["std of the position table", model.wpe.weight.std().item()],
        ["std of the logits", logits.std().item()], ["largest |logit|", logits.abs().max().item()]])]
    measurement = _ledger_measurement(ledger, "Learning ledger, 4L/4H/128, batch (8, 32)", extra)
    measurement.observed = observed
    return measurement


def detached_residual(ctx: Context) -> Measurement:
    """The learning ledger on the small engine GPT with a caller-built AdamW (lr 3e-3).

    Batch 4 x 32 from the corpus; CAPABILITY: below 0.1 nats within 150
    steps. Observed: the first failing link (lower case) or "none".
    Seed 004, "Training: prove it is happening".
    """
    data, tokenizer = corpus(ctx)
    model = ctx.gpt("small", vocab_size=tokenizer.vocab_size)
    x, y = fixed_batch(ctx, data, *LEDGER_BATCH)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    ledger = _run_ledger(ctx, model, optimizer, x, y)
    no_grad = [n for n, p in model.named_parameters() if p.grad is None]
    extra = [note(f"parameters without a gradient after the last step: {len(no_grad)}"
                  + (f" (first: {no_grad[0]})" if no_grad else ""))]
    return _ledger_measurement(ledger, "Learning ledger, 2L/2H/64, batch (4, 32)", extra)


def stale_optimizer(ctx: Context) -> Measurement:
    """The learning ledger after ``finetune.with_fresh_head`` prepared model and optimizer.

    Small engine GPT, batch 4 x 32 from the corpus, the snippet's AdamW.
    Observed: the first failing link (lower case) or "none". Seed 004,
    "Training: prove it is happening" (OWNERSHIP); seed 000 §3.
    """
    from exercises.snippets import finetune

    data, tokenizer = corpus(ctx)
    model = ctx.gpt("small", vocab_size=tokenizer.vocab_size)
    optimizer = finetune.with_fresh_head(model)
    x, y = fixed_batch(ctx, data, *LEDGER_BATCH)
    head = model.lm_head.weight
    head_before = head.detach().clone()
    owned = any(p is head for group in optimizer.param_groups for p in group["params"])
    ledger = _run_ledger(ctx, model, optimizer, x, y)
    extra = [table("The new lm_head.weight", ["question", "answer"], [
        ["in the optimizer", owned], ["has a gradient", head.grad is not None],
        ["moved during training", not torch.equal(head.detach(), head_before)]])]
    return _ledger_measurement(ledger, "Learning ledger after with_fresh_head", extra)


def lr_10x(ctx: Context) -> Measurement:
    """The learning ledger with the optimizer ``finetune.build_optimizer`` makes.

    Small engine GPT, batch 4 x 32 from the corpus; CAPABILITY: below 0.1
    nats within 150 steps. Measured on CPU (seed 0): lr 3e-3 passes every
    link (0.006 after 150 steps); lr 3e-2 passes TASK to UPDATE and fails
    CAPABILITY (the loss stalls near 2 nats). The loss before any update is
    measured first (3.630 on both sides); the CAPABILITY curve starts after
    the UPDATE link's step (3.261 clean, 3.147 faulted). Observed: the first
    failing link or "none".
    """
    from exercises.snippets import finetune

    data, tokenizer = corpus(ctx)
    model = ctx.gpt("small", vocab_size=tokenizer.vocab_size)
    optimizer = finetune.build_optimizer(model)
    x, y = fixed_batch(ctx, data, *LEDGER_BATCH)
    with torch.no_grad():
        initial = model(x, y)[1].item()  # before any update (no dropout: draws nothing)
    ledger = _run_ledger(ctx, model, optimizer, x, y)
    curve = ledger.curve
    extra = [table("The run", ["quantity", "value"], [
        ["learning rate", optimizer.param_groups[0]["lr"]], ["loss before any update", initial],
        ["CAPABILITY's first loss (after UPDATE's step)", curve[0]],
        ["lowest loss", min(curve)], ["final loss", curve[-1]]])]
    return _ledger_measurement(ledger, "Learning ledger, 2L/2H/64, batch (4, 32)", extra)


def eval_vs_no_grad(ctx: Context) -> Measurement:
    """What ``engine.train.evaluate`` switches off, seen from inside the forward pass.

    Small engine GPT with dropout 0.2. Hooks record, during each call, whether
    the dropout modules are in training mode and whether the logits carry a
    graph (requires_grad). ``evaluate`` runs twice on one batch. Observed
    choice: a two calls agree and no graph; b differ, graph; c agree,
    graph; d differ, no graph. Also model.eval() alone and torch.no_grad()
    alone, measured directly. Seed 001, "Check yourself" (mode versus no-grad).
    """
    from engine.train import evaluate

    data, tokenizer = corpus(ctx)
    model = ctx.gpt("small", vocab_size=tokenizer.vocab_size, dropout=0.2)
    x, y = fixed_batch(ctx, data, *LEDGER_BATCH)
    seen: dict[str, bool] = {}

    def on_drop(module, _inputs, _output):
        seen["dropout active"] = module.training

    def on_head(_module, _inputs, output):
        seen["graph recorded"] = output.requires_grad

    handles = [model.drop.register_forward_hook(on_drop), model.lm_head.register_forward_hook(on_head)]
    try:
        model.train()
        first = evaluate(model, x, y)
        inside = dict(seen)
        second = evaluate(model, x, y)
        rows = []
        for label, mode, grad in (("model.eval() only", False, True), ("torch.no_grad() only", True, False)):
            model.train(mode)
            with torch.set_grad_enabled(grad):
                model(x, y)
            rows.append([label, seen["dropout active"], seen["graph recorded"]])
        model.train()
    finally:
        for h in handles:
            h.remove()
    agree = first == second
    recorded = inside["graph recorded"]
    observed = {(True, False): "a", (False, True): "b", (True, True): "c", (False, False): "d"}[(agree, recorded)]
    evidence = [
        table("Inside evaluate (model left in train mode before the call)", ["question", "answer"], [
            ["dropout active", inside["dropout active"]], ["graph recorded", recorded],
            ["loss, call 1", first], ["loss, call 2", second], ["two calls agree", agree]]),
        table("Each switch alone", ["switch", "dropout active", "graph recorded"], rows),
    ]
    return Measurement(observed=observed, evidence=evidence)


def overfit_batch(ctx: Context) -> Measurement:
    """``engine.train.overfit_batch`` on one fixed batch: 150 steps, lr 3e-3.

    Small engine GPT (2 layers, 2 heads, C = 64), batch 4 x 32 from the
    corpus. Observed: the loss on that batch after training (``evaluate``),
    near zero when the step works (seed 004: 0.0029 after 400 steps at
    4 layers). Seed 004, "Training: prove it is happening" (CAPABILITY).
    """
    from engine.train import evaluate, overfit_batch as subject

    data, tokenizer = corpus(ctx)
    model = ctx.gpt("small", vocab_size=tokenizer.vocab_size)
    x, y = fixed_batch(ctx, data, *LEDGER_BATCH)
    start = evaluate(model, x, y)
    ctx.progress(0.05, "overfitting one batch")
    curve = subject(model, x, y, steps=LEDGER_STEPS, lr=3e-3)
    final = evaluate(model, x, y)
    evidence = [
        series("loss on the batch: before each step, then after the last", curve + [final], "nats"),
        table("One fixed batch (4, 32)", ["quantity", "value"], [
            ["start", start], ["ln V", math.log(tokenizer.vocab_size)],
            [f"after {LEDGER_STEPS} steps", final]]),
    ]
    return Measurement(observed=round(final, 6), evidence=evidence)


#: The block whose attention runs on the written-out path in ``first_nonfinite``.
WRITTEN_OUT_BLOCK = 2


def first_nonfinite(ctx: Context) -> Measurement:
    """The non-finite ledger on the seed-sized engine with block 2 on the written-out attention.

    4 layers, C = 128, eval mode; block 2's attention runs
    ``engine.model.attention`` with the explicit causal mask (as it would
    while its weights are being inspected), the others SDPA. A random
    (1, 16) batch goes through ``nonfinite_ledger``. Observed: a choice —
    ``a``: no module's output holds an inf or NaN; ``b``: the first is in
    block 0 or 1; ``c``: ``blocks.2.attn.qkv``; ``d``: ``blocks.2.attn.proj``;
    ``e``: a later module (block 2's MLP, block 3, ln_f, lm_head). Evidence:
    the mask's first rows, the ledger around the first non-finite row, and
    the loss. Seed 000, section 7 ("inspect the first operation that
    produces a non-finite value").
    """
    from engine.instruments.nonfinite import nonfinite_ledger
    from engine.model import causal_mask

    model = ctx.gpt("seed").eval()
    model.blocks[WRITTEN_OUT_BLOCK].attn.fused = False
    g = torch.Generator().manual_seed(ctx.seed)
    ids = torch.randint(0, 37, (1, 17), generator=g).to(ctx.device)
    ledger = nonfinite_ledger(model, ids[:, :-1])
    with torch.no_grad():
        _, loss = model(ids[:, :-1], targets=ids[:, 1:])
    first = ledger.first.module if ledger.first else None
    if first is None:
        observed = "a"
    elif first.startswith(("blocks.0.", "blocks.1.")):
        observed = "b"
    elif first == "blocks.2.attn.qkv":
        observed = "c"
    elif first == "blocks.2.attn.proj":
        observed = "d"
    else:
        observed = "e"
    shown = ["blocks.1.mlp.proj", "blocks.2.ln_1", "blocks.2.attn.qkv", "blocks.2.attn.proj", "blocks.2.attn",
             "blocks.2.mlp.proj", "blocks.3.attn.proj", "ln_f", "lm_head"]
    by_name = {row.module: row for row in ledger.rows}
    mask = causal_mask(0, 4, 4)
    evidence = [
        table("causal_mask(0, 4, 4), True = may attend", ["query", "keys 0..3"],
              [[i, " ".join("1" if m else "0" for m in mask[i].tolist())] for i in range(4)]),
        table("Non-finite ledger (hooks in the order modules finish)", ["module", "output shape", "inf or NaN"],
              [[name, by_name[name].shape, by_name[name].nonfinite] for name in shown]),
        note(f"first non-finite output: {first or 'none'}; {len(ledger.rows)} module outputs recorded; "
             f"loss = {loss.item():.4f}"),
    ]
    return Measurement(observed=observed, evidence=evidence)
