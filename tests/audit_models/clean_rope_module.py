"""Clean control, rotary kept as an nn.Module that rotates q and k itself (GPT-NeoX/litgpt fashion), no
attribute naming the head count (head_dim only), forward(idx, targets=None, past_key_values=None,
use_cache=None) returning (logits, loss) with the one KV cache inside generate."""

import zoo_modern


def build():
    return zoo_modern.build()
