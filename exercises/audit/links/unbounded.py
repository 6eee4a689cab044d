"""GENERATE for a model that declares no length (ALiBi as BLOOM's, or no positions at all).

Without a block_size there is no crop to test, but generation still has a
contract every correct GPT keeps: ``generate`` asked for N new tokens returns
the prompt followed by N ids in [0, V), and with greedy decoding each new
token is the argmax of the full forward's logits at the last position of the
sequence so far. The full forward is run once over the whole generated
sequence: CAUSALITY has shown that position j's logits there equal those of
the sequence cut after j.

The length: an 8-token prompt and 32 new tokens, 40 in all, past the T the
other links ran at (at most 32), because nothing declares a limit to stay
within. The model is overfit briefly first (on a copy, as CACHE does for a
generate-only model) so that its argmax depends on the context: a generate
that drops the context then picks other tokens.
"""

from __future__ import annotations

import copy

import torch

from exercises.audit.adapter import Forward, hugging_face
from exercises.audit.measure import mode, seeded
from exercises.audit.report import Link
from exercises.audit.subject import Subject
from exercises.outcome import first_line

#: The prompt and the new tokens asked of a generate with no declared length.
PROMPT, NEW_TOKENS = 8, 32


def generate_without_length(s: Subject) -> Link:
    """GENERATE's contract for a model with no declared length (see the module's docstring)."""
    # inference calls this module for GENERATE: its generate helpers are read once both are loaded
    from exercises.audit.links.inference import (SHARPEN_STEPS, _sharpened, call_generate, greedy_departures,
                                                  greedy_kwargs, new_tokens_keyword)

    P, n = min(PROMPT, s.T - 1), NEW_TOKENS
    kwargs = greedy_kwargs(s.model.generate)
    greedy = kwargs is not None
    kwargs = dict(kwargs or {})
    if hugging_face(s.model):  # transformers' generate may stop at an end-of-sequence id: ask for the length
        kwargs["min_new_tokens"] = n
    if greedy and s.untrainable is None:
        twin, sharp = _sharpened(s)
    else:
        try:
            twin, sharp = copy.deepcopy(s.model), False
        except Exception:
            twin, sharp = s.model, False
    prompt = s.xs[:2, :P]
    why = (f"no block_size declared: generated {n} tokens after a prompt of {P}, to {P + n}, past T = {s.T}, the longest "
           "the other links ran")
    evidence = [["call", f"generate(idx {tuple(prompt.shape)}, {new_tokens_keyword(twin.generate)}={n}, "
                         f"{kwargs or 'defaults'})"],
                ["length", f"{P} + {n}: {type(s.model).__name__} declares no block_size, n_positions, "
                           "max_position_embeddings, max_seq_len or sequence_len and has no position table"]]
    with mode(twin, False), torch.no_grad(), seeded(0):
        try:
            seq = call_generate(twin.generate, prompt, n, kwargs)
        except Exception as exc:
            return Link("GENERATE", "FAIL", f"generate to {P + n} tokens raised {first_line(exc)[:120]} "
                                            "(no block_size declared, so no length should be out of reach)",
                        evidence, advice="a model that declares no block_size must generate any length: a table "
                                         "or buffer sized at build (a mask, an ALiBi bias) has to grow with the "
                                         "sequence, or the model should declare its block_size")
        evidence.append(["returned", f"{tuple(seq.shape)} {seq.dtype}".replace("torch.", "")])
        problem, advice = generate_contract(seq, prompt, n, s.V)
        if problem:
            return Link("GENERATE", "FAIL", f"generate {problem}", evidence, advice=advice)
        if not greedy:
            return Link("GENERATE", "ok", f"{why}; ids within [0, {s.V}) (generate has no greedy setting, so its "
                                          "choices cannot be compared with the full forward's)", evidence)
        logits = Forward(twin, s.forward.interface)(seq[:, :-1])
    judged = logits[:, P - 1:].float()  # position j's logits choose token j + 1
    banned = _end_ids(s.model) if "min_new_tokens" in kwargs else []
    if banned:  # min_new_tokens bans the end-of-sequence ids until the length is reached: so does the argmax
        judged[..., [i for i in banned if 0 <= i < judged.size(-1)]] = float("-inf")
        evidence.append(["end-of-sequence ids", f"{banned}: banned by min_new_tokens, left out of the argmax too"])
    got = seq[:, P:]
    expected, differs, tied = greedy_departures(judged, got, s)
    wrong = int(differs.sum())
    evidence.append(["greedy tokens vs argmax of the full forward", f"{wrong} of {got.numel()} differ"
                     + (f" ({int(tied.sum())} ties within rounding, {s.precision}, not counted)" if bool(tied.any())
                        else "")])
    evidence.append(["model", f"a copy after {SHARPEN_STEPS} overfit steps on the batch"
                     if sharp else "a copy as built"])
    if wrong:
        k = int(differs.any(0).nonzero()[0])  # the first new token, in order, any row gets wrong
        row = int(differs[:, k].nonzero()[0])
        return Link("GENERATE", "FAIL", f"greedy generate departs from the full forward at new token {k} (position "
                                        f"{P + k}, row {row}): it gave id {int(got[row, k])}, the full forward's "
                                        f"argmax is {int(expected[row, k])}; {wrong} of {got.numel()} tokens differ",
                    evidence, advice=f"generate's token at position {P + k} is not the full forward's greedy choice: "
                                     "its cached step departs there (a bias or mask sized for a shorter sequence, "
                                     "positions not offset by the cache length)")
    return Link("GENERATE", "ok", f"{why}, each the full forward's greedy choice; ids within [0, {s.V})", evidence)


def _end_ids(model) -> list[int]:
    """The end-of-sequence ids a transformers model's generate stops at (its generation config, else its
    config), as a list."""
    for owner in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        ids = getattr(owner, "eos_token_id", None)
        if ids is not None:
            return [int(i) for i in (ids if isinstance(ids, (list, tuple)) else [ids])]
    return []


def generate_contract(seq: torch.Tensor, prompt: torch.Tensor, n: int, V: int) -> tuple[str, str]:
    """('', '') when ``seq`` is (B, P + n) integer ids in [0, V) beginning with the prompt, else (what is wrong,
    what to change)."""
    B, P = prompt.shape
    if tuple(seq.shape) != (B, P + n):
        return (f"returned {tuple(seq.shape)}, expected {(B, P + n)}",
                "return the prompt with the new tokens appended, (B, prompt + max_new_tokens): torch.cat((idx, next), 1)")
    if seq.is_floating_point() or not bool(((seq >= 0) & (seq < V)).all()):
        return (f"ids outside [0, {V}) or not integers",
                "sample integer token ids (argmax or torch.multinomial over softmax(logits)), not logits or probabilities")
    if not torch.equal(seq[:, :P], prompt):
        return ("does not begin with the prompt",
                "keep the prompt at the front of what generate returns and append each new token after it")
    return "", ""
