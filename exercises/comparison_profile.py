"""Checks for the set ``comparison``: which operators a training step's time
goes to (seed 004, "Performance": the phase ledger "does not by itself prove
that scaled_dot_product_attention is the dominant operator inside backward;
that would require the profiler").

``torch.profiler`` records every ATen operator a forward and backward call;
its self time is the time spent in an operator minus its children. Timings
vary from run to run and machine to machine, so only an ordering with a
margin is graded, as the phase ledger does.
"""

import collections

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

MARGIN = 1.25  # a family dominates when its self time is at least this many times the other's
MATMUL = {"aten::mm", "aten::addmm", "aten::bmm"}
#: The operators shown one by one, in this order (CPU kernel names; others are in the families only).
SHOWN = ("aten::mm", "aten::addmm", "aten::_scaled_dot_product_flash_attention_for_cpu",
         "aten::_scaled_dot_product_flash_attention_for_cpu_backward", "aten::gelu_backward",
         "aten::native_layer_norm_backward")


def _family(name: str) -> str:
    if "scaled_dot_product" in name or "flash_attention" in name:
        return "attention kernel"
    if name in MATMUL:
        return "matrix products"
    return "everything else"


def operator_attribution(ctx: Context) -> Measurement:
    """Self CPU time by operator family over one forward and backward of the shipped workload.

    The default engine (4 layers, C = 128) on 8 windows of 64 tokens, 2
    warm-up steps, then one profiled forward + backward. Families: matrix
    products (``aten::mm``, ``addmm``, ``bmm``), the fused attention kernel
    (SDPA's forward and backward), everything else. Observed: "a" when the
    matrix products take at least 1.25× the attention kernel's self time,
    "b" when the attention kernel takes 1.25× theirs, "c" otherwise. Run
    on the CPU whatever the device: on a GPU an operator's self CPU time is
    the time to launch its kernel, not its arithmetic.
    """
    from torch.profiler import ProfilerActivity, profile

    from exercises.snippets.workload import WORKLOAD

    ctx = ctx.on_cpu()

    model = ctx.gpt("seed", n_layer=WORKLOAD["n_layer"], n_embd=WORKLOAD["n_embd"])
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, model.config.vocab_size, (WORKLOAD["batch"], WORKLOAD["block"] + 1), generator=g)
    x, y = data[:, :-1].to(ctx.device), data[:, 1:].to(ctx.device)
    for _ in range(2):
        model.zero_grad(set_to_none=True)
        model(x, targets=y)[1].backward()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if x.is_cuda else [])
    with profile(activities=activities) as prof:
        model.zero_grad(set_to_none=True)
        model(x, targets=y)[1].backward()
    events = prof.key_averages()
    totals = collections.Counter()
    for e in events:
        totals[_family(e.key)] += e.self_cpu_time_total
    whole = sum(totals.values()) or 1.0
    mm, attn = totals["matrix products"], totals["attention kernel"]
    observed = "a" if mm >= MARGIN * attn else "b" if attn >= MARGIN * mm else "c"
    by_name = {e.key: e for e in events}
    shown = [name for name in SHOWN if name in by_name]  # a fixed order: the rows do not reorder with timings
    evidence = [
        table("Self CPU time by family (one forward + backward)", ["family", "share"],
              [[name, f"{totals[name] / whole:.0%}"] for name in ("matrix products", "attention kernel",
                                                                    "everything else")]),
        table("The largest operators of the step", ["operator", "calls", "share"],
              [[name, by_name[name].count, f"{by_name[name].self_cpu_time_total / whole:.0%}"] for name in shown]),
        note("Shares vary run to run; the grade only asks which of the two families leads by 1.25× or more."),
    ]
    return Measurement(observed=observed, evidence=evidence)
