"""The inference links: EVAL, CACHE and GENERATE (seed 004, "Generation is a
different program"; seed 000 §6, "A KV cache changes coordinates, not the
meaning of attention").

Generation runs code training never touches: eval mode, a KV cache, a
context that grows past block_size. Each link checks one of them against
the full forward the earlier links already proved.
"""

from __future__ import annotations

import copy
import inspect

import torch
import torch.nn as nn

from exercises.audit.adapter import (Forward, hugging_face, library_generate, logits_of, open_cache, parameters_of,
                                     split_output)
from exercises.audit.measure import finite_delta, finite_scale, mode, seeded, some
from exercises.audit.links import unbounded
from exercises.audit.report import Link
from exercises.audit.subject import Subject
from exercises.outcome import first_line

#: EVAL: two eval-mode forwards on the same input must agree within EVAL_TOL times
#: the largest finite logit. Measured: 0.0 on CPU for every clean model of the
#: test zoo; dropout left on in eval (p = 0.1) differs by 0.10-0.16 there, and
#: by 0.19-0.51 in the zoo's models — four orders of magnitude above the bar.
EVAL_TOL = 1e-5
#: CACHE: cached and full logits must agree within CACHE_TOL times the largest
#: finite logit. Measured on the test zoo (2 layers, C = 64, T = 32, prefill 8):
#: clean caches differ from the full forward by 1.2e-7 to 3.0e-7 at random init
#: (float32 rounding of another summation order), the engine's by 2.9e-6 after
#: CAPABILITY's overfit (largest logit 8.5); the cache bugs by 0.053 (no mask on
#: a chunk after the first), 0.32 (is_causal with a cache) and 0.38 (positions
#: restarting at 0). Two orders of magnitude clear on each side.
CACHE_TOL = 1e-4
#: CACHE through ``generate`` alone: the prompt and how many greedy tokens are compared,
#: and the brief overfit that makes a copy of the model confident enough for a
#: broken cache to change its argmax. Measured on the zoo's generate whose cached
#: tokens restart at position 0 (2 x 24 tokens): 1 token differs at random init,
#: 1 after 10 steps, 24 after 20, 31 after 40; a correct generate: 0 at every step
#: count (the zoo showed a few of 80 at random init).
GENERATE_PROMPT, GENERATE_TOKENS, SHARPEN_STEPS, SHARPEN_LR = 8, 24, 40, 1e-2


def eval_mode(s: Subject) -> Link:
    """EVAL: ``model.eval()`` reaches every module, and eval-mode forwards are deterministic.

    Two forwards on the same input, no gradients, no reseeding, must agree
    (``EVAL_TOL``). They differ when dropout still runs in eval mode:
    ``F.dropout(x, p, training=True)``, SDPA's ``dropout_p`` passed without
    checking ``self.training``, or an nn.Dropout kept in a plain list where
    ``.eval()`` cannot reach it. Comes before CACHE, which compares eval outputs.
    """
    model = s.model
    with mode(model, False), torch.no_grad():
        still = [name or type(model).__name__ for name, m in model.named_modules() if m.training]
        first, second = s.forward(s.xs), s.forward(s.xs)
    delta, kinds_changed = finite_delta(first, second)
    tol = s.tol(EVAL_TOL) * finite_scale(first)
    evidence = [["two eval forwards, same input", f"max |Δ logits| {delta:.3e} (tolerance {tol:.1e}, {s.precision})"],
                ["modules still training after eval()", some(still) if still else "none"]]
    if still:
        return Link("EVAL", "FAIL", f"model.eval() leaves {some(still)} in training mode", evidence,
                    advice=f"eval() reaches only registered submodules: register {some(still)} (an nn.Module "
                           "attribute or nn.ModuleList, not a plain list), or do not override train()/eval() "
                           "without calling super()")
    if delta > tol or kinds_changed:
        return Link("EVAL", "FAIL", f"two eval-mode forwards on the same input differ by {delta:.3g}: randomness "
                                    "is still active in eval", evidence,
                    advice="make the forward's randomness follow self.training: F.dropout(x, p, "
                           "training=self.training), SDPA's dropout_p=p if self.training else 0.0, and no Dropout "
                           "kept where .eval() cannot reach it")
    return Link("EVAL", "ok", f"eval() reaches every module; two forwards on the same input agree "
                              f"(max |Δ| {delta:.1e})", evidence)


