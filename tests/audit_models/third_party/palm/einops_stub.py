"""The one einops function PaLM-pytorch's files import, ``rearrange``, for the patterns they use: einops is
not a dependency of the tutor, and the files stay unchanged (the factory hands this in as ``einops``)."""


def rearrange(x, pattern, **axes):
    if pattern == "... (j d) -> ... j d":
        return x.reshape(*x.shape[:-1], axes["j"], x.shape[-1] // axes["j"])
    if pattern == "b n (h d) -> b h n d":
        b, n, hd = x.shape
        return x.reshape(b, n, axes["h"], hd // axes["h"]).transpose(1, 2)
    if pattern == "b h n d -> b n (h d)":
        b, h, n, d = x.shape
        return x.transpose(1, 2).reshape(b, n, h * d)
    if pattern == "b c n -> b n c":
        return x.transpose(1, 2)
    raise NotImplementedError(f"the einops stub has no pattern {pattern!r}")
