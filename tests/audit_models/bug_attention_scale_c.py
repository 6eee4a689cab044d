"""Bug (ATTENTION): scores scaled by 1/sqrt(C), the model width, instead of 1/sqrt(D),
the head size."""

import math

from torch.nn import functional as F

import zoo_nano


class WideScale(zoo_nano.SelfAttention):
    def attend(self, q, k, v):
        C = q.size(1) * q.size(-1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / math.sqrt(C))


class Block(zoo_nano.Block):
    attention_class = WideScale


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(model_class=GPT)
