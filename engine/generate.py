"""Autoregressive generation: greedy, temperature, top-k, top-p and a repetition penalty; naive and cached;
prompts of different lengths in one left-padded batch.

Seed 004, "Generation is a different program": generation feeds the model
its own output, in eval mode (dropout off), cropping the context to
block_size every step. Seed 000, section 6: a KV cache keeps each layer's past
keys and values so a step only projects the newest token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus filtering: keep the fewest most likely ids whose probability reaches top_p.

    Seed 004, "Generation is a different program" (the sampling knobs).
    Ids are ranked by probability; an id is dropped once the ids ranked
    above it already carry top_p or more. The id whose probability carries
    the running total across top_p therefore stays: for probabilities
    [0.5, 0.41, 0.09] and top_p = 0.9 the first two stay (0.5 alone falls
    short of 0.9). The most likely id always stays.

    Args:
        logits: (B, V) scores; ids already at -inf stay there.
        top_p: the probability mass to keep, in (0, 1].

    Returns:
        (B, V) logits with every dropped id at -inf.
    """
    ranked, order = torch.sort(logits, dim=-1, descending=True)  # (B, V), best first
    probs = F.softmax(ranked, dim=-1)  # (B, V)
    above = probs.cumsum(dim=-1) - probs  # (B, V): mass of the ids ranked above each one
    drop_ranked = above >= top_p  # the ids above already reach top_p
    drop = torch.zeros_like(drop_ranked).scatter(-1, order, drop_ranked)  # back to id order
    return logits.masked_fill(drop, float("-inf"))


def valid_logits(logits: torch.Tensor, valid_vocab: int | None) -> torch.Tensor:
    """Remove the ids a padded vocabulary table owns but no tokenizer emits.

    Seed 000, section 8 ("Vocabulary padding"): GPT-2's 50,257 ids live in a
    table of 50,304 rows, a multiple of 64; the 47 extra rows are not
    tokens, and a decoder must never pick them.

    Args:
        logits: (B, V) scores over the model's table.
        valid_vocab: how many ids the tokenizer defines (ids 0 .. valid_vocab - 1),
            or None when the table has no padding.

    Returns:
        (B, V) logits with ids >= valid_vocab at -inf.
    """
    if valid_vocab is None:
        return logits
    padded = torch.arange(logits.size(-1), device=logits.device) >= valid_vocab  # (V,)
    return logits.masked_fill(padded, float("-inf"))


def apply_repetition_penalty(logits: torch.Tensor, idx: torch.Tensor, penalty: float) -> torch.Tensor:
    """Lower the score of every id that already occurs in the sequence (CTRL's repetition penalty).

    A seen id's logit is divided by ``penalty`` when it is positive and
    multiplied by it when it is negative, so with penalty > 1 either way it
    moves down, towards less likely: 2.0 becomes 1.0 and -1.0 becomes -2.0
    for penalty 2. Ids not yet in the sequence keep their logits.

    Args:
        logits: (B, V) next-token scores.
        idx: (B, T) the ids generated so far, prompt included.
        penalty: > 0; 1 changes nothing, above 1 discourages repeats.

    Returns:
        (B, V) logits.
    """
    seen = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, idx, True)  # (B, V): ids already in the row
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)  # (B, V): every score moves down
    return torch.where(seen, penalised, logits)  # (B, V)


def sampling_distribution(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                          top_p: float | None = None, valid_vocab: int | None = None) -> torch.Tensor:
    """The distribution the next id is drawn from, for last-position logits.

    Seed 004, "Generation is a different program". In order: padded ids
    are removed (``valid_logits``); the logits are divided by the
    temperature (below 1 sharpens, above 1 flattens); top-k keeps the k
    largest; top-p keeps the nucleus (``top_p_filter``) of the tempered
    distribution; softmax turns what is left into probabilities.

    Args:
        logits: (B, V) scores.
        temperature: > 0.
        top_k: keep the top_k largest logits, or None.
        top_p: keep the nucleus of mass top_p, or None.
        valid_vocab: ids the tokenizer defines, or None (see ``valid_logits``).

    Returns:
        (B, V) probabilities; each row sums to 1 and removed ids are exactly 0.
    """
    logits = valid_logits(logits, valid_vocab)
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return F.softmax(logits, dim=-1)  # (B, V)


