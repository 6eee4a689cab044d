"""One optimisation step, evaluation, and the overfit-one-batch check; the
machinery a longer run adds around them: gradients accumulated over
microbatches, weight decay by tensor rank, a warm-up schedule, gradient
clipping, and checkpoints that resume exactly.

Seed 004, "Training: prove it is happening"; seed 001, "In the real world"
(accumulation, warm-up, clipping and checkpoints each have a distinct job).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .data import IGNORE_INDEX


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW parameter groups: matrices decay, vectors do not.

    Seed 000 §8, "A few nanoGPT details that should remain
    implementation-specific" (weight decay): decaying tensors with ndim >= 2
    (Linear and Embedding weights) and exempting one-dimensional ones
    (biases, LayerNorm gains and shifts) is the reference code's convention,
    not a theorem. A tied matrix appears once.

    Returns:
        [{"params": ndim >= 2, "weight_decay": weight_decay},
         {"params": ndim < 2, "weight_decay": 0.0}]
    """
    params = [p for p in {id(p): p for p in model.parameters()}.values() if p.requires_grad]
    matrices = [p for p in params if p.dim() >= 2]
    vectors = [p for p in params if p.dim() < 2]
    return [{"params": matrices, "weight_decay": weight_decay},
            {"params": vectors, "weight_decay": 0.0}]


def make_optimizer(model: nn.Module, lr: float = 1e-3,
                   weight_decay: float = 0.01, split_decay: bool = False) -> torch.optim.AdamW:
    """AdamW over the model's parameters, with the fused kernel where it exists.

    Seed 001, "Parts 3 and 4: inspect and train the bigram" (AdamW keeps
    running averages, so it is built once, outside the loop). The fused kernel updates every
    parameter in one pass per step instead of a chain of per-tensor ops; the
    arithmetic is AdamW's. On a 2-core CPU it takes the engine's default
    model from about 3.2 ms to 0.7 ms per step (``benchmarks/run.py``). Any
    parameter off the CPU and CUDA, or not floating point, falls back to
    the plain implementation.

    Args:
        lr: learning rate.
        weight_decay: decoupled weight decay (torch's default, 0.01).
        split_decay: decay only tensors with ndim >= 2 (``decay_groups``);
            by default every parameter decays, as torch's AdamW does.
    """
    params = list(model.parameters())
    fused = all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params)
    groups = decay_groups(model, weight_decay) if split_decay else params
    return torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay, fused=fused or None)


