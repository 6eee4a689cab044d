"""Field controls: correct GPTs written the ways real training code writes them, which a check against one
formula would fail, and a bug beside them that must still fail.

- label smoothing (ε = 0.1) in the loss, the ε declared with the factory's ``label_smoothing`` key, or not;
- cross entropy computed in bfloat16 on a float32 model;
- a causal mask built in float16 (its most negative finite value, not −inf) and added to float32 scores;
- the bug: a bfloat16 loss summed over the positions instead of averaged.
"""

import torch
import torch.nn.functional as F

import zoo_nano


class LabelSmoothed(zoo_nano.GPT):
    def loss(self, logits, targets):
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-100,
                               label_smoothing=0.1)


class Bf16Loss(zoo_nano.GPT):
    def loss(self, logits, targets):
        return F.cross_entropy(logits.view(-1, logits.size(-1)).bfloat16(), targets.view(-1)).float()


class Bf16LossSummed(zoo_nano.GPT):
    def loss(self, logits, targets):  # the bug: a sum over B·T positions, divided by B only
        summed = F.cross_entropy(logits.view(-1, logits.size(-1)).bfloat16(), targets.view(-1), reduction="sum")
        return summed.float() / logits.size(0)


class Fp16MaskAttention(zoo_nano.SelfAttention):
    def attend(self, q, k, v):
        T = q.size(-2)
        mask = torch.full((T, T), torch.finfo(torch.float16).min, dtype=torch.float16).triu(1)
        scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5 + mask.to(q.dtype)
        return scores.softmax(-1) @ v


class Fp16MaskBlock(zoo_nano.Block):
    attention_class = Fp16MaskAttention


class Fp16Mask(zoo_nano.GPT):
    block_class = Fp16MaskBlock


def build_label_smoothing():
    return {**zoo_nano.with_loop(*zoo_nano.build(model_class=LabelSmoothed)), "label_smoothing": 0.1}


def build_label_smoothing_undeclared():
    return zoo_nano.with_loop(*zoo_nano.build(model_class=LabelSmoothed))


def build_bf16_loss():
    return zoo_nano.with_loop(*zoo_nano.build(model_class=Bf16Loss))


def build_bf16_loss_summed():
    return zoo_nano.with_loop(*zoo_nano.build(model_class=Bf16LossSummed))


def build_fp16_mask():
    return zoo_nano.with_loop(*zoo_nano.build(model_class=Fp16Mask))
