"""PaLM-pytorch's own files (vendored beside this one) at a tiny size, clean and with one planted bug.

PaLM's block is parallel (attention and SwiGLU from one fused projection,
``fused_attn_ff_proj``, added to the stream by a ``Residual`` wrapper in an
``nn.Sequential``), its attention is multi-query with scores by ``einsum``,
and its ``AutoregressiveWrapper`` is a loss wrapper whose ``generate`` hides
its signature behind a decorator without ``functools.wraps`` and returns the
new tokens alone.
"""

import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name, file, edit=None):
    """The vendored ``file`` run as module ``name``; ``edit``, (old, new), plants a bug in its source as
    it is read (the file on disk stays as vendored), ``old`` found exactly once."""
    path = os.path.join(HERE, file)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if edit is None:
        spec.loader.exec_module(module)
        return module
    with open(path, encoding="utf-8") as f:
        source = f.read()
    assert source.count(edit[0]) == 1, f"{edit[0]!r} is not in {file} exactly once"
    exec(compile(source.replace(*edit), path, "exec"), module.__dict__)
    return module


def _vendored(edit=None):
    """palm_pytorch.py (with ``edit`` planted, where given) and autoregressive_wrapper.py, with einops'
    ``rearrange`` from the stub where einops is not installed (the stub is in ``sys.modules`` only while
    they import)."""
    stub = None
    if importlib.util.find_spec("einops") is None:
        stub = sys.modules["einops"] = _load("einops", "einops_stub.py")
    try:
        return _load("palm_pytorch_model", "palm_pytorch.py", edit), _load("palm_pytorch_wrapper",
                                                                           "autoregressive_wrapper.py")
    finally:
        if stub is not None and sys.modules.get("einops") is stub:
            del sys.modules["einops"]


def _build(palm, wrapper):
    torch.manual_seed(0)
    net = palm.PaLM(dim=64, num_tokens=64, depth=2, dim_head=16, heads=4, ff_mult=2)
    model = wrapper.AutoregressiveWrapper(net, max_seq_len=64)
    return {"model": model, "optimizer": torch.optim.Adam(model.parameters(), lr=1e-3)}


def build():
    return _build(*_vendored())


def build_mask_shifted():
    """The planted bug: the causal mask built with ``triu(2)`` for ``triu(1)``, so each position also reads
    the next one."""
    palm, wrapper = _vendored()

    def get_mask(self, n, device):
        return torch.ones((n, n), device=device, dtype=torch.bool).triu(2)

    palm.ParallelTransformerBlock.get_mask = get_mask
    return _build(palm, wrapper)


def build_residual_dropped():
    """The planted bug: ``Residual`` returns its block's output without adding its input."""
    palm, wrapper = _vendored()
    palm.Residual.forward = lambda self, x: self.fn(x)
    return _build(palm, wrapper)


def build_softmax_over_queries():
    """The planted bug: the attention weights normalised over the queries, ``sim.softmax(dim=-2)``, so
    each key's weights sum to 1 over the query positions instead of each query's over the keys (a later
    query's scores then change an earlier query's weights)."""
    return _build(*_vendored(("attn = sim.softmax(dim=-1)", "attn = sim.softmax(dim=-2)")))


def build_scale_width():
    """The planted departure: q scaled by 1/sqrt(heads x dim_head), the attention's whole width, where
    PaLM scales by 1/sqrt(dim_head), the head size (a scale that keeps the contract, so a warning)."""
    return _build(*_vendored(("self.scale = dim_head**-0.5", "self.scale = (heads * dim_head) ** -0.5")))
