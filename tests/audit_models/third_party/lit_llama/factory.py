"""lit-llama's own ``lit_llama/model.py`` (vendored beside this file) at a tiny size, clean and with one
planted bug. Its forward is ``forward(idx, max_seq_length=None, input_pos=None)``: a whole sequence
without ``input_pos``, and with it a KV cache the model keeps until ``reset_cache()``.

The file imports ``find_multiple`` from ``lit_llama.utils``, which needs lightning: a stub package with
that one function stands in while it imports.
"""

import importlib.util
import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _find_multiple(n: int, k: int) -> int:
    return n if n % k == 0 else n + k - (n % k)


def _vendored():
    stubs = {"lit_llama": types.ModuleType("lit_llama"), "lit_llama.utils": types.ModuleType("lit_llama.utils")}
    stubs["lit_llama.utils"].find_multiple = _find_multiple
    stubs["lit_llama"].utils = stubs["lit_llama.utils"]
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location("lit_llama_model", os.path.join(HERE, "model.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, was in saved.items():
            if was is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = was
    return module


def _build(module):
    torch.manual_seed(0)
    model = module.LLaMA(module.LLaMAConfig(block_size=64, vocab_size=64, n_layer=2, n_head=4, n_embd=64))
    return {"model": model, "optimizer": torch.optim.AdamW(model.parameters(), lr=1e-3)}


def build():
    return _build(_vendored())


def build_is_causal_with_cache():
    """The planted bug: SDPA asked for ``is_causal=True`` in place of the cache's mask. A whole sequence
    attends the same, but a cached chunk's queries are then aligned with the cache's first keys, not its
    last (SDPA's causal mask is top-left)."""
    module = _vendored()
    functional = module.F

    def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, **kwargs):
        return functional.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)

    module.F = types.SimpleNamespace(**{name: getattr(functional, name) for name in dir(functional)
                                        if not name.startswith("__")})
    module.F.scaled_dot_product_attention = scaled_dot_product_attention
    return _build(module)