def warmup_schedule(optimizer: torch.optim.Optimizer, warmup_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up to the optimizer's learning rate, then constant.

    Update k (counted from 0) runs at lr * min(1, (k + 1) / warmup_steps),
    provided ``scheduler.step()`` follows ``optimizer.step()`` (as in
    ``train_step``): for 4 warm-up steps the first five updates use 0.25,
    0.5, 0.75, 1 and 1 times lr. Seed 001, "In the real world" (scheduling
    changes the update scale over the run).

    Raises:
        ValueError: if warmup_steps < 1.
    """
    if warmup_steps < 1:
        raise ValueError(f"warmup_steps must be at least 1, got {warmup_steps}.")
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: min(1.0, (k + 1) / warmup_steps))


def cosine_schedule(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int,
                    min_lr_ratio: float = 0.1) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up, then a half cosine from the peak down to ``min_lr_ratio`` times lr.

    The schedule of most GPT training runs. Update k (counted from 0, with
    ``scheduler.step()`` after ``optimizer.step()``) runs at lr * factor(k):
    (k + 1) / warmup_steps while k < warmup_steps; after that, with the
    decay's progress p = (k - warmup_steps) / (total_steps - 1 - warmup_steps),
    factor = min_lr_ratio + (1 - min_lr_ratio) * (1 + cos(pi * p)) / 2.
    The decay starts at the peak the warm-up reached (p = 0) and reaches the
    floor on the last of the ``total_steps`` updates (p = 1); any update
    after that stays at the floor.

    Raises:
        ValueError: if warmup_steps < 1, total_steps leaves no update to
            decay over (total_steps <= warmup_steps + 1), or min_lr_ratio is
            outside [0, 1].
    """
    if warmup_steps < 1:
        raise ValueError(f"warmup_steps must be at least 1, got {warmup_steps}.")
    if total_steps <= warmup_steps + 1:
        raise ValueError(f"total_steps ({total_steps}) must exceed warmup_steps + 1 ({warmup_steps + 1}) "
                         "so that the cosine has updates to decay over.")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio}.")
    decay_steps = total_steps - 1 - warmup_steps  # updates from the peak to the floor

    def factor(k: int) -> float:
        if k < warmup_steps:
            return (k + 1) / warmup_steps
        progress = min(1.0, (k - warmup_steps) / decay_steps)  # 0 at the peak, 1 on the last update
        return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer,
               x: torch.Tensor, y: torch.Tensor, *, max_norm: float | None = None,
               scheduler: torch.optim.lr_scheduler.LRScheduler | None = None) -> float:
    """Forward with targets, backward, optional clipping, one optimizer step.

    The order is the algorithm (seed 001, "In the real world"): gradients
    are reset before backward fills them, clipped after backward and before
    the optimizer reads them, and the schedule advances after the step it
    set the learning rate for. Leaves the model's train/eval mode as the
    caller set it.

    Args:
        x, y: (B, T) int64 inputs and targets.
        max_norm: if given, rescale the gradients so that their global L2
            norm is at most max_norm before the step.
        scheduler: if given, advanced once after the step.

    Returns:
        The loss the step was computed from (before the update), in nats
        per token. Seed 001, "Parts 3 and 4": it does not become the
        post-update loss when the weights change.
    """
    _, loss = model(x, targets=y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()


def accumulate_gradients(model: nn.Module, microbatches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Backward several microbatches into one set of gradients, as one batch would fill it.

    Seed 001, "In the real world" (accumulation assembles the effective
    batch of one update) and "Explain it back" (unequal microbatches). The
    gradients are reset first; then each microbatch's loss, a mean over its
    own real targets, is weighted by its share of all the real targets
    before backward adds it into ``.grad``. The weighted means add up to the
    mean over every target, so the gradients equal the full batch's.
    Dividing every loss by the number of microbatches (nanoGPT's loop) is
    the same rule only when the microbatches hold equally many targets.
    The caller then clips and steps, as ``train_step`` does.

    Args:
        model: ``model(x, targets=y)`` returns ``(logits, mean loss)``.
        microbatches: (x, y) pairs, each (B_i, T_i) int64; sizes may
            differ. Targets equal to ``engine.data.IGNORE_INDEX`` (padding)
            do not count.

    Returns:
        The mean loss over every real target, in nats per token, at the
        weights the gradients were taken at.

    Raises:
        ValueError: if the microbatches hold no real target at all.
    """
    counts = [int((y != IGNORE_INDEX).sum()) for _, y in microbatches]
    total = sum(counts)
    if total == 0:
        raise ValueError("the microbatches hold no target to average over; pass at least one (x, y) "
                         "pair whose targets are not all padding.")
    model.zero_grad(set_to_none=True)
    mean = 0.0
    for (x, y), n in zip(microbatches, counts):
        if n == 0:
            continue  # all padding: its mean is 0/0, and its share is zero anyway
        _, loss = model(x, targets=y)  # mean over this microbatch's n targets
        weight = n / total  # this microbatch's share of all the targets
        (loss * weight).backward()  # adds into .grad
        mean += weight * loss.item()
    return mean


def accumulated_step(model: nn.Module, optimizer: torch.optim.Optimizer,
                     microbatches: list[tuple[torch.Tensor, torch.Tensor]], *,
                     max_norm: float | None = None) -> float:
    """One update from several microbatches: accumulate, optionally clip, step once.

    Seed 001, "Backward and update are different operations": accumulation
    emulates a larger batch only when every microbatch's gradient is taken
    at the same weights and the optimizer steps once, after the last one.
    Stepping after each microbatch is a different procedure: every later
    gradient is evaluated at weights the earlier steps already moved.

    Args:
        model, optimizer: as for ``train_step``.
        microbatches: (x, y) pairs, each (B_i, T_i) int64.
        max_norm: clip the accumulated gradients' global norm to this, if given.

    Returns:
        The mean loss over every real target, at the weights the update
        started from (``accumulate_gradients``).

    Raises:
        ValueError: if the microbatches hold no real target at all.
    """
    mean = accumulate_gradients(model, microbatches)  # every gradient at the same weights
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()  # one update for the whole effective batch
    return mean


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Mean cross-entropy loss on (x, y) in eval mode, without gradients.

    The caller's train/eval mode is restored afterwards, even on error.

    Args:
        x, y: (B, T) int64 inputs and targets.

    Returns:
        The loss in nats per token.
    """
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            _, loss = model(x, targets=y)
        return loss.item()
    finally:
        model.train(was_training)


def overfit_batch(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                  steps: int, lr: float = 1e-3) -> list[float]:
    """Train on one fixed batch with AdamW; the loss should head toward zero.

    Seed 004, the CAPABILITY link of the learning chain. The model runs in
    train mode and its previous mode is restored afterwards.

    Returns:
        The loss (nats per token) before each of the ``steps`` updates.
    """
    optimizer = make_optimizer(model, lr=lr)
    was_training = model.training
    model.train()
    try:
        return [train_step(model, optimizer, x, y) for _ in range(steps)]
    finally:
        model.train(was_training)


def save_checkpoint(f, model: nn.Module, optimizer: torch.optim.Optimizer, step: int,
                    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
                    generator: torch.Generator | None = None) -> None:
    """Write what a resumed run needs to continue the same trajectory.

    The model's weights restore a forward pass; resuming *training* also
    needs the optimizer's state (AdamW's running averages and step counts),
    the schedule's position, the number of updates taken, the data position
    and the random-number state (seed 001, "In the real world": a checkpoint
    with weights only is not a resumable run). The data position of a
    sampler that draws random windows (``engine.data.get_batch``) is its
    generator's state; torch's own random state decides dropout's masks.

    Args:
        f: a path or a binary file object (``io.BytesIO`` works).
        step: updates taken so far.
        generator: the batch sampler's generator, if the caller has one.
    """
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": int(step)}
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    if generator is not None:
        state["data_rng"] = generator.get_state()  # where the sampler is: the data position
    state["torch_rng"] = random_state()  # dropout's masks continue where they were
    torch.save(state, f)


def random_state() -> dict:
    """torch's random-number state: the CPU generator's, and every CUDA device's once CUDA is in use."""
    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_random_state(state: dict) -> None:
    """Restore what ``random_state`` returned (tensors may come back on any device)."""
    torch.set_rng_state(state["cpu"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def load_checkpoint(f, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
                    generator: torch.Generator | None = None) -> int:
    """Restore what ``save_checkpoint`` wrote into a freshly built model (and optimizer).

    Tensors are mapped to the model's device. Build the optimizer over the
    same parameters, in the same order, before loading. The data sampler's
    state goes back into ``generator`` when one is given, and torch's random
    state is restored, so dropout continues with the masks it would have drawn.

    Args:
        f: a path or a binary file object positioned at the checkpoint.

    Returns:
        The number of updates the checkpoint had taken.

    Raises:
        KeyError: if the file lacks the model's state (not a checkpoint).
        RuntimeError: if the weights do not fit the model.
    """
    device = next(model.parameters()).device
    state = torch.load(f, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None and "scheduler" in state:
        scheduler.load_state_dict(state["scheduler"])
    if generator is not None and "data_rng" in state:
        generator.set_state(state["data_rng"].cpu())
    if "torch_rng" in state:
        set_random_state(state["torch_rng"])
    return int(state["step"])


def scaled_train_step(model: nn.Module, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler,
                      x: torch.Tensor, y: torch.Tensor, max_norm: float = 1.0,
                      autocast_dtype: torch.dtype | None = None) -> float:
    """One step with loss scaling and gradient clipping, the mixed-precision recipe.

    Seed 000, section 7 ("Initialization, precision, and evaluation mode"):
    loss scaling is its own mechanism beside autocast. The loss is multiplied
    by the scaler's factor (65,536 at the start) before backward, so small
    float16 gradients do not underflow; every gradient then arrives that
    many times too large. ``scaler.unscale_`` divides them back in place,
    and only then does clipping see their true norm. ``scaler.step`` skips
    the update when a gradient is inf or NaN, and ``scaler.update`` adapts
    the factor.

    Args:
        scaler: a ``torch.amp.GradScaler`` for x's device type.
        x, y: (B, T) int64 inputs and targets.
        max_norm: the largest total gradient norm the update may use.
        autocast_dtype: run the forward under ``torch.autocast`` in this
            dtype (float16, bfloat16), or None for the model's own dtype.

    Returns:
        The loss before the step, in nats per token (unscaled).
    """
    with torch.autocast(x.device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
        _, loss = model(x, targets=y)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)  # the gradients' true size, before anything reads their norm
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
