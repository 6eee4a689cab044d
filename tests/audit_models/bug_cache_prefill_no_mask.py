"""Bug (CACHE): the causal mask is built only for the first call (start_pos == 0); a
multi-token chunk after it attends to its own future tokens through the cache."""

import zoo_llama


class Attention(zoo_llama.Attention):
    def mask(self, start_pos, T, device):
        return super().mask(start_pos, T, device) if start_pos == 0 else None


class TransformerBlock(zoo_llama.TransformerBlock):
    attention_class = Attention


class Transformer(zoo_llama.Transformer):
    block_class = TransformerBlock


def build():
    return zoo_llama.build(Transformer)
