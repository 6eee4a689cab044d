"""Bug (CACHE, seen through generate only): generate keeps a KV cache inside the model,
and each new token is embedded at position 0 instead of its position in the sequence.
The forward exposes no cache, so the audit compares greedy generate with the argmax
of the full forward."""

import torch
from torch.nn import functional as F

import zoo_nano


class CachedAttention(zoo_nano.SelfAttention):
    """Attention that appends to ``self.kv`` while it is not None (during generate)."""

    kv = None

    def forward(self, x):
        if self.kv is None:
            return super().forward(x)
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if self.kv:
            k, v = torch.cat([self.kv[0], k], dim=2), torch.cat([self.kv[1], v], dim=2)
        self.kv = (k, v)
        past = k.size(2) - T
        mask = torch.arange(past + T).unsqueeze(0) <= torch.arange(past, past + T).unsqueeze(1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(zoo_nano.Block):
    attention_class = CachedAttention


class GPT(zoo_nano.GPT):
    block_class = Block

    def embed(self, idx, start):
        pos = torch.arange(start, start + idx.size(1), device=idx.device)
        return self.transformer.wte(idx) + self.transformer.wpe(pos)

    def step(self, idx, start):
        x = self.embed(idx, start)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))[:, -1, :]

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        attentions = [block.attn for block in self.transformer.h]
        fresh = True
        for _ in range(max_new_tokens):
            if fresh or idx.size(1) > self.config.block_size:
                for a in attentions:
                    a.kv = ()
                context = self.crop(idx)
                logits = self.step(context, 0)
                fresh = False
            else:
                logits = self.step(idx[:, -1:], 0)  # the bug: the cache's length is the position, not 0
            logits = logits / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("inf")
            idx = torch.cat((idx, torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)), dim=1)
        for a in attentions:
            a.kv = None
        return idx


def build():
    return zoo_nano.build(model_class=GPT)
