"""Clean control, a rotary module that hands back cos and sin tables the attention applies inline (Hugging
Face fashion, no function to watch), with q and k RMS-normed after the rotation (qk-norm)."""

import zoo_modern


def build():
    return zoo_modern.build(rotary="tables", qk_norm=True)
