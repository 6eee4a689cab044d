"""CACHE says a NaN as a NaN, on the engine's GPT as edit mode's instruments audit it: a cached path whose
logits are NaN where the full forward's are finite differs in kind, never "by 0"; NaN logits on both paths
are named beside "equal"; a forward whose every logit is NaN gives the cache no number to equal."""

import functools

import pytest
import torch

from engine.config import preset
from engine.model import GPT
from exercises.audit import audit

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


class CacheNaN(GPT):
    """The cached path makes token 0's logit NaN at every position; the full forward's are finite."""

    def forward(self, idx, targets=None, cache=None):
        logits, loss = super().forward(idx, targets, cache)
        if cache is not None:
            logits = logits.clone()
            logits[..., 0] = float("nan")
        return logits, loss


class NaNRow(GPT):
    """An untied head whose row for token 0 is NaN: that logit is NaN on every path, the cached one included."""

    def __init__(self, config):
        super().__init__(config)
        self.lm_head.weight = torch.nn.Parameter(self.lm_head.weight.detach().clone())
        with torch.no_grad():
            self.lm_head.weight[0] = float("nan")


class NaNEmbedding(GPT):
    """One NaN in the (tied) token table: attention spreads it to every logit of every position."""

    def __init__(self, config):
        super().__init__(config)
        with torch.no_grad():
            self.wte.weight[0, 0] = float("nan")


@functools.lru_cache(maxsize=None)
def cache_link(model_class):
    def build():
        torch.manual_seed(0)
        return model_class(preset("small"))
    return next(link for link in audit(build, overfit_steps=0).links if link.name == "CACHE")


def test_nan_logits_on_the_cached_path_only_differ_in_kind_and_are_named():
    cache = cache_link(CacheNaN)
    assert cache.status == "FAIL"
    assert cache.verdict.startswith("cached logits differ from the full forward in kind: 128 logits are NaN or "
                                    "infinite on one path and not on the other"), cache.verdict
    assert "by 0" not in cache.verdict


def test_nan_logits_on_both_paths_are_named_beside_equal():
    cache = cache_link(NaNRow)
    assert cache.status == "ok"
    assert cache.verdict.startswith("cached logits equal the full forward's where finite, and are NaN where it is")
    assert "64 of the full forward's 2368 logits are NaN (not finite) on both paths" in cache.verdict


def test_a_forward_whose_every_logit_is_nan_gives_the_cache_nothing_to_equal():
    cache = cache_link(NaNEmbedding)
    assert (cache.status, cache.verdict) == ("skip", "every one of the full forward's 2368 logits is NaN (not "
                                                     "finite): there is no number for the cached logits to equal")
