"""Parameter accounting: where the parameters of a GPT live, counted once.

Seed 004, "Parameter accounting" and "Weight tying". Two views that must
agree: a closed-form ``formula`` written from the architecture of
``engine.model``, and ``count_by_group``, which walks a real (or ``meta``)
model and counts every unique parameter tensor once. A tied matrix is counted
once, in the first group that owns it, and reported as a tie.

Groups: ``embeddings`` (token + position tables), ``attention`` (the packed
q/k/v projection and the output projection), ``mlp`` (both Linear layers and
their biases), ``layernorm`` (every LayerNorm weight and bias, ln_f included)
and ``lm_head`` (the output projection; 0 when it is tied to the token table).

For the engine, with C = n_embd, V = vocab_size, L = n_layer:

* embeddings = V*C + block_size*C
* attention  = L * 4*C*C                  (the engine's attention has no biases)
* mlp        = L * (8*C*C + 5*C)          (4C + C biases when ``bias`` is set)
* layernorm  = L * 4*C + 2*C              (two LayerNorms per block, then ln_f)
* lm_head    = V*C untied, 0 tied

So one block holds 12*C*C + 9*C parameters (12*C*C + 4*C without MLP biases),
and the token table (V*C) overtakes one block once V > 12*C + 9.

The modern options change single terms (F = the MLP's hidden width, 4C by
default; K = n_kv_head * D, the width of the keys and of the values):

* ``pos="rope"``: no position table, embeddings = V*C
* ``n_kv_head``: attention = L * (C*(C + 2K) + C*C), so K = C gives 4*C*C
* ``norm="rmsnorm"``: a gain and no shift, layernorm = (2L + 1) * C
* ``mlp="swiglu"``: three matrices, mlp = L * (3*C*F + (2F + C if bias))
"""

from __future__ import annotations

from typing import Iterable

import torch
import torch.nn as nn

GROUPS = ("embeddings", "attention", "mlp", "layernorm", "lm_head")


