"""engine.train.accumulated_step: microbatches accumulated into one update."""

import pytest
import torch

from engine.config import preset
from engine.model import GPT
from engine.train import accumulated_step, make_optimizer, train_step


def _model():
    torch.manual_seed(0)
    return GPT(preset("small", n_layer=1, dropout=0.0))


def _batch():
    g = torch.Generator().manual_seed(0)
    data = torch.randint(0, 37, (8, 17), generator=g)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


def _flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def _grads(model):
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def test_equal_microbatches_step_like_the_full_batch():
    x, y = _batch()
    full, pieces = _model(), _model()
    train_step(full, make_optimizer(full, lr=1e-3), x, y)
    optimizer = make_optimizer(pieces, lr=1e-3)
    steps = []
    optimizer.register_step_pre_hook(lambda *args: steps.append(1))
    loss = accumulated_step(pieces, optimizer, [(x[i:i + 2], y[i:i + 2]) for i in range(0, 8, 2)])
    assert len(steps) == 1  # one update for four microbatches
    # The update is taken from one gradient: the full batch's mean, summed another way. The mean over
    # N = B·T targets, in float32, differs between two orders of summation by at most about N·u times
    # the largest term (u = 2⁻²⁴, the unit roundoff; the per-target terms are bounded by the mean's
    # largest entry times a few, which the factor 4 covers). AdamW's step divides by sqrt(v) + eps, so a
    # gradient near 0 turns that rounding into up to lr of movement: the parameters are not compared.
    N, u = x.numel(), torch.finfo(torch.float32).eps / 2
    g_full, g_pieces = _grads(full), _grads(pieces)
    bound = 4 * N * u * g_full.abs().max().item()
    assert (g_full - g_pieces).abs().max().item() <= bound
    assert loss == pytest.approx(3.6, abs=0.2)  # about ln 37 = 3.61 at the start


def test_clipping_bounds_the_accumulated_gradient():
    x, y = _batch()
    model = _model()
    before = _flat(model).clone()
    accumulated_step(model, torch.optim.SGD(model.parameters(), lr=1.0), [(x, y)], max_norm=1e-3)
    assert (_flat(model) - before).norm().item() == pytest.approx(1e-3, rel=1e-3)  # SGD lr 1: the clipped norm


def test_no_real_targets_is_one_clear_error():
    x, y = _batch()
    model = _model()
    with pytest.raises(ValueError, match="no target to average over"):
        accumulated_step(model, make_optimizer(model), [(x, torch.full_like(y, -100))])
