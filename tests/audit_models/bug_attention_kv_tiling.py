"""Bug (ATTENTION): grouped-query attention whose kv heads are tiled to the query heads with ``repeat``
instead of ``repeat_interleave``: query heads 0 and 2 read kv head 0, where the checkpoint's layout (and
every correct grouped-query model) has heads 0 and 1 read it. Causal, at the right scale, and wrong.
``build_clean`` is the same model tiled correctly."""

import torch.nn as nn
from torch.nn import functional as F

import zoo_nano


class GroupedQuery(nn.Module):
    """4 query heads over 2 kv heads; ``tile`` names how the kv heads are repeated to the query heads."""

    tile = "repeat_interleave"

    def __init__(self, config):
        super().__init__()
        C, self.n_head, self.n_kv = config.n_embd, config.n_head, config.n_head // 2
        D = C // config.n_head
        self.c_q, self.c_k, self.c_v = nn.Linear(C, C), nn.Linear(C, self.n_kv * D), nn.Linear(C, self.n_kv * D)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        D = C // self.n_head
        q = self.c_q(x).view(B, T, self.n_head, D).transpose(1, 2)
        k, v = (p(x).view(B, T, self.n_kv, D).transpose(1, 2) for p in (self.c_k, self.c_v))
        groups = self.n_head // self.n_kv
        if self.tile == "repeat":
            k, v = k.repeat(1, groups, 1, 1), v.repeat(1, groups, 1, 1)
        else:
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class TiledWrong(GroupedQuery):
    tile = "repeat"


def with_attention(attention_class):
    """The zoo's nanoGPT-style GPT class with ``attention_class`` in every block."""

    class Block(zoo_nano.Block):
        pass

    Block.attention_class = attention_class

    class GPT(zoo_nano.GPT):
        block_class = Block

    return GPT


def build():
    return zoo_nano.build(model_class=with_attention(TiledWrong))


def build_clean():
    return zoo_nano.build(model_class=with_attention(GroupedQuery))