def _next_token(logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None,
                valid_vocab: int | None, greedy: bool, generator: torch.Generator | None) -> torch.Tensor:
    """Pick one id per row from last-position logits (B, V); returns (B, 1)."""
    if greedy:
        return valid_logits(logits, valid_vocab).argmax(dim=-1, keepdim=True)  # (B, 1)
    probs = sampling_distribution(logits, temperature, top_k, top_p, valid_vocab)  # (B, V)
    return torch.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)


def generate(model, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, greedy: bool = False, use_cache: bool = False,
             generator: torch.Generator | None = None, top_p: float | None = None,
             valid_vocab: int | None = None, repetition_penalty: float | None = None) -> torch.Tensor:
    """Extend idx by max_new_tokens tokens sampled from the model.

    The model is put in eval mode (dropout off) and its previous mode is
    restored afterwards, even on error. Runs under torch.no_grad().

    Without a cache, every step reruns the model on the last block_size
    tokens. With ``use_cache=True`` the prompt (its last block_size tokens)
    is prefilled into a KV cache and each step feeds only the newest token.
    The position table is absolute, so a full cache cannot simply drop its
    oldest entry: when the next token would overflow block_size, the cache
    is rebuilt from the last block_size - 1 tokens (a sliding window) and
    the new token is fed on top. The logits then match the naive path, which
    sees the same last block_size tokens; past that point each step costs a
    full block_size prefill, as the naive path does.

    Args:
        model: a ``GPT`` (needs ``config.block_size``, ``config.vocab_size``
            and, for use_cache, ``new_cache``).
        idx: (B, T) int64 prompt ids, T >= 1.
        max_new_tokens: number of tokens to append.
        temperature: > 0; logits are divided by it before sampling.
        top_k: keep only the top_k most likely ids before sampling; 1 is greedy.
        greedy: take the argmax instead of sampling (temperature, top_k and
            top_p unused).
        use_cache: decode through a KV cache.
        generator: torch.Generator on the model's device, for reproducible sampling.
        top_p: keep only the nucleus of probability mass top_p, in (0, 1]
            (``top_p_filter``); applied after temperature and top_k.
        valid_vocab: when the model's vocabulary table is padded past the
            tokenizer's ids, how many ids are real; the rest are never picked.
        repetition_penalty: > 0, or None; every step first lowers the
            logits of the ids already in the sequence
            (``apply_repetition_penalty``), greedy or sampled.

    Returns:
        (B, T + max_new_tokens) int64 ids: the prompt followed by new tokens.

    Raises:
        ValueError: if temperature <= 0, top_k is outside [1, V], top_p is
            outside (0, 1], valid_vocab is outside [1, V], max_new_tokens < 0,
            repetition_penalty <= 0, or idx is not (B, T) with T >= 1.
    """
    V = model.config.vocab_size
    block_size = model.config.block_size
    if temperature <= 0:
        raise ValueError(
            f"temperature must be greater than 0, got {temperature}; "
            "use greedy=True for argmax decoding."
        )
    if top_k is not None and not 1 <= top_k <= V:
        raise ValueError(f"top_k must be between 1 and the vocabulary size V={V}, got top_k={top_k}.")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got top_p={top_p}; 1 keeps every id.")
    if valid_vocab is not None and not 1 <= valid_vocab <= V:
        raise ValueError(f"valid_vocab must be between 1 and the table size V={V}, got {valid_vocab}.")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be zero or more, got {max_new_tokens}.")
    if repetition_penalty is not None and repetition_penalty <= 0:
        raise ValueError(f"repetition_penalty must be greater than 0, got {repetition_penalty}; 1 changes nothing.")
    if idx.dim() != 2 or idx.size(1) < 1:
        raise ValueError(f"idx must have shape (B, T) with T >= 1, got {tuple(idx.shape)}.")

    def pick(logits: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        if repetition_penalty is not None:
            logits = apply_repetition_penalty(logits, idx, repetition_penalty)  # (B, V)
        return _next_token(logits, temperature, top_k, top_p, valid_vocab, greedy, generator)

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if not use_cache:
                for _ in range(max_new_tokens):
                    idx_cond = idx[:, -block_size:]
                    logits, _ = model(idx_cond)  # (B, T_cond, V)
                    idx = torch.cat((idx, pick(logits[:, -1, :], idx)), dim=1)
                return idx

            B = idx.size(0)
            cache = model.new_cache(B)
            logits, _ = model(idx[:, -block_size:], cache=cache)  # prefill: (B, T_cond, V)
            for step in range(max_new_tokens):
                idx_next = pick(logits[:, -1, :], idx)  # (B, 1)
                idx = torch.cat((idx, idx_next), dim=1)
                if step == max_new_tokens - 1:
                    break
                if cache[0].seq_len == block_size:
                    # Sliding window: re-encode the last block_size - 1 tokens
                    # before idx_next at positions 0.. so idx_next fits at the end.
                    cache = model.new_cache(B)
                    if block_size > 1:
                        model(idx[:, -block_size:-1], cache=cache)
                logits, _ = model(idx_next, cache=cache)  # (B, 1, V)
            return idx
    finally:
        model.train(was_training)


def left_pad(prompts: list[list[int]], pad_id: int, device=None,
             multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack prompts of different lengths into one batch, each flush right.

    Seed 000, section 7 ("Masking chooses which examples count"), for
    generation: the next token of every row is predicted from the row's last
    column, so each prompt must end there; the padding goes in front.

    ``multiple`` rounds the width up to a multiple of it (a *bucket*): a
    model compiled for static shapes (``torch.compile(dynamic=False)``)
    builds one graph per width it meets, so batches whose longest prompt
    differs still share a width, and a graph. Seed 004, "Compilation".

    Args:
        prompts: B lists of token ids, each of length >= 1.
        pad_id: the id written into the padding.
        device: where to put idx and pads.
        multiple: >= 1; T is the longest prompt rounded up to a multiple of it.

    Returns:
        (idx, pads): idx (B, T) int64; pads (B,) int64, how many padding ids
        open each row.

    Raises:
        ValueError: if there is no prompt, one is empty, or multiple < 1.
    """
    if not prompts or min(len(p) for p in prompts) < 1:
        raise ValueError("left_pad needs at least one prompt, each of one or more ids.")
    if multiple < 1:
        raise ValueError(f"multiple must be 1 or more, got {multiple}; 1 pads to the longest prompt.")
    T = max(len(p) for p in prompts)
    T = -(-T // multiple) * multiple  # round up to the bucket: few widths, few compiled graphs
    idx = torch.full((len(prompts), T), pad_id, dtype=torch.long)  # (B, T)
    for b, p in enumerate(prompts):
        idx[b, T - len(p):] = torch.tensor(p, dtype=torch.long)  # flush right: the prompt ends where generation begins
    pads = torch.tensor([T - len(p) for p in prompts], dtype=torch.long)  # (B,)
    return idx.to(device), pads.to(device)


def generate_batch(model, prompts: list[list[int]], max_new_tokens: int, pad_id: int = 0) -> list[list[int]]:
    """Greedily continue prompts of different lengths together, in one batch through the KV cache.

    The prompts are left-padded (``left_pad``) and the caches are told
    where each row's padding ends (``KVCache.pads``): attention hides the
    padding keys and positions count from each row's first real token, so
    every row continues exactly as it would alone. Runs in eval mode under
    no_grad; the model's mode is restored.

    Args:
        model: a ``GPT``.
        prompts: B lists of token ids.
        max_new_tokens: tokens to append to every row.
        pad_id: the id the padding holds (its value is never seen).

    Returns:
        B lists: each prompt followed by its max_new_tokens new ids.

    Raises:
        ValueError: if the longest prompt plus max_new_tokens exceeds
            block_size (this batched path does not slide its window).
    """
    device = next(model.parameters()).device
    idx, pads = left_pad(prompts, pad_id, device)
    if idx.size(1) + max_new_tokens > model.config.block_size:
        raise ValueError(f"the longest prompt ({idx.size(1)}) plus {max_new_tokens} new tokens exceeds "
                         f"block_size {model.config.block_size}; generate fewer tokens or shorten the prompts.")
    was_training = model.training
    model.train(False)
    try:
        with torch.no_grad():
            cache = model.new_cache(idx.size(0))
            for layer in cache:
                layer.pads = pads  # (B,)
            logits, _ = model(idx, cache=cache)  # prefill: (B, T, V)
            new = []
            for step in range(max_new_tokens):
                idx_next = logits[:, -1, :].argmax(dim=-1, keepdim=True)  # (B, 1)
                new.append(idx_next)
                if step < max_new_tokens - 1:
                    logits, _ = model(idx_next, cache=cache)  # (B, 1, V)
    finally:
        model.train(was_training)
    new_ids = torch.cat(new, dim=1).tolist() if new else [[] for _ in prompts]  # (B, max_new_tokens)
    return [list(p) + n for p, n in zip(prompts, new_ids)]


def beam_search(model, idx: torch.Tensor, max_new_tokens: int, beam_width: int, eos_id: int,
                length_penalty: float = 1.0) -> tuple[list[int], float]:
    """The most likely continuation of one prompt that beam search finds, length-normalised.

    Seed 004, "Generation is a different program". Every step extends each
    of the ``beam_width`` best open hypotheses by each of its beam_width most
    likely next ids and walks the candidates from the highest total
    log-probability down: one that ends in ``eos_id`` is finished and leaves
    the beam, the others fill it until it holds beam_width again. After ``max_new_tokens`` steps the open ones count as
    finished too. A finished hypothesis is scored by the sum of the
    log-probabilities of its new tokens divided by (number of new tokens) **
    length_penalty: the prompt was given, not generated, so its length does
    not count. Each step reruns the model on the last block_size ids, in
    eval mode under no_grad (the model's mode is restored).

    Args:
        model: anything ``model(ids) -> (logits, _)`` with logits (1, T, V)
            and ``config.block_size`` (a ``GPT``).
        idx: (1, T) int64 prompt.
        max_new_tokens, beam_width: >= 1.
        eos_id: the id that ends a hypothesis.
        length_penalty: the exponent of the length normalisation (1: mean
            log-probability per new token; 0: the plain sum).

    Returns:
        (ids, score): the best hypothesis, prompt included, and its score.

    Raises:
        ValueError: if idx is not one prompt (1, T), or beam_width or
            max_new_tokens < 1.
    """
    if idx.dim() != 2 or idx.size(0) != 1 or idx.size(1) < 1:
        raise ValueError(f"beam_search continues one prompt of shape (1, T), got {tuple(idx.shape)}.")
    if beam_width < 1 or max_new_tokens < 1:
        raise ValueError(f"beam_width and max_new_tokens must be at least 1, got {beam_width} and {max_new_tokens}.")
    block_size = model.config.block_size
    prompt_len = idx.size(1)
    beams = [(idx[0].tolist(), 0.0)]  # (ids, sum of the new tokens' log-probabilities)
    finished = []
    was_training = model.training
    model.train(False)
    try:
        with torch.no_grad():
            for _ in range(max_new_tokens):
                candidates = []
                for ids, total in beams:
                    logits, _ = model(torch.tensor([ids[-block_size:]], device=idx.device))  # (1, T, V)
                    best = logits[0, -1].log_softmax(dim=-1).topk(beam_width)  # the beam_width likeliest next ids
                    candidates += [(ids + [t], total + lp) for lp, t in zip(best.values.tolist(), best.indices.tolist())]
                candidates.sort(key=lambda c: c[1], reverse=True)
                beams = []
                for ids, total in candidates:
                    if len(beams) == beam_width:
                        break
                    (finished if ids[-1] == eos_id else beams).append((ids, total))
                if not beams:
                    break
    finally:
        model.train(was_training)
    finished += beams  # still open after max_new_tokens

    def score(hypothesis: tuple[list[int], float]) -> float:
        ids, total = hypothesis
        new_tokens = len(ids) - prompt_len  # the generated part only
        return total / new_tokens ** length_penalty

    best = max(finished, key=score)
    return best[0], score(best)
