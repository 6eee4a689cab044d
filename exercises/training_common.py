"""What the training checks share: the corpus, fixed batches, and the seed's bigram.

The training set's checks live in one module per section of the set:
``training_updates`` (one update by hand), ``training_objective`` (the
objective and its floor), ``training_ledger`` (the learning ledger on the
engine, modes, the end-to-end proof), ``training_numerics`` (log-
probabilities, inference mode, autocast) and ``training_loop`` (the engine's
loop and what a longer run adds). Their models come from ``ctx.gpt``.
"""

import torch

from exercises.context import Context


def corpus(ctx: Context, n_chars: int = 200_000):
    """The engine corpus as one int64 id tensor on ctx.device, and its tokenizer (V = 37)."""
    from engine.corpus import make_corpus
    from engine.tokenizer import CharTokenizer

    text = make_corpus(n_chars, seed=0)
    tokenizer = CharTokenizer(text)
    return tokenizer.encode_tensor(text).to(ctx.device), tokenizer


def fixed_batch(ctx: Context, data: torch.Tensor, B: int, T: int):
    """B windows of T + 1 tokens, shifted by the check itself (not by engine.data)."""
    g = torch.Generator().manual_seed(ctx.seed)
    starts = torch.randint(0, len(data) - T - 1, (B,), generator=g).tolist()
    windows = torch.stack([data[s : s + T + 1] for s in starts])  # (B, T + 1)
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()  # (B, T), (B, T)


def bigram_data(ctx: Context):
    """The seed's toy text through the bigram snippet: vocab, x, y (each (1, 42)), float64 model."""
    from exercises.snippets import bigram

    vocab, ids = bigram.encode()
    x, y = bigram.shifted_pairs(ids.to(ctx.device))
    model = bigram.Bigram(len(vocab)).double().to(ctx.device)
    return vocab, x, y, model


def counting(x: torch.Tensor, y: torch.Tensor, V: int):
    """Empirical bigram probabilities (V, V) and the counting floor (mean nats) of pairs x -> y."""
    counts = torch.bincount((x * V + y).flatten(), minlength=V * V).reshape(V, V).double()
    probs = counts / counts.sum(1, keepdim=True).clamp_min(1)
    seen = counts > 0
    floor = -(counts[seen] * probs[seen].log()).sum().item() / y.numel()
    return probs, floor


def train_bigram(ctx: Context, steps: int = 200) -> dict:
    """Train the snippet bigram full-batch with the snippet's optimizer and loop."""
    from exercises.snippets import bigram, loop

    vocab, x, y, model = bigram_data(ctx)
    optimizer = bigram.make_optimizer(model)

    def on_step(step: int) -> None:
        if step % 50 == 0:
            ctx.progress(step / steps, f"bigram step {step}/{steps}")

    curve = loop.train(model, optimizer, x, y, steps, on_step=on_step)
    lr = optimizer.param_groups[0]["lr"]
    return {"vocab": vocab, "x": x, "y": y, "model": model, "curve": curve, "lr": lr}
