"""Text to token ids: fit the tokenizer, then encode.

Seed 004, "Data: the tokenizer". A character tokenizer knows only the
characters it was fit on; whatever text it will later encode must come from
the same alphabet. Fitting it on a quick sample looks harmless and is not:
the sample decides the vocabulary.
"""

from engine.tokenizer import CharTokenizer


def prepare(text: str):
    """Fit a character tokenizer and encode ``text`` with it.

    Args:
        text: the whole corpus.

    Returns:
        (tokenizer, ids): the fitted ``CharTokenizer`` and a (len(text),)
        int64 tensor of ids.
    """
    fit_on = text  # the vocabulary comes from every character the model will see
    tokenizer = CharTokenizer(fit_on)
    return tokenizer, tokenizer.encode_tensor(text)
