"""Clean control in bfloat16 (the modern-style GPT cast whole), and in float16 with build_fp16."""

import torch

import zoo_modern


def build():
    return zoo_modern.build(torch.bfloat16)


def build_fp16():
    return zoo_modern.build(torch.float16)
