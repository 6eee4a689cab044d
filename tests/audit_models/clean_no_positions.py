"""A GPT that declares no length: no position table and no block_size anywhere, positions told by ALiBi
(a per-head bias on the scores, -slope x distance, as BLOOM adds). Its generate never crops, since no
length is out of reach; greedy with ``top_k=1``.

``build_last_token_only`` plants a generate bug: each step feeds only the last token, with no cache to
carry the context, so every new token is chosen as if the sequence were that one token.
``build_stale_crop`` plants another: generate crops the context to 32 tokens, a crop kept from a model
that had a block_size of 32, so past 32 tokens it chooses from less context than the forward sees.
"""

import math
from dataclasses import fields, make_dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F

import zoo_nano


#: zoo_nano's config without its block_size: nothing bounds the sequence.
Config = make_dataclass("Config", [(f.name, f.type, f.default) for f in fields(zoo_nano.Config)
                                   if f.name != "block_size"])


class AlibiAttention(zoo_nano.SelfAttention):
    def attend(self, q, k, v):
        H, T = q.size(1), q.size(2)
        slopes = torch.tensor([2 ** (-8 * (h + 1) / H) for h in range(H)], device=q.device, dtype=q.dtype)
        i = torch.arange(T, device=q.device)
        distance = (i[:, None] - i[None, :]).to(q.dtype)
        bias = (-slopes[:, None, None] * distance).masked_fill(i[None, :] > i[:, None], float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1 / math.sqrt(q.size(-1)))


class Block(zoo_nano.Block):
    attention_class = AlibiAttention


class GPT(zoo_nano.GPT):
    def __init__(self, config=None):
        nn.Module.__init__(self)
        self.config = config = config or Config()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd), drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]), ln_f=nn.LayerNorm(config.n_embd)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)

    def hidden(self, idx):
        x = self.transformer.drop(self.transformer.wte(idx))
        for block in self.transformer.h:
            x = block(x)
        return self.transformer.ln_f(x)

    def crop(self, idx):
        return idx


class LastTokenOnly(GPT):
    def crop(self, idx):
        return idx[:, -1:]


class StaleCrop(GPT):
    def crop(self, idx):
        return idx[:, -32:]


def build():
    return zoo_nano.build(Config(), model_class=GPT)


def build_last_token_only():
    return zoo_nano.build(Config(), model_class=LastTokenOnly)


def build_stale_crop():
    return zoo_nano.build(Config(), model_class=StaleCrop)
