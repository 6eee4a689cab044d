"""Bug (EVAL): SDPA's dropout_p is passed without checking self.training."""

from torch.nn import functional as F

import zoo_nano


class Attention(zoo_nano.SelfAttention):
    def attend(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout, is_causal=True)


class Block(zoo_nano.Block):
    attention_class = Attention


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(zoo_nano.Config(dropout=0.1), GPT)
