"""A check for the set ``generation``: a sample printed during training must leave training as it was.

Seed 004, "Generation is a different program": ``generate`` switches the
model to eval mode (dropout off) and restores the caller's mode in a
``finally``. A training loop that prints a sample now and then relies on
that restore to keep training the model it was training.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

STEPS, SAMPLE_EVERY, DROPOUT = 30, 10, 0.1


def sample_during_training(ctx: Context) -> Measurement:
    """Train the small engine with dropout twice: once plain, once with a greedy sample every 10 steps.

    2 layers, C = 64, block 32, dropout 0.1, AdamW lr 5e-3 (``make_optimizer``),
    30 ``train_step`` calls on batches of 16 from the corpus; the second run
    calls ``generate(model, 'The ', 20, greedy=True)`` after steps 10, 20
    and 30. Greedy decoding in eval mode draws no random numbers, so the two
    runs draw the same dropout masks as long as both train in train mode.
    Observed: ``[the model is in train mode after every sample, the two
    runs' 30 losses are equal]``. Evidence: the mode after each sample and
    the losses around them.
    """
    from engine.corpus import make_corpus
    from engine.data import get_batch
    from engine.generate import generate
    from engine.tokenizer import CharTokenizer
    from engine.train import make_optimizer, train_step

    text = make_corpus(50_000, seed=ctx.seed)
    tok = CharTokenizer(text)
    data = tok.encode_tensor(text)
    prompt = torch.tensor([tok.encode("The ")], device=ctx.device)  # (1, 4)

    def run(with_samples: bool):
        model = ctx.gpt("small", vocab_size=tok.vocab_size, dropout=DROPOUT)  # seeds torch: same masks after
        optimizer = make_optimizer(model, lr=5e-3)
        g = torch.Generator().manual_seed(ctx.seed)
        losses, modes = [], []
        model.train()
        for step in range(1, STEPS + 1):
            x, y = get_batch(data, 16, model.config.block_size, generator=g, device=ctx.device)
            losses.append(train_step(model, optimizer, x, y))
            if with_samples and step % SAMPLE_EVERY == 0:
                generate(model, prompt, 20, greedy=True)
                modes.append(model.training)
        return losses, modes

    plain, _ = run(with_samples=False)
    ctx.progress(0.5, "the run that prints samples")
    sampled, modes = run(with_samples=True)
    same = plain == sampled
    first = next((i + 1 for i, (a, b) in enumerate(zip(plain, sampled)) if a != b), None)
    shown = [1, SAMPLE_EVERY, SAMPLE_EVERY + 1, 2 * SAMPLE_EVERY, 2 * SAMPLE_EVERY + 1, STEPS]
    evidence = [
        table("model.training after each sample", ["after step", "train mode"],
              [[SAMPLE_EVERY * (i + 1), m] for i, m in enumerate(modes)]),
        table(f"Training loss, dropout {DROPOUT}", ["step", "no samples", "samples every 10"],
              [[s, f"{plain[s - 1]:.6f}", f"{sampled[s - 1]:.6f}"] for s in shown]),
        note(f"first step whose loss differs: {first if first else 'none'}"),
    ]
    return Measurement(observed=[all(modes), same], evidence=evidence)
