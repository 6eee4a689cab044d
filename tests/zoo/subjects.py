"""Factories for the audit's zoo: real third-party GPTs at a tiny size, each with its own recipe.

Every factory takes no arguments (``functools.partial`` fixes the options)
and returns what ``tutor audit`` accepts: a dict with the model and, where
the project publishes one, its optimizer and training step. The size is the
same everywhere: V = 37 (the audit corpus' characters), block 64, 2 layers,
4 heads, C = 64 (head size D = 16).

- ``nanogpt``: nanoGPT's ``model.py`` (vendored, tests/zoo/nanogpt) with its
  ``configure_optimizers`` and train.py's step: microbatches averaged,
  ``clip_grad_norm_`` before the step, ``get_lr``'s warmup and cosine decay
  set on the param groups at the start of each step (its shakespeare_char
  settings: lr 1e-3, dropout 0.2, betas (0.9, 0.99), weight decay 0.1).
- ``mingpt``: minGPT's ``mingpt/model.py`` (vendored) with its
  ``configure_optimizers`` and the body of ``Trainer.run``'s loop (chargpt's
  lr 5e-4).
- ``meta_llama_style``: a model written afresh the way Meta's Llama reference
  ``model.py`` is (required ``start_pos``, ``inference_mode``, its own cache
  and rotary table as plain attributes; tests/zoo/meta_style.py says why it
  is not vendored).
- the extras (``pip install -e '.[zoo]'``): Hugging Face GPT-2, GPT-NeoX and
  Llama (grouped-query attention, two kv heads), litgpt's GPT (a Llama-like
  config), x-transformers' ``TransformerWrapper`` and ``AutoregressiveWrapper``,
  TransformerLens' ``HookedTransformer``. They train with the audit's AdamW.

A factory raises ImportError when its package is missing; the tests call
``pytest.importorskip`` first.
"""

from __future__ import annotations

import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # the vendored packages: nanogpt, mingpt
    sys.path.insert(0, HERE)

V, BLOCK, LAYERS, HEADS, C = 37, 64, 2, 4, 64


# --- nanoGPT -------------------------------------------------------------------

def nanogpt_get_lr(it, learning_rate=1e-3, warmup_iters=10, lr_decay_iters=150, min_lr=1e-4):
    """train.py's learning rate at iteration ``it``: linear warmup, cosine decay to min_lr, then flat."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def nanogpt_step(micro=2, grad_clip=1.0, learning_rate=1e-3):
    """nanoGPT train.py's iteration as ``train_step(model, optimizer, (x, y))``: x, y (B, T) int64."""
    state = {"iter": 0}

    def train_step(model, optimizer, batch):
        lr = nanogpt_get_lr(state["iter"], learning_rate)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = batch
        for xm, ym in zip(x.chunk(micro), y.chunk(micro)):
            _, loss = model(xm, ym)
            loss = loss / micro
            loss.backward()
        if grad_clip != 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        state["iter"] += 1

    return train_step


def nanogpt(dropout=0.2, learning_rate=1e-3, micro=2, model_class=None):
    """nanoGPT at the zoo's size with its own optimizer and step (module docstring)."""
    from nanogpt.model import GPT, GPTConfig

    config = GPTConfig(block_size=BLOCK, vocab_size=V, n_layer=LAYERS, n_head=HEADS, n_embd=C, dropout=dropout,
                       bias=False)
    model = (model_class or GPT)(config)
    optimizer = model.configure_optimizers(weight_decay=0.1, learning_rate=learning_rate, betas=(0.9, 0.99),
                                           device_type="cpu")
    return {"model": model, "optimizer": optimizer,
            "train_step": nanogpt_step(micro=micro, learning_rate=learning_rate)}


# --- minGPT --------------------------------------------------------------------

def mingpt_step(grad_norm_clip=1.0):
    """The body of minGPT's ``Trainer.run`` loop as ``train_step(model, optimizer, (x, y))``."""

    def train_step(model, optimizer, batch):
        x, y = batch
        logits, loss = model(x, y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_norm_clip)
        optimizer.step()

    return train_step


def mingpt(learning_rate=5e-4, model_class=None):
    """minGPT at the zoo's size with its own optimizer and trainer step (module docstring)."""
    from mingpt.model import GPT
    from mingpt.utils import CfgNode

    config = GPT.get_default_config()
    config.model_type = None
    config.n_layer, config.n_head, config.n_embd = LAYERS, HEADS, C
    config.vocab_size, config.block_size = V, BLOCK
    model = (model_class or GPT)(config)
    train_config = CfgNode(learning_rate=learning_rate, betas=(0.9, 0.95), weight_decay=0.1)
    return {"model": model, "optimizer": model.configure_optimizers(train_config), "train_step": mingpt_step()}


# --- the extras ----------------------------------------------------------------

def hf_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=V, n_positions=BLOCK, n_embd=C, n_layer=LAYERS, n_head=HEADS,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return {"model": GPT2LMHeadModel(config)}


def hf_neox():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    config = GPTNeoXConfig(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                           num_attention_heads=HEADS, intermediate_size=4 * C, rotary_pct=0.25,
                           use_parallel_residual=True, hidden_dropout=0.0, attention_dropout=0.0)
    return {"model": GPTNeoXForCausalLM(config)}


def hf_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                         num_attention_heads=HEADS, num_key_value_heads=2, intermediate_size=172)
    return {"model": LlamaForCausalLM(config)}


def litgpt_llama():
    from litgpt.config import Config
    from litgpt.model import GPT

    config = Config(block_size=BLOCK, vocab_size=V, padded_vocab_size=V, n_layer=LAYERS, n_head=HEADS, n_embd=C,
                    n_query_groups=2, rotary_percentage=1.0, parallel_residual=False, bias=False,
                    norm_class_name="RMSNorm", mlp_class_name="LLaMAMLP", intermediate_size=172)
    return {"model": GPT(config)}


def x_transformer():
    from x_transformers import Decoder, TransformerWrapper

    return {"model": TransformerWrapper(num_tokens=V, max_seq_len=BLOCK,
                                        attn_layers=Decoder(dim=C, depth=LAYERS, heads=HEADS))}


def x_autoregressive():
    from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper

    net = TransformerWrapper(num_tokens=V, max_seq_len=BLOCK, attn_layers=Decoder(dim=C, depth=LAYERS, heads=HEADS,
                                                                                 rotary_pos_emb=True))
    return {"model": AutoregressiveWrapper(net)}


def transformer_lens():
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    config = HookedTransformerConfig(n_layers=LAYERS, d_model=C, n_ctx=BLOCK, d_head=C // HEADS, n_heads=HEADS,
                                     d_vocab=V, act_fn="gelu", normalization_type="LN", seed=0)
    return {"model": HookedTransformer(config)}


def meta_llama_style():
    """A model built like Meta's Llama reference (tests/zoo/meta_style.py: its licence keeps the file out)."""
    import meta_style

    return meta_style.build()


#: Every zoo subject: name -> (factory, the package it needs or None).
ZOO = {
    "nanogpt": (nanogpt, None),
    "mingpt": (mingpt, None),
    "meta_llama_style": (meta_llama_style, None),
    "hf_gpt2": (hf_gpt2, "transformers"),
    "hf_neox": (hf_neox, "transformers"),
    "hf_llama": (hf_llama, "transformers"),
    "litgpt": (litgpt_llama, "litgpt"),
    "x_transformer": (x_transformer, "x_transformers"),
    "x_autoregressive": (x_autoregressive, "x_transformers"),
    "transformer_lens": (transformer_lens, "transformer_lens"),
}
