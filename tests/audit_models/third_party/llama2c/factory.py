"""llama2.c's own ``model.py`` (vendored beside this file) at a tiny size, clean and with one planted bug.

Its blocks call ``self.attention.forward(...)`` directly, so the attention
module's own hooks never fire; its GQA repeats each of 2 kv heads to 2 query
heads (``repeat_kv``); the model keeps its loss graph in ``last_loss``, so it
cannot be deep-copied; its length is ``params.max_seq_len``.
"""

import importlib.util
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _vendored():
    """model.py imported under its own name (another test's ``model`` module may be loaded already)."""
    spec = importlib.util.spec_from_file_location("llama2c_model", os.path.join(HERE, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(module):
    torch.manual_seed(0)
    args = module.ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=64, multiple_of=32,
                            max_seq_len=32, dropout=0.0)
    model = module.Transformer(args)
    return {"model": model, "optimizer": model.configure_optimizers(0.1, 5e-4, (0.9, 0.95), "cpu")}


def build():
    return _build(_vendored())


def build_kv_tiled():
    """The planted bug: the kv heads tiled (kv head h % 2 for query head h) rather than repeated in groups
    (kv head h // 2), as ``x.repeat(1, 1, n_rep, 1)`` does in place of ``repeat_interleave``."""
    module = _vendored()

    def repeat_kv(x, n_rep):
        return x if n_rep == 1 else x.repeat(1, 1, n_rep, 1)

    module.repeat_kv = repeat_kv
    return _build(module)
