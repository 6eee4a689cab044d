"""nanoGPT-mup's own ``model.py`` (vendored beside this file) at a tiny size with muP on, clean and with one
planted bug. muP scales the attention scores by 1/D rather than 1/sqrt(D) (passed as SDPA's ``scale``), the
embedding's output by ``mup_input_alpha`` and the logits by ``mup_output_alpha / mup_width_multiplier``, and
its optimizer groups carry an ``lr_scale`` of 1/``mup_width_multiplier`` for the hidden matrices.
"""

import importlib.util
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _vendored():
    spec = importlib.util.spec_from_file_location("nanogpt_mup_model", os.path.join(HERE, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(module):
    torch.manual_seed(0)
    config = module.GPTConfig(block_size=64, vocab_size=64, n_layer=2, n_head=4, n_embd=64, dropout=0.0, bias=False,
                              mup_enabled=True, mup_width_multiplier=64 / 256)
    model = module.GPT(config)
    return {"model": model, "optimizer": model.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")}


def build():
    return _build(_vendored())


def build_mask_shifted():
    """The planted bug: the hand-written path (what the file runs without SDPA) with its causal mask made
    by ``tril(..., diagonal=1)``, so each position also reads the next one."""
    built = _build(_vendored())
    for block in built["model"].transformer.h:
        block.attn.flash = False
        block.attn.register_buffer("bias", torch.tril(torch.ones(64, 64), diagonal=1).view(1, 1, 64, 64))
    return built
