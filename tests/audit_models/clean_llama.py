"""Clean control, a model that keeps its own KV cache (LLaMA's forward(tokens, start_pos))."""

import zoo_llama


def build():
    return zoo_llama.build()
