"""The benchmark's yardsticks measure what they claim to (no timings here).

The engine-throughput figure compares the engine with a nanoGPT-style
reference and divides by GEMM throughput; both only mean something if the
reference is the same model and the GEMM list is the model's own products.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from engine.config import GPTConfig
from engine.model import GPT

ROOT = Path(__file__).resolve().parent.parent


def load_benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_run", ROOT / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_is_the_engines_model_in_other_code():
    bench = load_benchmark()
    torch.manual_seed(0)
    engine = GPT(GPTConfig(vocab_size=37, block_size=64, n_layer=4, n_head=4, n_embd=128))
    reference = bench._reference_gpt(torch, 37, 64, 4, 4, 128)
    unique = lambda m: sorted(p.numel() for p in {id(p): p for p in m.parameters()}.values())
    assert unique(reference) == unique(engine)
    x = torch.randint(0, 37, (2, 64))
    logits, loss = reference(x, x)
    assert logits.shape == (2, 64, 37) and loss.ndim == 0
    # causal like the engine: changing the last token moves no earlier position's logits
    changed = x.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 37
    with torch.no_grad():
        assert torch.equal(reference(x, x)[0][:, :-1], reference(changed, x)[0][:, :-1])


def test_gemm_list_counts_three_products_per_linear():
    bench = load_benchmark()
    rows, C, V = 8, 16, 5
    linears = [(C, 3 * C, 2), (C, V, 1)]
    products = bench._gemm_products(torch, "cpu", rows, linears)
    assert len(products) == 3 * 2 + 3 * 1
    # by hand: 2·rows·K·N per product, three products, count times
    assert sum(f for f, _ in products) == 3 * 2 * rows * (C * 3 * C * 2 + C * V)
    assert sum(f for f, _ in products) == 77_568  # 6 · 8 · (768 · 2 + 80)
    shapes = sorted(tuple(thunk().shape) for _, thunk in products[:6])  # the first Linear, twice
    assert shapes == sorted([(rows, 3 * C), (rows, C), (3 * C, C)] * 2)
