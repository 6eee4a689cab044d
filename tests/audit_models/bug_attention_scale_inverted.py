"""Bug (ATTENTION): scores multiplied by sqrt(D) instead of divided by it."""

import math

import torch
from torch.nn import functional as F

import zoo_nano


class InvertedScale(zoo_nano.SelfAttention):
    def attend(self, q, k, v):
        T = q.size(2)
        att = (q @ k.transpose(-2, -1)) * math.sqrt(k.size(-1))
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        return F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1) @ v


class Block(zoo_nano.Block):
    attention_class = InvertedScale


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(model_class=GPT)
