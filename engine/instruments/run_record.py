"""The run record: what a training run was, so it can be compared later.

Seed 004, "The run record, and this model's baseline variation" (Chapter
14's comparability checklist): a run carries its config and a hash of it,
the tokenizer, the seed, the environment (torch version, device), its final
train and validation loss, peak memory and wall time. ``train_run`` trains a
small engine GPT on the synthetic corpus and returns that record as a plain
dict of TOML-friendly values (str, int, float, bool, nested dicts; no None),
ready for ``tomli_w.dumps``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from functools import lru_cache

import torch

#: A run small enough for two CPU cores: about 1 s for 100 steps on one thread.
SMALL_RUN = dict(vocab_size=37, block_size=32, n_layer=2, n_head=4, n_embd=64)


def config_fields(config) -> dict:
    """The config's fields as a dict, leaving out those set to None (TOML has no null:
    an absent option reads as its default, None)."""
    fields = asdict(config) if hasattr(config, "__dataclass_fields__") else dict(config)
    return {name: value for name, value in fields.items() if value is not None}


def config_hash(config) -> str:
    """First 12 hex digits of the SHA-256 of the config's fields, as sorted JSON."""
    fields = config_fields(config)
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]


@lru_cache(maxsize=4)
def _corpus_tokens(n_chars: int, corpus_seed: int):
    from engine.corpus import make_corpus
    from engine.tokenizer import CharTokenizer

    text = make_corpus(n_chars, seed=corpus_seed)
    tokenizer = CharTokenizer(text)
    return tokenizer, tokenizer.encode_tensor(text)


def train_run(config, seed: int, steps: int = 100, batch_size: int = 16, lr: float = 3e-3,
              device: str = "cpu", n_chars: int = 50_000, corpus_seed: int = 0,
              eval_batches: int = 4, eval_seed: int = 1234) -> dict:
    """Train ``engine.model.GPT(config)`` from ``seed`` and return its run record.

    The seed fixes the initialisation and the training batches; validation
    uses ``eval_batches`` fixed batches drawn with ``eval_seed`` from the
    held-out tail, the same for every run, so two runs are scored on the same
    text.

    Returns:
        {"config": {...}, "config_hash", "tokenizer": {"kind", "vocab_size",
        "corpus_chars", "corpus_seed"}, "seed", "steps", "batch_size", "lr",
        "params", "torch", "device", "final_train_loss", "final_val_loss",
        "peak_bytes", "peak_kind", "wall_s"}.

    Raises:
        ValueError: if the tokenizer's vocabulary does not fit config.vocab_size.
    """
    from engine.data import get_batch, split
    from engine.instruments.performance import peak_rss_bytes
    from engine.model import GPT
    from engine.train import evaluate, make_optimizer

    tokenizer, data = _corpus_tokens(n_chars, corpus_seed)
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size} ids but the model only "
                         f"{config.vocab_size}; raise vocab_size.")
    train_data, val_data = split(data)
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    started = time.perf_counter()
    torch.manual_seed(seed)
    model = GPT(config).to(dev)
    optimizer = make_optimizer(model, lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    model.train()
    train_loss = float("nan")
    for _ in range(steps):
        x, y = get_batch(train_data, batch_size, config.block_size, generator=g, device=dev)
        _, loss = model(x, targets=y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        train_loss = loss.item()
    ge = torch.Generator().manual_seed(eval_seed)
    val = [evaluate(model, *get_batch(val_data, batch_size, config.block_size, generator=ge, device=dev))
           for _ in range(eval_batches)]
    wall = time.perf_counter() - started
    if dev.type == "cuda":
        peak, kind = torch.cuda.max_memory_allocated(dev), "cuda max_memory_allocated"
    else:
        peak, kind = peak_rss_bytes(), "process peak RSS"
    return {
        "config": config_fields(config),
        "config_hash": config_hash(config),
        "tokenizer": {"kind": "CharTokenizer", "vocab_size": tokenizer.vocab_size,
                      "corpus_chars": n_chars, "corpus_seed": corpus_seed},
        "seed": int(seed), "steps": int(steps), "batch_size": int(batch_size), "lr": float(lr),
        "params": int(model.num_params()),
        "torch": torch.__version__, "device": str(dev),
        "final_train_loss": float(train_loss), "final_val_loss": float(sum(val) / len(val)),
        "peak_bytes": int(peak), "peak_kind": kind, "wall_s": round(wall, 3),
    }
