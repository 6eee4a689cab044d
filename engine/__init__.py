"""engine: a small GPT in plain PyTorch, and the instruments that inspect it.

Names are loaded on first use, so ``import engine.corpus`` or
``engine.GPTConfig`` does not import torch. ``generate`` is not re-exported
here because it shares its name with its module: use
``from engine.generate import generate``.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "GPTConfig": "config",
    "GPT": "model",
    "KVCache": "model",
    "split_heads": "model",
    "merge_heads": "model",
    "causal_mask": "model",
    "CharTokenizer": "tokenizer",
    "make_corpus": "corpus",
    "get_batch": "data",
    "split": "data",
    "check_alignment": "data",
    "make_optimizer": "train",
    "train_step": "train",
    "accumulate_gradients": "train",
    "evaluate": "train",
    "overfit_batch": "train",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        module = importlib.import_module(f".{_EXPORTS[name]}", __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
