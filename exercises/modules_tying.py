"""A check for the set ``modules``: what an optimizer holds when the weights are tied after it.

Seed 004, "The model: embeddings and positions" (tying after optimizer
construction) and "Training: prove it is happening" (OWNERSHIP): an
optimizer keeps the parameter objects it was given. The check compares both
directions of ownership and the training that follows.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

STEPS = 5


def _losses(ctx: Context, model, optimizer, batches) -> list[float]:
    from engine.train import train_step

    model.train()
    return [train_step(model, optimizer, x, y) for x, y in batches]


def tie_after_optimizer(ctx: Context) -> Measurement:
    """``tie_late.tie_and_build`` on an untied small engine, against tying first by hand.

    The small engine (2 layers, C = 64, V = 37) is built untied
    (``tie_weights=False``) and handed to ``tie_and_build``; a second one,
    built from the same seed, is tied and then given its AdamW by the check
    itself. Both train 5 steps on the same batches of (8, 32). Observed:
    ``[the optimizer holds a tensor the model no longer has, every model
    parameter is in the optimizer, the 5 losses equal the tie-first
    run's]``. Evidence: tensor and value counts on both sides of ownership,
    whether the dropped head moved.
    """
    from engine.corpus import make_corpus
    from engine.data import get_batch
    from engine.tokenizer import CharTokenizer
    from exercises.snippets import tie_late

    text = make_corpus(50_000, seed=0)
    data = CharTokenizer(text).encode_tensor(text)
    g = torch.Generator().manual_seed(ctx.seed)
    batches = [get_batch(data, 8, 32, generator=g, device=ctx.device) for _ in range(STEPS)]

    model = ctx.gpt("small", tie_weights=False)
    old_head = model.lm_head.weight
    optimizer = tie_late.tie_and_build(model)
    before = old_head.detach().clone()
    losses = _losses(ctx, model, optimizer, batches)

    reference = ctx.gpt("small", tie_weights=False)
    reference.lm_head.weight = reference.wte.weight
    reference_losses = _losses(ctx, reference, tie_late.build_optimizer(reference), batches)

    in_model = {id(p): p for p in model.parameters()}
    in_optimizer = {id(p): p for group in optimizer.param_groups for p in group["params"]}
    stale = [p for i, p in in_optimizer.items() if i not in in_model]
    unowned = [p for i, p in in_model.items() if i not in in_optimizer]
    same = losses == reference_losses
    evidence = [
        table("Ownership, both directions", ["quantity", "tensors", "values"], [
            ["model.parameters() (unique)", len(in_model), f"{sum(p.numel() for p in in_model.values()):,}"],
            ["in the optimizer", len(in_optimizer), f"{sum(p.numel() for p in in_optimizer.values()):,}"],
            ["in the optimizer, not in the model", len(stale), f"{sum(p.numel() for p in stale):,}"],
            ["in the model, not in the optimizer", len(unowned), f"{sum(p.numel() for p in unowned):,}"]]),
        table(f"{STEPS} training steps", ["step", "this run", "tied first"],
              [[i + 1, f"{a:.6f}", f"{b:.6f}"] for i, (a, b) in enumerate(zip(losses, reference_losses))]),
        table("The head the tie dropped", ["quantity", "value"], [
            ["still in the optimizer", any(p is old_head for p in in_optimizer.values())],
            ["grad after training", "None" if old_head.grad is None else "a tensor"],
            ["moved", not torch.equal(before, old_head.detach())]]),
    ]
    if stale:
        evidence.append(note("The audit's OWNERSHIP link asks whether every model parameter is in the "
                             "optimizer: it is, so the link holds. Only the other direction finds the "
                             "tensor the optimizer keeps for a model that no longer uses it."))
    return Measurement(observed=[bool(stale), not unowned, same], evidence=evidence)
