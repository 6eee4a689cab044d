"""Clean control: three special tokens past the 37 characters are banned from the
output with -inf logits, by design. Finite logits are compared by value, and the
-inf pattern must simply stay the same."""

import torch

import zoo_nano


class BannedGPT(zoo_nano.GPT):
    n_real = 37

    def head(self, x):
        logits = self.lm_head(x)
        return logits.masked_fill(torch.arange(logits.size(-1), device=x.device) >= self.n_real, float("-inf"))


def build():
    return zoo_nano.build(zoo_nano.Config(vocab_size=40), BannedGPT)
