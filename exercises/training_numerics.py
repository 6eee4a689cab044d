"""Checks for the set ``training``, part 4: numbers and modes around the loss
(seed 000 §7, "The training loop connects the four views" and
"Initialization, precision, and evaluation mode").

Log-probabilities at extreme logits, tensors made under inference mode, and
which dtype each operation picks under bfloat16 autocast.
"""

import copy

import torch
import torch.nn.functional as F

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table


def log_softmax_numerics(ctx: Context) -> Measurement:
    """Log-probabilities of logits [100, 0, -100] in float32, and whether each is finite.

    The snippet's ``token_log_probs`` against float64 ``log_softmax`` (the
    reference: 0, -100, -200). Observed: a list of three bools, one per
    token, True when that log-probability is finite. Seed 000 §7 (log_softmax
    avoids the numerical problems of softmax followed by log).

    Whether exp(-100) ≈ 3.7e-44 survives depends on float32 subnormals: a
    processor set to flush them to zero (``torch.set_flush_denormal(True)``,
    or a GPU kernel built with fast math) rounds it to 0. The row is computed
    on the CPU with subnormals kept, as the prompt says, whatever the device.
    """
    from exercises.snippets.log_probs import token_log_probs

    logits = torch.tensor([[100.0, 0.0, -100.0]])  # (1, V = 3), float32, on the CPU
    torch.set_flush_denormal(False)  # subnormals kept (torch's default), whatever set this process before
    subject = token_log_probs(logits)[0]
    probs = logits.softmax(dim=-1)[0]
    reference = F.log_softmax(logits.double(), dim=-1)[0]
    finite = [bool(v) for v in torch.isfinite(subject).tolist()]
    evidence = [
        table("Logits [100, 0, -100], float32", ["token", "probability", "log-prob", "float64 ref"],
              [[i, f"{probs[i].item():.3g}", f"{subject[i].item():.6g}", f"{reference[i].item():.6g}"]
               for i in range(3)]),
        table("Facts", ["question", "answer"], [
            ["smallest positive float32 (subnormal)", f"{torch.finfo(torch.float32).smallest_normal * 2**-23:.3g}"],
            ["exp(-200) in float64", f"{torch.tensor(-200.0, dtype=torch.float64).exp().item():.3g}"],
            ["every log-prob finite", all(finite)]]),
    ]
    if not all(finite):
        evidence.append(note("softmax rounded exp(-200) to 0 in float32 and log(0) = -inf; exp(-100) survived "
                             "only as a subnormal, so its log is off in the fourth digit. log_softmax never "
                             "forms the probability: it subtracts logsumexp from the logits."))
    return Measurement(observed=finite, evidence=evidence)


def inference_mode(ctx: Context) -> Measurement:
    """Train a head on features computed without a graph, and see whether backward runs.

    A frozen encoder ``Linear(8, 8)`` makes features for a batch (6, 8)
    through the snippet's ``features``; a trainable head ``Linear(8, 3)``
    scores them and cross entropy is backpropagated into the head. Observed:
    the exception class of that forward + backward, or ``"none"``.
    Seed 000 §7 (inference mode imposes restrictions on later autograd use).
    """
    from exercises.snippets.frozen_features import features

    device = torch.device(ctx.device)
    torch.manual_seed(ctx.seed)
    encoder = torch.nn.Linear(8, 8).to(device)
    head = torch.nn.Linear(8, 3).to(device)
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(6, 8, generator=g).to(device)
    y = torch.randint(0, 3, (6,), generator=g).to(device)
    feats = features(encoder, x)
    try:
        F.cross_entropy(head(feats), y).backward()
        observed, outcome = "none", f"head.weight.grad norm {head.weight.grad.norm().item():.4g}"
    except Exception as exc:  # the observation is the exception itself
        observed, outcome = type(exc).__name__, first_line(exc, limit=160)
    head.zero_grad(set_to_none=True)
    F.cross_entropy(head(feats.clone()), y).backward()  # a clone is an ordinary tensor
    evidence = [
        table("The features", ["question", "answer"], [
            ["requires_grad", feats.requires_grad], ["is_inference()", feats.is_inference()],
            ["encoder weight has a grad afterwards", encoder.weight.grad is not None]]),
        table("head(features) -> cross entropy -> backward", ["input", "outcome"], [
            ["the features", outcome],
            ["features.clone()", f"ran: head.weight.grad norm {head.weight.grad.norm().item():.4g}"]]),
    ]
    return Measurement(observed=observed, evidence=evidence)


