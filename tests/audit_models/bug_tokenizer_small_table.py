"""Bug (TOKENIZER): the model was built for 32 tokens, the corpus has 37 characters."""

import zoo_nano


def build():
    return zoo_nano.build(zoo_nano.Config(vocab_size=32))
