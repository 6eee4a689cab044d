"""Bug (RESIDUAL): the attention branch replaces the stream instead of adding to it."""

import zoo_nano


class Block(zoo_nano.Block):
    def forward(self, x):
        x = self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(model_class=GPT)
