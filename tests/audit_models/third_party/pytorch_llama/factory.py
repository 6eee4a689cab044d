"""hkproj/pytorch-llama's own ``model.py`` (vendored beside this file) at a tiny size, clean and with one
planted bug. Its forward takes one token per call, ``forward(tokens, start_pos)``, writing each token's
keys and values into caches it keeps as plain attributes (as it keeps its rotary table,
``freqs_complex``, made on ``args.device``), with grouped kv heads (4 query heads over 2).
"""

import importlib.util
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _vendored(*edits: tuple[str, str]):
    """model.py as a module, with each (old, new) edit made to its source first (the file stays as it is)."""
    path = os.path.join(HERE, "model.py")
    spec = importlib.util.spec_from_file_location("pytorch_llama_model", path)
    module = importlib.util.module_from_spec(spec)
    with open(path) as f:
        source = f.read()
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def _build(module):
    torch.manual_seed(0)
    args = module.ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=64, multiple_of=32,
                            max_batch_size=8, max_seq_len=64, device="cpu")
    model = module.Transformer(args)
    for m in model.modules():  # the file loads Meta's checkpoints and has no init of its own: GPT-2's
        if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
            torch.nn.init.normal_(m.weight, std=0.02)
    return {"model": model, "optimizer": torch.optim.AdamW(model.parameters(), lr=1e-3)}


def build():
    return _build(_vendored())


def build_kv_tiled():
    """The planted bug: the kv heads tiled (kv head h % 2 for query head h) rather than repeated in groups,
    as ``x.repeat(1, 1, n_rep, 1)`` does in place of ``repeat_interleave``."""
    module = _vendored()
    module.repeat_kv = lambda x, n_rep: x if n_rep == 1 else x.repeat(1, 1, n_rep, 1)
    return _build(module)


def build_cache_not_read_back():
    """The planted bug: each step reads the cache from ``start_pos`` rather than from 0, so a token attends
    to itself alone."""
    return _build(_vendored(*[(f"{t} = self.cache_{c}[:batch_size, : start_pos + seq_len]",
                               f"{t} = self.cache_{c}[:batch_size, start_pos : start_pos + seq_len]")
                              for t, c in (("keys", "k"), ("values", "v"))]))
