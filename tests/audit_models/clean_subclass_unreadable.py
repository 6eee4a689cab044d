"""Clean control: a subclass of the zoo's Meta-style Llama (rotary table freqs_cis and KV cache kept as
plain attributes that the parent's forward moves itself) whose own forward only calls its parent's, made
from text with no file behind it, so no source can be read."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "zoo"))
import meta_style  # noqa: E402  (tests/zoo)

SOURCE = '''
class Wrapped(meta_style.Transformer):
    def forward(self, tokens, start_pos):
        return super().forward(tokens, start_pos)
'''
namespace = {"meta_style": meta_style}
exec(compile(SOURCE, "<generated>", "exec"), namespace)
Wrapped = namespace["Wrapped"]


def build():
    return {"model": Wrapped(meta_style.ModelArgs())}
