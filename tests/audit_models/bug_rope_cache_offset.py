"""Bug (CACHE): the rotary module is handed offset 0 for every cached token, so each new key and query is
rotated as if it stood at the start; the full forward is right, the decoding in generate is not."""

import zoo_modern


def build():
    return zoo_modern.build(cache_offset=False)