def formula(vocab_size: int, block_size: int, n_layer: int, n_embd: int,
            tie_weights: bool = True, bias: bool = True, *, n_head: int = 1,
            n_kv_head: int | None = None, pos: str = "learned", norm: str = "layernorm",
            mlp: str = "gelu", mlp_hidden: int | None = None) -> dict:
    """Closed-form parameter count of ``engine.model.GPT`` by group.

    Args:
        vocab_size, block_size, n_layer, n_embd: the GPTConfig fields.
        tie_weights: whether lm_head shares the token table.
        bias: whether the MLP's Linear layers carry biases.
        n_head, n_kv_head, pos, norm, mlp, mlp_hidden: the GPTConfig options
            (n_head matters only with n_kv_head: K = n_kv_head * C // n_head).

    Returns:
        {"groups": {group: count}, "total": int, "block": int (one block),
        "token_table": V*C, "tied": bool}. With tying, lm_head is 0 and the
        shared matrix is counted in embeddings.
    """
    V, T, L, C = vocab_size, block_size, n_layer, n_embd
    F = 4 * C if mlp_hidden is None else mlp_hidden
    K = C if n_kv_head is None else n_kv_head * (C // n_head)
    if mlp == "swiglu":
        mlp_block = 3 * C * F + (2 * F + C if bias else 0)
    else:
        mlp_block = 2 * C * F + (F + C if bias else 0)
    attn_block = C * (C + 2 * K) + C * C
    norm_size = C if norm == "rmsnorm" else 2 * C
    ln_block = 2 * norm_size
    groups = {
        "embeddings": V * C + (T * C if pos == "learned" else 0),
        "attention": L * attn_block,
        "mlp": L * mlp_block,
        "layernorm": L * ln_block + norm_size,
        "lm_head": 0 if tie_weights else V * C,
    }
    return {"groups": groups, "total": sum(groups.values()), "block": attn_block + mlp_block + ln_block,
            "token_table": V * C, "tied": bool(tie_weights)}


def formula_of(config) -> dict:
    """``formula`` for a ``GPTConfig`` (or anything with the same fields)."""
    return formula(config.vocab_size, config.block_size, config.n_layer, config.n_embd,
                   tie_weights=config.tie_weights, bias=getattr(config, "bias", True),
                   n_head=config.n_head, n_kv_head=getattr(config, "n_kv_head", None),
                   pos=getattr(config, "pos", "learned"), norm=getattr(config, "norm", "layernorm"),
                   mlp=getattr(config, "mlp", "gelu"), mlp_hidden=getattr(config, "mlp_hidden", None))


def crossover_vocab(n_embd: int, bias: bool = True, block_params: int | None = None) -> int:
    """Smallest vocabulary size V whose token table V*C exceeds one block.

    Args:
        n_embd: C.
        bias: MLP biases (used only when ``block_params`` is not given).
        block_params: the parameters of one block, if measured elsewhere.

    Returns:
        The least integer V with V * C > block_params.
    """
    if block_params is None:
        block_params = formula(1, 1, 1, n_embd, bias=bias)["block"]
    return block_params // n_embd + 1


def _group_of(name: str, module: nn.Module) -> str:
    """Assign a parameter to a group from its owning module and its path."""
    parts = name.lower().split(".")
    owner = parts[-2] if len(parts) > 1 else ""
    if isinstance(module, nn.Embedding):
        return "embeddings"
    if isinstance(module, nn.LayerNorm) or owner.startswith("ln") or "norm" in owner:
        return "layernorm"
    if any("attn" in part or "attention" in part for part in parts):
        return "attention"
    if any(part in ("mlp", "ffn", "feed_forward") for part in parts):
        return "mlp"
    if "head" in parts[0]:
        return "lm_head"
    return "other"


def count_by_group(model: nn.Module) -> dict:
    """Count a model's unique parameters by group, noting tied tensors.

    Works on a ``meta`` model (only shapes are read) as well as a real one.

    Returns:
        {"groups": {group: count}, "total": unique count, "tensors": number of
        unique parameter tensors, "tied": [(alias name, owner name), ...]}.
        Groups with no parameters are still present (count 0); parameters
        that fit no group are counted under "other".
    """
    owners = {}
    for mod_name, module in model.named_modules():
        for p_name, _ in module.named_parameters(recurse=False, remove_duplicate=False):
            owners[f"{mod_name}.{p_name}" if mod_name else p_name] = module
    groups = {g: 0 for g in GROUPS}
    seen: dict[int, str] = {}
    tied = []
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            tied.append((name, seen[id(p)]))
            continue
        seen[id(p)] = name
        group = _group_of(name, owners.get(name, model))
        groups[group] = groups.get(group, 0) + p.numel()
    return {"groups": groups, "total": sum(groups.values()), "tensors": len(seen), "tied": tied}


def build_meta(config) -> nn.Module:
    """Build ``engine.model.GPT(config)`` on the ``meta`` device: shapes, no storage.

    The large configuration (GPT-2-small scale) costs no memory this way.
    """
    from engine.model import GPT

    with torch.device("meta"):
        return GPT(config)


def agree(config, model: nn.Module | None = None) -> dict:
    """Compare the formula with an instantiated model, group by group.

    Args:
        config: a GPTConfig.
        model: the model to count; by default one built on ``meta``.

    Returns:
        {"formula": formula_of(config), "counted": count_by_group(model),
        "agree": bool, "rows": [(group, formula, counted), ...]}.
    """
    model = build_meta(config) if model is None else model
    expected = formula_of(config)
    counted = count_by_group(model)
    rows = [(g, expected["groups"][g], counted["groups"].get(g, 0)) for g in GROUPS]
    if counted["groups"].get("other"):
        rows.append(("other", 0, counted["groups"]["other"]))
    ok = all(a == b for _, a, b in rows) and expected["total"] == counted["total"]
    return {"formula": expected, "counted": counted, "agree": ok, "rows": rows}


def percent_rows(groups: dict, total: int, order: Iterable[str] = GROUPS) -> list[list]:
    """[[group, count, "xx.x%"], ...] sorted by count, largest first."""
    items = [(g, groups.get(g, 0)) for g in order]
    items.sort(key=lambda kv: -kv[1])
    return [[g, f"{n:,}", f"{100.0 * n / total:.1f}%"] for g, n in items]
