"""Clean control, nanochat's initialisation: the output projections and the head start at zero, so the
logits do not depend on the input at init and most parameters get their first gradient a step or two later;
its generate is a Python generator over a list of ids, yielding one int at a time."""

import zoo_modern


def build():
    return zoo_modern.build(zero_init=True, model_class=zoo_modern.StreamingGPT)