# ---------------------------------------------------------------------------
# CACHE


class NoCacheReturned(Exception):
    """The forward takes a cache keyword but handed no cache back: the keyword's name promised one that the
    model does not keep (its cache, if any, lives inside ``generate``)."""

    def __init__(self, keyword: str, returned) -> None:
        what = (f"a {type(returned).__name__} of {len(returned)} items ({', '.join(_kind_of(v) for v in returned)})"
                if isinstance(returned, (tuple, list)) else _kind_of(returned))
        super().__init__(f"the forward takes {keyword} but, called with {keyword}=None and use_cache=True, returned "
                         f"{what}: no cache to continue from")
        self.keyword = keyword


def _kind_of(value) -> str:
    if isinstance(value, torch.Tensor):
        return "a loss" if value.dim() == 0 else f"logits {tuple(value.shape)}" if value.dim() == 3 else \
            f"a tensor {tuple(value.shape)}"
    return "None" if value is None else f"a {type(value).__name__}"


def cached_logits(forward: Forward, idx: torch.Tensor, chunks: list[int]) -> list[tuple[int, torch.Tensor]]:
    """Feed idx through the model's cache in ``chunks``; return (first position, logits) per chunk.

    The cache is the model's own, spoken its way: the engine's
    ``new_cache(B)``; ``past_key_values`` or transformers 5's ``cache`` (a
    ``Cache`` object or per-layer tuples) handed back and passed in again;
    Meta's ``start_pos``; ``input_pos`` (the chunk's positions) after the
    model's own set-up: litgpt's ``set_kv_cache(B)``, gpt-fast's
    ``setup_caches(B, L)``, lit-llama's ``reset_cache()``; TransformerLens' ``past_kv_cache``. The logits of a chunk are (B, p, V) for its last
    p positions (p is the chunk's length, or 1 for a forward that returns the
    last position only).

    Raises:
        NoCacheReturned: the model returned no cache to continue from.
    """
    model, kind = forward.model, forward.interface.cache
    use_cache = {"use_cache": True} if "use_cache" in forward.interface.forward_params or forward.interface.hf \
        else {}
    state, start, out = None, 0, []
    if kind == "engine":
        state = model.new_cache(idx.size(0))
    elif kind == "input_pos":  # litgpt's set_kv_cache(B), gpt-fast's setup_caches(B, L), lit-llama's reset_cache()
        open_cache(model, forward.interface, idx.size(0), idx.device)
    elif kind == "past_kv_cache":  # TransformerLens builds its cache from the model's config
        import importlib

        caching = importlib.import_module("transformer_lens.past_key_value_caching")
        state = caching.HookedTransformerKeyValueCache.init_cache(model.cfg, idx.device, idx.size(0))
    try:
        for n in chunks:
            chunk = idx[:, start:start + n]
            if kind == "engine":
                raw = model(chunk, cache=state)
            elif kind in ("past_key_values", "cache"):
                raw = forward.call(chunk, **{kind: state}, **use_cache)
                state = split_output(raw)[2]
                if state is None:
                    raise NoCacheReturned(kind, raw)
            elif kind == "input_pos":
                raw = forward.call(chunk, input_pos=torch.arange(start, start + n, device=idx.device))
            elif kind == "past_kv_cache":  # without a tokenizer it needs the new tokens' mask, all real
                raw = forward.call(chunk, past_kv_cache=state, attention_mask=torch.ones_like(chunk))
            else:  # "start_pos": the model keeps its own cache
                raw = forward.call(chunk, start_pos=start)
            logits = logits_of(raw)
            out.append((start + n - logits.size(1), logits))
            start += n
    finally:
        clear = next((getattr(model, m) for m in ("clear_kv_cache", "reset_cache") if callable(getattr(model, m, None))),
                     None)
        if kind == "input_pos" and clear is not None:
            clear()
    return out


