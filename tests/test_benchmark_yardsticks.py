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


def test_the_bare_app_yardstick_has_the_home_screens_kinds_of_widgets(tmp_path):
    """The first screen's floor is only honest if the bare app draws what the home screen draws: the
    same Textual widgets, the tree about the shipped catalog's size, and no more."""
    import asyncio
    import re

    from textual.containers import VerticalScroll

    from tutor.store.catalog_cache import load_catalog
    from tutor.store.progress import ProgressStore
    from tutor.ui.app import build_app

    class IdleRunner:
        def warm_up(self):
            return {}

        def cancel(self):
            pass

        def close(self):
            pass

    def textual_kind(widget) -> str:
        return next(c.__name__ for c in type(widget).__mro__ if c.__module__.startswith("textual."))

    kinds, lines = set(), 0

    async def main():
        nonlocal kinds, lines
        catalog = load_catalog()
        app = build_app(catalog, ProgressStore(tmp_path), "ada", IdleRunner())
        async with app.run_test(size=(100, 32)) as pilot:
            await pilot.pause()
            screen = pilot.app.screen
            shown = [*screen.children, *(c for w in screen.children if isinstance(w, VerticalScroll)
                                         for c in w.children)]
            kinds = {textual_kind(w) for w in shown}
            lines = len(catalog.sets) + len(catalog.exercises)
    asyncio.run(main())
    code = load_benchmark().BARE_APP_CODE
    assert kinds == set(re.findall(r"yield (\w+)\(", code)) | {"Tree", "VerticalScroll"}
    assert kinds == {"Header", "Static", "Input", "Tree", "VerticalScroll", "Footer"}
    sets, leaves = map(int, re.search(r"for s in range\((\d+)\).*?for e in range\((\d+)\)", code, re.S).groups())
    assert 0.75 * lines <= sets * (1 + leaves) <= 1.25 * lines  # 13 × 12 = 156 lines beside the catalog's
