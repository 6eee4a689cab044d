"""Bug (REGISTRATION): the causal mask is a plain tensor attribute, not a buffer: it is
missing from state_dict() and stays behind when the model moves to another dtype or device."""

import math

import torch
from torch.nn import functional as F

import zoo_nano


class MaskedAttention(zoo_nano.SelfAttention):
    def __init__(self, config):
        super().__init__(config)
        self.mask = torch.tril(torch.ones(config.block_size, config.block_size))

    def attend(self, q, k, v):
        T = q.size(2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        return F.softmax(att, dim=-1) @ v


class Block(zoo_nano.Block):
    attention_class = MaskedAttention


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(model_class=GPT)
