"""Bug (RESIDUAL): the residual stream is rebuilt from the normalised stream,
x = ln_1(x); x = x + attn(x), so every block starts over from ln(x)."""

import zoo_nano


class Block(zoo_nano.Block):
    def forward(self, x):
        x = self.ln_1(x)
        x = x + self.attn(x)
        return x + self.mlp(self.ln_2(x))


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(model_class=GPT)
