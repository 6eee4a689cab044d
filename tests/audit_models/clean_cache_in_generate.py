"""Clean control, nanoGPT's own zoo model with a Hugging Face-style cache keyword it never honours:
forward(idx, targets=None, past_key_values=None, use_cache=None) -> (logits, loss), and no generate either
(build_no_generate), so CACHE has no cached path to compare and must say so."""

import zoo_nano


class KeywordOnly(zoo_nano.GPT):
    def forward(self, idx, targets=None, past_key_values=None, use_cache=None):
        return super().forward(idx, targets)


class NoGenerate(KeywordOnly):
    generate = None


def build():
    return zoo_nano.build(model_class=KeywordOnly)


def build_no_generate():
    return zoo_nano.build(model_class=NoGenerate)