DTYPE_CHOICE = {("float32", "float32"): "a", ("bfloat16", "float32"): "b",
                ("bfloat16", "bfloat16"): "c", ("float32", "bfloat16"): "d"}


def _short(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def autocast_bf16(ctx: Context) -> Measurement:
    """The dtypes of the logits and the loss from the snippet's bfloat16 forward.

    The small engine GPT (2 layers, C = 64, V = 37) and a random batch
    (2, 16). The float32 logits are computed first; the snippet then runs a
    copy of the model. Observed choice by (logits dtype, loss dtype): a
    float32/float32, b bfloat16/float32, c bfloat16/bfloat16, d
    float32/bfloat16. Evidence: the dtype each operation picks under
    autocast on this device, and how far the bfloat16 logits are from
    float32. Measured on CPU (torch 2.13): Linear and matmul are cast down
    to bf16 whatever their input, cross_entropy is cast up to float32, and
    softmax, log_softmax and layer_norm are on neither list: they follow
    their input's dtype (bf16 when fed the Linear's bf16 output, float32
    when fed float32 logits). Seed 000 §7 (autocast selects operation
    dtypes; loss scaling is a separate mechanism).
    """
    from exercises.snippets.mixed_precision import bf16_forward

    model = ctx.gpt("small").eval()
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, model.config.vocab_size, (2, 17), generator=g).to(ctx.device)
    x, y = data[:, :-1], data[:, 1:]
    with torch.no_grad():
        reference, ref_loss = model(x, targets=y)  # float32
        subject = copy.deepcopy(model)  # the subject may cast its model; the reference stays float32
        logits, loss = bf16_forward(subject, x, y)
    kinds = (_short(logits.dtype), _short(loss.dtype))
    observed = DTYPE_CHOICE.get(kinds, "e")
    delta = (logits.float() - reference).abs().max().item()
    scale = reference.abs().max().item()

    device_type = torch.device(ctx.device).type
    probe = torch.randn(4, 64, generator=g).to(ctx.device)
    lin = torch.nn.Linear(64, 37).to(ctx.device)
    target = torch.randint(0, 37, (4,), generator=g).to(ctx.device)
    logits32 = lin(probe).detach()  # (4, 37) float32, computed outside autocast
    with torch.no_grad(), torch.autocast(device_type, dtype=torch.bfloat16):
        z = lin(probe)  # (4, 37) bfloat16
        ops = [["Linear", probe, z], ["matmul", probe, probe @ probe.T],
               ["softmax", z, z.softmax(-1)], ["softmax", logits32, logits32.softmax(-1)],
               ["log_softmax", z, F.log_softmax(z, -1)], ["log_softmax", logits32, F.log_softmax(logits32, -1)],
               ["layer_norm", z, F.layer_norm(z, (37,))], ["layer_norm", logits32, F.layer_norm(logits32, (37,))],
               ["cross_entropy", z, F.cross_entropy(z, target)]]

    def rule(a: torch.Tensor, out: torch.Tensor) -> str:
        if out.dtype == a.dtype:
            return "follows its input"
        return "cast down by autocast" if out.dtype == torch.bfloat16 else "cast up by autocast"

    evidence = [
        table("The subject's forward", ["tensor", "dtype"], [
            ["weights (the subject's model)", _short(next(subject.parameters()).dtype)], ["logits", kinds[0]], ["loss", kinds[1]]]),
        table(f"Under autocast({device_type!r}, bfloat16): each operation's input and output",
              ["operation", "input", "output", "so"],
              [[name, _short(a.dtype), _short(out.dtype), rule(a, out)] for name, a, out in ops]),
        table("Against float32", ["quantity", "value"], [
            ["max |Δ logits|", delta], ["max |logit|", scale], ["relative", delta / scale if scale else 0.0],
            ["bfloat16 epsilon (2^-7)", torch.finfo(torch.bfloat16).eps],
            ["loss, float32 / subject", f"{ref_loss.item():.5f} / {loss.float().item():.5f}"]]),
    ]
    if kinds[1] == "bfloat16":
        evidence.append(note("The loss itself was computed in bfloat16: with 8 significant bits (7 stored) a loss near "
                             "3.6 is represented only to about 0.016."))
    return Measurement(observed=observed, evidence=evidence)


