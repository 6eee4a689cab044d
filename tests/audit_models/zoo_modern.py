"""A small GPT in the styles the audit met in the field, for the audit's test zoo (independent of engine/).

One model, its traits chosen by ``Style``: rotary kept as an ``nn.Module``
(``Rotary``: it rotates q and k itself, GPT-NeoX/litgpt fashion, or hands
back cos and sin tables that the attention applies inline, Hugging Face
fashion), separate ``c_q``, ``c_k``, ``c_v`` projections (nanochat's
names), optional RMS-normed q and k, no attribute anywhere naming the head
count (``head_dim`` only), a config that calls the context ``sequence_len``,
zero-initialised output projections (nanochat's), any dtype.

``forward(idx, targets=None, past_key_values=None, use_cache=None)``
returns ``(logits, loss)`` whatever it is given: the cache keyword is part
of the signature only. The one cached path is ``generate``, which prefills
and then decodes one token at a time through per-layer (k, v) caches; with
``StreamingGPT`` it is a Python generator over a list of ids, yielding
one int at a time (nanochat's ``generate``).
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class Config:
    vocab_size: int = 37
    sequence_len: int = 64
    n_layer: int = 2
    n_embd: int = 64
    head_dim: int = 16


@dataclass
class Style:
    rotary: str = "rotate"      # "rotate": Rotary(x, offset) returns x rotated; "tables": it returns (cos, sin)
    qk_norm: bool = False
    zero_init: bool = False     # output projections and lm_head start at zero (nanochat)
    scale: str = "1/sqrt(D)"    # a planted bug: "1/sqrt(C)"
    cache_offset: bool = True   # a planted bug: False restarts cached positions at 0


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Rotary(nn.Module):
    """Rotary position embedding as a module: inv_freq a non-persistent buffer, the angles made on the fly."""

    def __init__(self, head_dim, returns="rotate", base=10000.0):
        super().__init__()
        self.returns = returns
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim),
                             persistent=False)

    def tables(self, T, offset, device, dtype):
        t = torch.arange(offset, offset + T, device=device).float()
        angles = torch.outer(t, self.inv_freq.to(device))
        emb = torch.cat((angles, angles), dim=-1)  # (T, D)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x, offset=0):
        """x (B, H, T, D) -> x rotated; or, with returns="tables", (cos, sin) each (T, D)."""
        cos, sin = self.tables(x.size(-2), offset, x.device, x.dtype)
        if self.returns == "tables":
            return cos, sin
        return x * cos + rotate_half(x) * sin


def rms(x):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, config, style):
        super().__init__()
        self.style, self.head_dim = style, config.head_dim
        C = config.n_embd
        self.c_q, self.c_k = nn.Linear(C, C, bias=False), nn.Linear(C, C, bias=False)
        self.c_v, self.c_proj = nn.Linear(C, C, bias=False), nn.Linear(C, C, bias=False)
        self.rotary = Rotary(config.head_dim, style.rotary)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, -1, self.head_dim).transpose(1, 2) for p in (self.c_q, self.c_k, self.c_v))
        past = cache[0].size(2) if cache else 0
        offset = past if self.style.cache_offset else 0
        if self.style.rotary == "tables":
            cos, sin = self.rotary(q, offset)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        else:
            q, k = self.rotary(q, offset), self.rotary(k, offset)
        if self.style.qk_norm:
            q, k = rms(q), rms(k)
        if cache is not None:
            if cache:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
            cache[:] = [k, v]
        scale = 1.0 / C ** 0.5 if self.style.scale == "1/sqrt(C)" else None
        mask = torch.arange(k.size(2), device=x.device)[None, :] <= torch.arange(past, past + T, device=x.device)[:, None]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc, self.c_proj = nn.Linear(C, 4 * C, bias=False), nn.Linear(4 * C, C, bias=False)

    def forward(self, x):
        return self.c_proj(F.relu(self.c_fc(x)).square())


class Block(nn.Module):
    def __init__(self, config, style):
        super().__init__()
        self.attn, self.mlp = Attention(config, style), MLP(config.n_embd)

    def forward(self, x, cache=None):
        x = x + self.attn(rms(x), cache)
        return x + self.mlp(rms(x))


class GPT(nn.Module):
    def __init__(self, config=None, style=None):
        super().__init__()
        self.config, self.style = config or Config(), style or Style()
        C = self.config.n_embd
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(self.config.vocab_size, C),
                                              h=nn.ModuleList(Block(self.config, self.style)
                                                              for _ in range(self.config.n_layer))))
        self.lm_head = nn.Linear(C, self.config.vocab_size, bias=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=C ** -0.5 if isinstance(m, nn.Linear) else 1.0)
        nn.init.normal_(self.lm_head.weight, std=0.02)
        if self.style.zero_init:
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight") or name == "lm_head.weight":
                    nn.init.zeros_(p)

    def logits(self, idx, caches=None):
        x = rms(self.transformer.wte(idx))
        for i, block in enumerate(self.transformer.h):
            x = block(x, None if caches is None else caches[i])
        return self.lm_head(rms(x)).float()

    def forward(self, idx, targets=None, past_key_values=None, use_cache=None):
        logits = self.logits(idx)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten(),
                                                            ignore_index=-100)
        return logits, loss

    def _next(self, logits, temperature, top_k):
        logits = logits[:, -1, :] / max(temperature, 1e-8)
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("inf")
        return torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)

    @torch.no_grad()
    def _decode(self, idx, max_new_tokens, temperature, top_k):
        caches = [[] for _ in self.transformer.h]
        logits = self.logits(idx, caches)
        for _ in range(max_new_tokens):
            token = self._next(logits, temperature, top_k)
            yield token
            logits = self.logits(token, caches)

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        return torch.cat([idx, *self._decode(idx, max_new_tokens, temperature, top_k)], dim=1)

    def _stream(self, tokens, max_tokens, temperature, top_k):
        assert isinstance(tokens, list), "generate takes a list of token ids"
        ids = torch.tensor([tokens], dtype=torch.long, device=self.lm_head.weight.device)
        for token in self._decode(ids, max_tokens, temperature, top_k):
            yield int(token)


class StreamingGPT(GPT):
    """nanochat's generate: a generator over a list of ids, yielding one int at a time."""

    def generate(self, tokens, max_tokens, temperature=1.0, top_k=None, seed=42):
        yield from self._stream(tokens, max_tokens, temperature, top_k)


def build(dtype=torch.float32, model_class=GPT, **style):
    model = model_class(Config(), Style(**style)).to(dtype)
    return model, torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
