"""A numbered list in a prompt shows the numbers its author wrote.

Prompts are Markdown (the TUI's Markdown widget, Rich's in ``tutor show``), and Markdown numbers an
ordered list itself: from its first item's number, one more per item. Two numbered links written on
one line ("1. TOKENIZER · 2. ALIGNMENT") are one item, so every later item is shown one lower than
written and the seed's chain reads 1, 2, 2, 3 … on screen. Each item's written number must be the one
shown.
"""

from __future__ import annotations

from markdown_it import MarkdownIt

from tutor.store.catalog_cache import load_catalog


def shown_against_written(markdown: str) -> list[tuple[int, str]]:
    """(number shown, number written) for every item of every ordered list in ``markdown``."""
    pairs, counters = [], []
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "ordered_list_open":
            counters.append(int(token.attrs.get("start", 1)))
        elif token.type == "bullet_list_open":
            counters.append(None)
        elif token.type in ("ordered_list_close", "bullet_list_close"):
            counters.pop()
        elif token.type == "list_item_open" and counters[-1] is not None:
            pairs.append((counters[-1], token.info))
            counters[-1] += 1
    return pairs


def test_the_check_sees_a_renumbered_list():
    assert shown_against_written("1. a · 2. b\n3. c\n") == [(1, "1"), (2, "3")]
    assert shown_against_written("1. a\n2. b\n3. c\n") == [(1, "1"), (2, "2"), (3, "3")]


def test_every_numbered_list_in_a_prompt_is_shown_as_written():
    wrong = [f"{ex.id}: item written {written} is shown as {shown}"
             for ex in load_catalog().exercises
             for shown, written in shown_against_written(ex.prompt) if str(shown) != written]
    assert not wrong, "; ".join(wrong)
