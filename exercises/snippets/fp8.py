"""Storing a tensor in 8 bits: float8 e4m3 with a per-tensor scale (seed 000
§7, "For FP8, the exact scaling recipe and supported implementation
matter").

e4m3 has 4 exponent bits and 3 mantissa bits: its largest value is 448 and
its smallest nonzero one 2^-9 ≈ 0.002. Gradients and activations often live
far below that. A scaling recipe multiplies the tensor by 448 / max|x|
before the cast, so its largest entry lands on the largest float8, and
divides by the same number after reading it back.
"""

import torch

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (any shape, float32) -> (its float8 e4m3 codes, the float32 scale used)."""
    scale = FP8_MAX / x.abs().max().clamp_min(1e-12)  # max|x| lands on 448
    return (x * scale).to(FP8), scale


def dequantize(codes: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Back to float32: codes / scale."""
    return codes.float() / scale