def fp8_scaling(ctx: Context) -> Measurement:
    """The snippet's float8 e4m3 round trip on gradient-sized values.

    1,000 values ~ N(0, 1) · 1e-5 (a typical size for a gradient entry),
    from a generator seeded with ``ctx.seed``, quantized and dequantized.
    Observed: the fraction that comes back exactly 0, to 3 decimals.
    Evidence: the scale, the median relative error of the survivors, and
    e4m3's range. Runs on the CPU: it measures the storage half of a float8
    recipe (the cast and its scale); the scaled float8 matrix products a GPU
    runs on such codes are not measured here. Seed 000 §7.
    """
    from exercises.snippets.fp8 import dequantize, quantize

    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(1000, generator=g) * 1e-5
    codes, scale = quantize(x)
    back = dequantize(codes, scale)
    zero = round(float((back == 0).float().mean()), 3)
    alive = back != 0
    rel = ((back[alive] - x[alive]).abs() / x[alive].abs()).median().item() if bool(alive.any()) else float("nan")
    info = torch.finfo(torch.float8_e4m3fn)
    evidence = [
        table("1,000 values ~ N(0, 1e-5²) through float8 e4m3", ["quantity", "value"], [
            ["max |x|", x.abs().max().item()], ["scale applied before the cast", float(scale)],
            ["fraction read back as exactly 0", zero], ["median relative error of the rest", rel],
            ["e4m3: largest / smallest normal", f"{info.max:g} / {info.smallest_normal:g}"],
            ["e4m3: smallest subnormal", f"{2.0 ** -9:g}"]]),
        note("Measured here: the cast and its scale, the storage half of a float8 recipe. The scaled float8 "
             "matrix products a GPU runs on such codes, and their accumulation, are not measured on this CPU."),
    ]
    return Measurement(observed=zero, evidence=evidence)


def loss_scaling(ctx: Context) -> Measurement:
    """Gradients of size about 1e-8 through ``snippets/loss_scaling.py``'s float16 layer.

    N = 1,000 weights (float16, ones); inputs evenly spaced over [0.5, 1.5]
    · 1e-3 (float16); an upstream gradient of 1e-5 everywhere, so the true
    gradients are the inputs times 1e-5, between 5e-9 and 1.5e-8. Observed:
    the fraction of the returned gradient entries that are exactly 0
    (rounded to 1e-6). Evidence: the median relative error against the
    float64 gradient, and float16's smallest values. On the CPU. Seed 000 §7
    ("loss scaling is a distinct mechanism, especially relevant to FP16
    underflow").
    """
    from exercises.snippets.loss_scaling import float16_grads

    N = 1_000
    inputs = (torch.linspace(0.5, 1.5, N) * 1e-3).to(torch.float16)  # (N,)
    upstream = torch.full((N,), 1e-5)  # (N,) float32
    weight = torch.ones(N, dtype=torch.float16, requires_grad=True)
    grads = float16_grads(weight, inputs, upstream)  # (N,) float32
    truth = inputs.double() * upstream.double()  # (N,)
    zero = round(float(grads.eq(0).double().mean()), 6)
    rel = ((grads.double() - truth).abs() / truth).median().item()
    tiny = torch.finfo(torch.float16)
    evidence = [
        table("The weight's gradient, N = 1,000", ["quantity", "value"], [
            ["true gradient range", f"{truth.min().item():.2e} .. {truth.max().item():.2e}"],
            ["fraction exactly 0", zero], ["median relative error", round(rel, 4)]]),
        table("float16", ["quantity", "value"], [
            ["smallest normal", f"{tiny.tiny:.2e}"], ["smallest subnormal", f"{tiny.smallest_normal * 2 ** -10:.2e}"],
            ["largest", f"{tiny.max:,.0f}"]]),
        note("Backward multiplies the upstream gradient by the float16 inputs in float16: a product below half "
             "the smallest subnormal rounds to 0, and no later division can bring it back."),
    ]
    return Measurement(observed=zero, evidence=evidence)
