"""A small GPT in nanoGPT's style, for the audit's test zoo (independent of engine/).

forward(idx, targets=None) -> (logits, loss), only the last position's
logits without targets; generate(idx, max_new_tokens, temperature=1.0,
top_k=None) crops the context to block_size. The output head is tied to the
token table when ``tie_word_embeddings`` is set. Bug files subclass one
piece (``attend``, ``Block.forward``, ``loss``, ``generate``...) and change one
thing.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F

#: The characters of the tutor's audit corpus, in id order (the tutor's CharTokenizer sorts them).
ALPHABET = " ,.ABFNOQSTWabcdefghijklmnopqrstuvwxy"


@dataclass
class Config:
    vocab_size: int = 37
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0
    bias: bool = True
    tie_word_embeddings: bool = True


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head, self.dropout = config.n_head, config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = self.attend(q, k, v)  # (B, H, T, D)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))

    def attend(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                              is_causal=True)


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def activation(self, h):
        return F.gelu(h)

    def forward(self, x):
        return self.dropout(self.c_proj(self.activation(self.c_fc(x))))


class Block(nn.Module):
    attention_class, mlp_class = SelfAttention, MLP

    def __init__(self, config):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(config.n_embd), nn.LayerNorm(config.n_embd)
        self.attn, self.mlp = self.attention_class(config), self.mlp_class(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    block_class = Block

    def __init__(self, config=None):
        super().__init__()
        self.config = config = config or Config()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd), wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout), h=nn.ModuleList([self.block_class(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # GPT-2's scaled init of the residual projections
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def hidden(self, idx):
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.transformer.ln_f(x)

    def head(self, x):
        return self.lm_head(x)

    def loss(self, logits, targets):
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-100)

    def forward(self, idx, targets=None):
        x = self.hidden(idx)
        if targets is None:
            return self.head(x[:, [-1], :]), None
        logits = self.head(x)
        return logits, self.loss(logits, targets)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = self.crop(idx)
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("inf")
            idx_next = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx

    def crop(self, idx):
        return idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]


def configure_optimizer(model, lr=3e-3, weight_decay=0.1):
    """AdamW with weight decay on the 2-D matmul weights only: not on 1-D tensors, not on embeddings."""
    tables = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    params = {id(p): p for p in model.parameters()}.values()
    decay = [p for p in params if p.dim() >= 2 and id(p) not in tables]
    rest = [p for p in params if p.dim() < 2 or id(p) in tables]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=lr)


def build(config=None, model_class=GPT):
    model = model_class(config or Config())
    return model, configure_optimizer(model)


def with_loop(model, optimizer, micro=2, clip=1.0, warmup=10):
    """A correct training loop around (model, optimizer): microbatches averaged, a GradScaler,
    clipping after unscale_ and before the step, a warmup scheduler stepped after the optimizer,
    and an evaluate that puts the model back in train mode. Returns the factory's dict."""
    scaler = torch.amp.GradScaler("cpu")
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))

    def train_step(model, optimizer, batch):
        x, y = batch
        for xb, yb in zip(x.chunk(micro), y.chunk(micro)):
            _, loss = model(xb, yb)
            scaler.scale(loss / micro).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()

    def evaluate(model):
        model.eval()
        with torch.no_grad():
            idx = torch.zeros(1, 8, dtype=torch.long)
            model(idx, idx)
        model.train()

    return {"model": model, "optimizer": optimizer, "train_step": train_step, "evaluate": evaluate,
            "scheduler": scheduler, "scaler": scaler}
