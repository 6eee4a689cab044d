"""Bug (EVAL): the block keeps its dropout in a plain list, where model.eval() cannot reach it."""

import torch.nn as nn

import zoo_nano


class Block(zoo_nano.Block):
    def __init__(self, config):
        super().__init__(config)
        self.drops = [nn.Dropout(0.1)]

    def forward(self, x):
        x = x + self.drops[0](self.attn(self.ln_1(x)))
        return x + self.mlp(self.ln_2(x))


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(model_class=GPT)
