"""Bug (CACHE): SDPA's is_causal=True used with a cache. With q shorter than k its mask
is aligned to the top-left, so a single new token sees only the first cached key."""

from torch.nn import functional as F

import zoo_hf


class Attention(zoo_hf.Attention):
    def attend(self, q, k, v, past, attention_mask):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Block(zoo_hf.Block):
    attention_class = Attention


class HFGPT(zoo_hf.HFGPT):
    block_class = Block


def build():
    return zoo_hf.build(HFGPT)
