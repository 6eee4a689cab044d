"""The performance ledger: where a training step spends its time and memory.

Seed 004, "Performance" (the book's Chapter 12 ledger): split one training
step into four phases — forward, loss, backward, optimizer — time each (on
CUDA with a synchronize at every phase boundary, so the clock measures the
work and not the launch), take the median over repeated steps after a
warm-up, and report throughput (tokens per second) and peak memory.

The clock follows the device too. On CUDA it is the wall clock around a
synchronize (the GPU's work is not this process's CPU time). On the CPU it is
the process's CPU time (``time.process_time``): the check runs torch on one
thread, so CPU time is the work itself, and a busy neighbour that takes the
core away for a while lengthens the wall clock but not this — a phase's
share, and so which phase dominates, cannot be flipped by the machine's load.

Peak memory is measured differently per device, and the ledger says which:

* CUDA: ``torch.cuda.max_memory_allocated`` after a reset — tensor bytes
  held by the caching allocator at the high point of the step.
* CPU: the process's peak resident set size from
  ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` — a high-water mark of the
  whole process (Python, torch's libraries, every tensor). It never goes
  down, so ``isolated`` runs each point of a sweep in a fresh forked process
  and reports the peak above the RSS the fork started with.

Budgets here are sized for two CPU cores: the sweeps use a 2-layer, C = 64
model and a few repeats per point (see ``SWEEP_MODEL``).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import statistics
import time
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
from .forward import logits_of

PHASES = ("forward", "loss", "backward", "optimizer")

#: The model the sweeps train (small enough for 2 CPU cores).
SWEEP_MODEL = dict(vocab_size=37, n_layer=2, n_head=4, n_embd=64)



def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_rss_bytes() -> int:
    """This process's peak resident set size, bytes (ru_maxrss; KiB on Linux, bytes on macOS)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def current_rss_bytes() -> int:
    """This process's resident set size now, bytes (Linux /proc; else the peak)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return peak_rss_bytes()


def phase_ledger(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
                 repeats: int = 7, warmup: int = 2) -> dict:
    """Time the four phases of a training step; median over ``repeats`` steps.

    Args:
        model: maps (B, T) ids to logits (B, T, V) (or a tuple whose first
            element is the logits); called without targets, so the loss is
            its own phase.
        optimizer: owns the model's parameters; it really steps.
        x, y: (B, T) int64 inputs and targets on the model's device.
        repeats: measured steps; warmup: steps run first and not measured.

    Returns:
        {"phases": {phase: median ms}, "samples": {phase: [ms, ...]},
        "step_ms": median of the per-step sums, "tokens_per_s": B*T / step,
        "peak_bytes", "peak_kind" ("cuda max_memory_allocated" or
        "process peak RSS"), "device", "batch", "block", "synchronized",
        "clock" ("wall" on CUDA, "process CPU" on the CPU: module docstring)}.
    """
    device = x.device
    clock = time.perf_counter if device.type == "cuda" else time.process_time
    B, T = x.shape
    model.train()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    samples = {p: [] for p in PHASES}
    totals = []
    for step in range(warmup + repeats):
        _sync(device)
        t0 = clock()
        logits = logits_of(model(x))
        _sync(device)
        t1 = clock()
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        _sync(device)
        t2 = clock()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        _sync(device)
        t3 = clock()
        optimizer.step()
        _sync(device)
        t4 = clock()
        if step >= warmup:
            for phase, dt in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                samples[phase].append(dt * 1e3)
            totals.append((t4 - t0) * 1e3)
    phases = {p: statistics.median(v) for p, v in samples.items()}
    step_ms = statistics.median(totals)
    if device.type == "cuda":
        peak, kind = torch.cuda.max_memory_allocated(device), "cuda max_memory_allocated"
    else:
        peak, kind = peak_rss_bytes(), "process peak RSS"
    return {"phases": phases, "samples": samples, "step_ms": step_ms,
            "tokens_per_s": B * T / (step_ms / 1e3), "peak_bytes": int(peak), "peak_kind": kind,
            "device": str(device), "batch": B, "block": T, "synchronized": device.type == "cuda",
            "clock": "wall" if device.type == "cuda" else "process CPU"}


def dominant(phases: dict, clear_ratio: float = 1.5) -> tuple[str, float, bool]:
    """(largest phase, its ratio to the runner-up, whether ratio >= clear_ratio)."""
    ordered = sorted(phases.items(), key=lambda kv: -kv[1])
    top, second = ordered[0], ordered[1]
    ratio = top[1] / max(second[1], 1e-9)
    return top[0], ratio, ratio >= clear_ratio


def isolated(fn: Callable, *args, timeout_s: float = 60.0, **kwargs):
    """Run ``fn(*args, **kwargs)`` in a forked child and return its result.

    On Linux the child is a fresh process whose RSS high-water mark starts at
    its RSS at fork, so a peak measured inside it belongs to this one call.
    Where ``os.fork`` is missing the call runs here instead.

    Raises:
        RuntimeError: the child raised (the message carries its exception),
            died, or ran past ``timeout_s`` (it is killed).
    """
    if not hasattr(os, "fork"):
        return fn(*args, **kwargs)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        code = 0
        try:
            payload = pickle.dumps(("ok", fn(*args, **kwargs)))
        except BaseException as exc:  # report, never escape the child
            payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
            code = 1
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(write_fd, view):]
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks, deadline = [], time.monotonic() + timeout_s
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                os.kill(pid, signal.SIGKILL)
                raise RuntimeError(f"the measurement did not finish within {timeout_s:g} s")
            ready, _, _ = select.select([read_fd], [], [], min(remaining, 0.5))
            if ready:
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    if not chunks:
        raise RuntimeError("the measurement process died without a result")
    status, value = pickle.loads(b"".join(chunks))
    if status != "ok":
        raise RuntimeError(value)
    return value


def measure_step(config_kwargs: dict, batch: int, block: int, device: str = "cpu", seed: int = 0,
                 repeats: int = 3, warmup: int = 1, threads: int | None = None) -> dict:
    """Build an engine GPT + AdamW, run ``phase_ledger`` on one random batch.

    Meant to run inside ``isolated``: the reported ``peak_above_start`` is the
    peak (CPU: RSS, CUDA: allocated bytes) above what the process held
    before the model was built.

    Returns:
        {"batch", "block", "step_ms", "tokens_per_s", "peak_bytes",
        "peak_above_start", "peak_kind", "phases"}.
    """
    from engine.config import GPTConfig
    from engine.model import GPT

    if threads:
        torch.set_num_threads(threads)
    dev = torch.device(device)
    start = current_rss_bytes() if dev.type == "cpu" else 0
    torch.manual_seed(seed)
    config = GPTConfig(**{**config_kwargs, "block_size": max(block, config_kwargs.get("block_size", 0))})
    model = GPT(config).to(dev)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, config.vocab_size, (batch, block), generator=g).to(dev)
    y = torch.randint(0, config.vocab_size, (batch, block), generator=g).to(dev)
    ledger = phase_ledger(model, optimizer, x, y, repeats=repeats, warmup=warmup)
    return {"batch": batch, "block": block, "step_ms": ledger["step_ms"], "tokens_per_s": ledger["tokens_per_s"],
            "peak_bytes": ledger["peak_bytes"], "peak_above_start": ledger["peak_bytes"] - start,
            "peak_kind": ledger["peak_kind"], "phases": ledger["phases"]}


def sweep(axis: str, values: list[int], fixed: int, config_kwargs: dict | None = None, device: str = "cpu",
          seed: int = 0, repeats: int = 3, threads: int | None = None, timeout_s: float = 60.0) -> list[dict]:
    """Batch-size or sequence-length sweep, one isolated process per point.

    Args:
        axis: "batch" (values are B, ``fixed`` is T) or "block" (values are
            T, ``fixed`` is B).
        values: the sizes to measure, in order.
        config_kwargs: GPTConfig fields (default ``SWEEP_MODEL``).

    Returns:
        One ``measure_step`` dict per value.
    """
    if axis not in ("batch", "block"):
        raise ValueError(f"axis must be 'batch' or 'block', got {axis!r}")
    config_kwargs = dict(SWEEP_MODEL if config_kwargs is None else config_kwargs)
    points = []
    for v in values:
        B, T = (v, fixed) if axis == "batch" else (fixed, v)
        kwargs = dict(device=device, seed=seed, repeats=repeats, threads=threads)
        if device == "cpu":  # a fresh process per point: RSS is a high-water mark
            points.append(isolated(measure_step, config_kwargs, B, T, timeout_s=timeout_s, **kwargs))
        else:  # CUDA resets its own peak counter
            torch.cuda.empty_cache()
            points.append(measure_step(config_kwargs, B, T, **kwargs))
    return points
