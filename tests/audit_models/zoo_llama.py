"""A small GPT that keeps its own KV cache, in the manner of Meta's LLaMA, for the audit's
test zoo (independent of engine/).

forward(tokens, targets=None, start_pos=None): without ``start_pos`` a plain
causal pass (training); with it, the chunk's keys and values are written
into per-layer buffers at [start_pos, start_pos + T) and the chunk attends
to everything cached so far. Learned positions (no rotary), separate
wq/wk/wv/wo projections, an untied output head.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class Args:
    vocab_size: int = 37
    max_seq_len: int = 64
    max_batch_size: int = 4
    n_layers: int = 2
    n_heads: int = 4
    dim: int = 64


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_heads, self.head_dim = args.n_heads, args.dim // args.n_heads
        self.wq, self.wk = nn.Linear(args.dim, args.dim, bias=False), nn.Linear(args.dim, args.dim, bias=False)
        self.wv, self.wo = nn.Linear(args.dim, args.dim, bias=False), nn.Linear(args.dim, args.dim, bias=False)
        shape = (args.max_batch_size, args.n_heads, args.max_seq_len, self.head_dim)
        self.register_buffer("cache_k", torch.zeros(shape), persistent=False)
        self.register_buffer("cache_v", torch.zeros(shape), persistent=False)

    def mask(self, start_pos, T, device):
        """None for a single new token (it may see everything cached); else the causal mask offset by start_pos."""
        if T == 1:
            return None
        q = torch.arange(start_pos, start_pos + T, device=device).unsqueeze(1)
        return torch.arange(start_pos + T, device=device).unsqueeze(0) <= q

    def forward(self, x, start_pos=None):
        B, T, C = x.shape
        q, k, v = (w(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        if start_pos is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            self.cache_k[:B, :, start_pos:start_pos + T] = k
            self.cache_v[:B, :, start_pos:start_pos + T] = v
            keys, values = self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]
            y = F.scaled_dot_product_attention(q, keys, values, attn_mask=self.mask(start_pos, T, x.device))
        return self.wo(y.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(dim, 2 * dim, bias=False), nn.Linear(2 * dim, dim, bias=False), \
            nn.Linear(dim, 2 * dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    attention_class = Attention

    def __init__(self, args):
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(args.dim), RMSNorm(args.dim)
        self.attention, self.feed_forward = self.attention_class(args), FeedForward(args.dim)

    def forward(self, x, start_pos=None):
        h = x + self.attention(self.attention_norm(x), start_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    block_class = TransformerBlock

    def __init__(self, args=None):
        super().__init__()
        self.args = args = args or Args()
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.pos_embeddings = nn.Embedding(args.max_seq_len, args.dim)
        self.layers = nn.ModuleList([self.block_class(args) for _ in range(args.n_layers)])
        self.norm = RMSNorm(args.dim)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)

    @property
    def n_heads(self):
        return self.args.n_heads

    def forward(self, tokens, targets=None, start_pos=None):
        T = tokens.size(1)
        first = start_pos or 0
        h = self.tok_embeddings(tokens) + self.pos_embeddings(torch.arange(first, first + T, device=tokens.device))
        for layer in self.layers:
            h = layer(h, start_pos)
        logits = self.output(self.norm(h))
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


def build(model_class=Transformer):
    model = model_class()
    return model, torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
