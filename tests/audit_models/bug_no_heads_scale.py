"""Bug (ATTENTION): scores scaled by 1/sqrt(C) instead of 1/sqrt(D), in a model where no attribute names
the head count: the audit reads the heads from the SDPA call. Also in bfloat16 (build_bf16)."""

import torch

import zoo_modern


def build():
    return zoo_modern.build(scale="1/sqrt(C)")


def build_bf16():
    return zoo_modern.build(torch.bfloat16, scale="1/sqrt(C)")
