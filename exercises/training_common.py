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


def part6_gpt(ctx: Context):
    """Seed 001, Part 6: the tiny engine GPT and the two repeating sequences it trains on.

    The seed's configuration: V = 3, C = 16, one layer, 2 heads, block 8,
    tied. The engine counts 3,424 unique parameters there; the seed reports
    3,488, and the 64 between them are exactly the biases of a qkv and an
    output projection (3C + C): most likely the seed's attention has them,
    and the engine's does not.
    The sequences 0 1 2 0 1 2 ... and 1 2 0 1 2 0 ... are shifted into
    (2, 8) inputs and targets, so the eight positions fill the block.

    Returns:
        (model, x, y), the model in train mode on ctx.device.
    """
    model = ctx.gpt("small", vocab_size=3, block_size=8, n_layer=1, n_head=2, n_embd=16)
    tokens = torch.tensor([[0, 1, 2, 0, 1, 2, 0, 1, 2], [1, 2, 0, 1, 2, 0, 1, 2, 0]], device=ctx.device)
    return model, tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()  # (2, 8) each


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
    """Train the snippet bigram full-batch with the snippet's optimizer and the engine's loop.

    Seed 001 trains its bigram with the same ``train_step`` that later
    trains the GPT (Parts 4 and 6). The curve holds ``steps + 1`` losses:
    ``engine.train.evaluate`` before the first update and after each one.
    """
    from engine.train import evaluate, train_step
    from exercises.snippets import bigram

    vocab, x, y, model = bigram_data(ctx)
    optimizer = bigram.make_optimizer(model)
    curve = [evaluate(model, x, y)]
    for step in range(steps):
        train_step(model, optimizer, x, y)
        curve.append(evaluate(model, x, y))
        if (step + 1) % 50 == 0:
            ctx.progress((step + 1) / steps, f"bigram step {step + 1}/{steps}")
    lr = optimizer.param_groups[0]["lr"]
    return {"vocab": vocab, "x": x, "y": y, "model": model, "curve": curve, "lr": lr}