def cache(s: Subject) -> Link:
    """CACHE: decoding through the model's KV cache gives the full forward's logits.

    Seed 000 §6. Prefill k = T // 4 tokens, then continue one token at a time,
    and again in chunks of 3; every cached logit must equal the full forward's
    at its position (``CACHE_TOL``). A chunk of more than one token needs a
    causal mask offset by the cache length; ``is_causal=True`` aligns its
    mask to the top-left and hides the cache from a single new token;
    positions must continue from the cache's length, not restart at 0. For a
    model whose only cached path is ``generate``, greedy generation is
    compared with the argmax of the full forward on each prefix instead.
    "skip" when the model has no cache interface at all.
    """
    kind = s.forward.interface.cache
    if kind is None and s.forward.interface.one_token is not None:
        return Link("CACHE", "skip", "the forward takes one token per call, so its full logits already come "
                                     "through its cache: there is no second path to compare them with")
    if kind is None and s.forward.interface.through is not None:
        return Link("CACHE", "skip", "no cache interface the audit drives: the factory's forward gives the full "
                                     f"logits, and {type(s.model).__name__} has no generate")
    if kind is None:
        names = ", ".join(s.forward.interface.forward_params) or "nothing the signature shows"
        return Link("CACHE", "skip", "no cache interface: the forward takes no cache, past_key_values or start_pos "
                                     f"(it takes {names}), and {type(s.model).__name__} has no generate")
    if kind == "generate":
        return _cache_through_generate(s)
    try:
        return _cache_through_forward(s)
    except NoCacheReturned as missing:
        # The parameter's name is no promise: a forward that takes past_key_values and returns (logits, loss)
        # keeps its cache, if any, inside generate; that is the path left to compare.
        if callable(getattr(s.model, "generate", None)):
            link = _cache_through_generate(s)
            link.evidence.insert(0, ["cache keyword", f"{missing}; compared through generate instead"])
            return link
        return Link("CACHE", "skip", f"{missing}, and the model has no generate: no cached path to compare "
                                     "with the full forward", [["cache keyword", str(missing)]])


