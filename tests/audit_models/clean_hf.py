"""Clean control, Hugging Face style: keyword arguments in HF's order, labels shifted
inside, past_key_values, its own tokenizer with a padding id, tied embeddings."""

import zoo_hf


def build():
    return zoo_hf.build()
