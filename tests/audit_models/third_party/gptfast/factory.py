"""gpt-fast's own ``model.py`` (vendored beside this file) at a tiny size, clean and with one planted bug.

Its forward is ``forward(idx, input_pos)`` after ``setup_caches(max_batch_size, max_seq_length)``, its
q, k, v come from one packed ``wqkv`` (grouped kv heads, 4 query heads over 2), and its rotary table
``freqs_cis`` and ``causal_mask`` are plain attributes that ``setup_caches`` makes.
"""

import importlib.util
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _vendored():
    spec = importlib.util.spec_from_file_location("gptfast_model", os.path.join(HERE, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(module):
    torch.manual_seed(0)
    config = module.ModelArgs(block_size=64, vocab_size=64, n_layer=2, n_head=4, dim=64, n_local_heads=2,
                              intermediate_size=128)
    model = module.Transformer(config)
    for m in model.modules():  # gpt-fast loads checkpoints and has no init of its own: GPT-2's
        if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
            torch.nn.init.normal_(m.weight, std=0.02)
    return {"model": model, "optimizer": torch.optim.AdamW(model.parameters(), lr=1e-3)}


def build():
    return _build(_vendored())


def build_rotary_not_offset():
    """The planted bug: the forward takes the rotary table's first T rows rather than the rows at
    ``input_pos``, so a cached step rotates its token as if it stood at position 0."""
    module = _vendored()

    def forward(self, idx, input_pos=None):
        assert self.freqs_cis is not None, "Caches must be initialized first"
        mask = self.causal_mask[None, None, input_pos]
        freqs_cis = self.freqs_cis[:idx.size(1)]
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x, input_pos, freqs_cis, mask)
        return self.output(self.norm(x))

    module.Transformer.forward = forward
    return _build(module)