def _cache_through_forward(s: Subject) -> Link:
    idx = s.xs[:2]
    T = idx.size(1)
    k = max(1, T // 4)
    modes = {"one token at a time": [k] + [1] * (T - k),
             "chunks of 3": [k] + [3] * ((T - k) // 3) + ([(T - k) % 3] if (T - k) % 3 else [])}
    with mode(s.model, False), torch.no_grad():
        full = s.forward(idx)
        tol = s.tol(CACHE_TOL) * finite_scale(full)
        evidence, worst, worst_mode, changed, deltas = [], 0.0, "", 0, {}
        for name, chunks in modes.items():
            delta, kinds_changed = 0.0, 0
            for start, logits in cached_logits(s.forward, idx, chunks):
                d, c = finite_delta(logits, full[:, start:start + logits.size(1)])
                delta, kinds_changed = max(delta, d), kinds_changed + c
            evidence.append([f"prefill {k}, then {name}", f"max |Δ logits| {delta:.3e}"
                             + (f", {kinds_changed} changed kind" if kinds_changed else "")])
            deltas[name] = delta > tol or kinds_changed > 0
            if delta >= worst:
                worst, worst_mode = delta, name
            changed += kinds_changed
    evidence.append(["tolerance", f"{tol:.1e} ({s.precision}: {s.tol(CACHE_TOL):.0e} of the largest logit)"])
    # NaN equals nothing, so a NaN is said as one: never folded into a difference of 0 nor into "equal"
    nan = int(torch.isnan(full).sum())
    if nan == full.numel():
        return Link("CACHE", "skip", f"every one of the full forward's {nan} logits is NaN (not finite): there is no "
                                     "number for the cached logits to equal", evidence)
    nan_too = f"; {nan} of the full forward's {full.numel()} logits are NaN (not finite) on both paths" if nan else ""
    if worst > tol or changed:
        by = f"by {worst:.3g}" if worst > tol else (
            f"in kind: {changed} logits are NaN or infinite on one path and not on the other (the finite ones "
            f"agree within {tol:.1e})")
        return Link("CACHE", "FAIL", f"cached logits differ from the full forward {by} (prefill {k}, "
                                     f"then {worst_mode}; tolerance {tol:.1e} for {s.precision}{nan_too})", evidence,
                    advice=_cache_advice(deltas))
    equal = "where finite, and are NaN where it is " if nan else ""
    return Link("CACHE", "ok", f"cached logits equal the full forward's {equal}(max |Δ| {worst:.1e}; prefill {k}, "
                               f"then one token at a time and chunks of 3{nan_too})", evidence)


def greedy_kwargs(generate) -> dict | None:
    """Keyword arguments that make a ``generate`` greedy, or None when it has no such setting.

    ``top_k=1``, ``do_sample=False`` or ``greedy=True`` where the signature
    names them; Hugging Face's ``generate`` (keywords in ``**kwargs``):
    ``do_sample=False``; x-transformers': ``temperature=0.0``.
    """
    names, _ = parameters_of(generate)
    owner = getattr(generate, "__self__", None)
    if owner is not None and hugging_face(owner):
        return {"do_sample": False}
    if owner is not None and type(owner).__module__.startswith("x_transformers") and "temperature" in names:
        return {"temperature": 0.0}
    quiet = {n: False for n in ("stop_at_eos", "verbose") if n in names}  # TransformerLens: no tokenizer, no bar
    for name, value in (("top_k", 1), ("do_sample", False), ("greedy", True)):
        if name in names:
            return {name: value, **quiet}
    return None


def new_tokens_keyword(generate) -> str | None:
    """The keyword ``generate`` takes the number of new tokens by: ``max_new_tokens`` where it names it
    or takes ``**kwargs`` (Hugging Face), else its second parameter (x-transformers' ``seq_len``)."""
    names, var_kw = parameters_of(generate)
    if "max_new_tokens" in names or var_kw and len(names) < 2:
        return "max_new_tokens"
    owner = getattr(generate, "__self__", None)
    if owner is not None and hugging_face(owner):
        return "max_new_tokens"
    return names[1] if len(names) >= 2 else None


def call_generate(generate, idx: torch.Tensor, n: int, kwargs: dict) -> torch.Tensor:
    """``generate(idx, <new tokens>=n, **kwargs)``, the count always by keyword (``new_tokens_keyword``),
    as a tensor of ids; a returned object's ``.sequences`` is read.

    Raises:
        TypeError: generate names no parameter for the count, or returns no tensor.
    """
    keyword = new_tokens_keyword(generate)
    if keyword is None:
        raise TypeError("generate takes no parameter for the number of new tokens")
    if inspect.isgeneratorfunction(inspect.unwrap(getattr(generate, "__func__", generate))):
        return _drain(generate, idx, n, {keyword: n, **kwargs})
    out = generate(idx, **{keyword: n}, **kwargs)
    out = getattr(out, "sequences", out)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"generate returned {type(out).__name__}, not a tensor of ids")
    if out.dim() == 2 and out.size(1) == n and n != idx.size(1) + n:  # the new tokens alone (x-transformers)
        out = torch.cat([idx, out], dim=1)
    return out


def _drain(generate, idx: torch.Tensor, n: int, kwargs: dict) -> torch.Tensor:
    """The ids a generator ``generate`` yields (nanochat's: one token at a time, from a list of ids), after
    the prompt, as (B, P + n). Each item may be an int, a list of ints, or a tensor of one token per row.
    The prompt goes in as the (B, P) tensor; a generator that refuses one (it asserts a list) is run once
    per row with that row as a list of ints."""
    def run(prompt) -> list[torch.Tensor]:
        steps = []
        for item in generate(prompt, **kwargs):
            steps.append(torch.as_tensor(item, dtype=torch.long).reshape(-1, 1).cpu())
            if len(steps) == n:
                break
        return steps

    try:
        rows = [torch.cat(run(idx), dim=1)]
    except (AssertionError, TypeError, AttributeError, ValueError):
        rows = [torch.cat(run(row.tolist()), dim=1) for row in idx]
    new = torch.cat(rows, dim=0).to(idx.device)
    return torch.cat([idx, new.expand(idx.size(0), -1) if new.size(0) == 1 else new], dim=1)


def _sharpened(s: Subject) -> tuple[nn.Module, bool]:
    """(A copy of the model overfit briefly on the batch, ``SHARPEN_STEPS`` AdamW steps, so that its
    argmax depends on the context; whether the overfit held). When the steps give non-finite weights (a
    NaN gradient: GRADIENTS names it), a fresh copy at the model's own weights instead; the model itself
    if it cannot be copied."""
    try:
        twin = copy.deepcopy(s.model)
    except Exception:
        return s.model, False
    low = s.dtype in (torch.float16, torch.bfloat16)
    if low:  # AdamW's eps and its updates vanish in half precision: sharpen in float32, then cast back
        twin.float()
    forward = Forward(twin, s.forward.interface)
    optimizer = torch.optim.AdamW(twin.parameters(), lr=SHARPEN_LR, weight_decay=0.0)
    with mode(twin, True), seeded(0):
        for _ in range(SHARPEN_STEPS):
            loss = forward.loss(s.xs, s.ys)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    if low:
        twin.to(s.dtype)
    if all(bool(torch.isfinite(p).all()) for p in twin.parameters()):
        return twin, True
    return copy.deepcopy(s.model), False


def greedy_departures(judged: torch.Tensor, got: torch.Tensor, s: Subject) -> tuple[torch.Tensor, ...]:
    """(the argmax of ``judged``, the full forward's logits at each new token; where the greedy tokens ``got``
    depart from it; where its best two logits are within rounding of each other). Either token of a tie is
    the argmax of a correct generate, so a tie is no departure (a head still at zero ties everywhere)."""
    expected = judged.argmax(-1)
    top2 = judged.topk(2, dim=-1).values
    tied = (top2[..., 0] - top2[..., 1]) <= s.tol(CACHE_TOL) * finite_scale(judged)
    return expected, (expected != got) & ~tied, tied


def needs_tokenizer(model: nn.Module) -> bool:
    """Whether a library's generate cannot run here: it requires ``model.tokenizer`` and the model has none
    (TransformerLens' ``HookedTransformer.generate`` asserts one)."""
    return library_generate(model) and hasattr(model, "tokenizer") and model.tokenizer is None


def _cache_through_generate(s: Subject) -> Link:
    if needs_tokenizer(s.model):
        return Link("CACHE", "skip", f"{type(s.model).__name__}.generate, its only cached path here, needs "
                                     "model.tokenizer, which is None")
    kwargs = greedy_kwargs(s.model.generate)
    if kwargs is None:
        return Link("CACHE", "skip", "generate has no greedy setting (top_k, do_sample or greedy) to compare with "
                                     "the full forward, and the model exposes no cache")
    P = min(GENERATE_PROMPT, s.T - 1)
    n = min(GENERATE_TOKENS, (s.block_size or s.T) - P)
    twin, sharp = _sharpened(s)
    prompt = s.xs[:2, :P]
    with mode(twin, False), torch.no_grad(), seeded(0):
        seq = call_generate(twin.generate, prompt, n, kwargs)
        logits = Forward(twin, s.forward.interface)(seq[:, :-1])  # position j predicts token j + 1
    judged = logits[:, P - 1:].float()
    got = seq[:, P:]
    _, differs, tied = greedy_departures(judged, got, s)
    wrong = int(differs.sum())
    first = int(differs.any(0).nonzero()[0]) if wrong else None
    evidence = [["greedy generate vs argmax of the full forward", f"{wrong} of {got.numel()} tokens differ"
                 + (f" ({int(tied.sum())} ties within rounding, {s.precision}, not counted)" if bool(tied.any())
                    else "")],
                ["prompt, new tokens", f"{P}, {n} " + (f"(after {SHARPEN_STEPS} overfit steps on a copy)" if sharp else
                                                       "(on a copy as built: the overfit steps gave non-finite weights)")],
                ["call", str(kwargs)]]
    if wrong:
        return Link("CACHE", "FAIL", f"greedy generate departs from the full forward at new token {first}: "
                                     f"{wrong} of {got.numel()} tokens differ", evidence,
                    advice=f"generate's new token {first} is not the argmax of the full forward over the same "
                           "prefix: a cache inside generate that is read back wrong (positions not offset by the "
                           "cache length, a mask or is_causal applied to a one-token step), or a context cropped "
                           "before block_size")
    return Link("CACHE", "ok", f"greedy generate equals the argmax of the full forward on each prefix "
                               f"({got.numel()} tokens; the model exposes no cache of its own)", evidence)


# ---------------------------------------------------------------------------
# GENERATE


def generate(s: Subject) -> Link:
    """GENERATE: ``generate`` runs past block_size and returns ids in [0, V).

    Seed 004, "Generation is a different program": every step crops the
    context to its last block_size tokens. A 4-token prompt is extended to
    block_size + 6 tokens (70 for block 64); a generate that never crops
    fails on the position table. The output must be (B, 4 + new) integer ids
    within [0, V), beginning with the prompt (transformers' generate is
    asked for ``min_new_tokens`` too: stopping at an end-of-sequence id is
    correct, and would shorten the output). "skip" without a generate
    method. A model that declares no length is held to generation's contract
    without the crop (``unbounded``): the prompt, then each new token the
    full forward's greedy choice.
    """
    gen = getattr(s.model, "generate", None)
    if not callable(gen):
        return Link("GENERATE", "skip", f"{type(s.model).__name__} has no generate method")
    if needs_tokenizer(s.model):
        return Link("GENERATE", "skip", f"{type(s.model).__name__}.generate needs model.tokenizer, which is None")
    block = s.block_size
    if block is None:
        return unbounded.generate_without_length(s)
    P = 4
    crops = not library_generate(s.model)  # transformers' generate never crops: its position table is a hard limit
    n = block + 6 - P if crops else block - P
    prompt = s.xs[:2, :P]
    kwargs = greedy_kwargs(gen) or {}
    if hugging_face(s.model):  # its generate stops once every row has emitted an end-of-sequence id, which a
        kwargs["min_new_tokens"] = n  # correct model may do at any step: the length asked is then kept
    evidence = [["call", f"generate(idx {tuple(prompt.shape)}, {new_tokens_keyword(gen)}={n}, "
                         f"{kwargs or 'defaults'})"]]
    if not crops:
        evidence.append(["context", f"up to block_size: {type(s.model).__name__}'s library generate does not crop "
                                    "the context"])
    with mode(s.model, False), torch.no_grad(), seeded(0):
        try:
            out = call_generate(gen, prompt, n, kwargs)
        except Exception as exc:
            inside = False
            if crops:
                try:
                    call_generate(gen, prompt, block - P, kwargs)
                    inside = True
                except Exception:
                    pass
            where = (f"it works up to block_size {block} tokens and fails past it" if inside else
                     "it fails even within block_size")
            fix = (f"crop the context to its last block_size tokens (idx[:, -{block}:]) before each step" if inside
                   else "generate fails on a short prompt too: run it by hand and fix what the exception names "
                        "(the forward's convention, a cache set up for another batch size)")
            return Link("GENERATE", "FAIL", f"generate to {P + n} tokens raised {first_line(exc)[:120]}; {where}",
                        evidence, advice=fix)
    evidence.append(["returned", f"{tuple(out.shape)} {out.dtype}".replace("torch.", "")])
    problem, advice = unbounded.generate_contract(out, prompt, n, s.V)
    if problem:
        return Link("GENERATE", "FAIL", f"generate {problem}", evidence, advice=advice)
    past = f"past block_size {block}" if crops else f"up to block_size {block}"
    return Link("GENERATE", "ok", f"generated {P + n} tokens {past}; ids within [0, {s.V})", evidence)


def _cache_advice(departed: dict[str, bool]) -> str:
    """What to look for when cached decoding departs from the full forward, by which modes departed."""
    single = departed.get("one token at a time", False)
    if not single and departed.get("chunks of 3", False):
        return ("one token at a time agrees but chunks of 3 depart: a chunk of several tokens needs a causal mask "
                "within itself, offset by the cache length (query i of the chunk sees keys up to cache length + i); "
                "is_causal=True with a cache masks the wrong keys")
    return ("one token at a time departs: offset positions (the position table's index, the rotary angle) by the "
            "cache length, append this step's k and v to the cache before attending, and give a one-token step no "
            "causal mask over the cached keys")

