"""Known mistakes of ALiBi (alibi), as executable variants.

`alibi_attention` computes the model answer with default knobs (tests/test_reference_alibi.py proves it): the
slopes' formula, the bias's form and the causal mask are AlibiKnobs; the scale and the softmax's axis are
variants.attention's Knobs. `slopes` gives every formula a careless alibi_slopes has.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_drill.i18n import t
from attn_drill.judge.variants.attention import RIGHT, Knobs, scale_of


def _geometric(n: int, offset: int = 1) -> list[float]:
    start = 2 ** (-8 / n)
    return [start ** (h + offset) for h in range(n)]


# how -> slopes for n heads ("ok": the paper's); said(how) words the formula
SLOPES = {
    "ok": None,
    "pow2": lambda n: _geometric(n),
    "offset": lambda n: _geometric(n, 0),
    "base2": lambda n: [2 ** -(h + 1) for h in range(n)],
    "linear": lambda n: [(h + 1) / n for h in range(n)],
    "inverse": lambda n: [1 / (h + 1) for h in range(n)],
    "reversed": lambda n: paper(n)[::-1],
    "odd": lambda n: _split(n, 1),
    "truncated": lambda n: _geometric(_up(n))[:n],
}


def said(how: str) -> str:
    """SLOPES' formula `how` (not "ok") in words, in the language in use."""
    return t(f"evidence.modern.variants_alibi.{how}")


def _up(n: int) -> int:
    return 2 ** math.ceil(math.log2(n))


def _split(n: int, first: int) -> list[float]:
    p = 2 ** math.floor(math.log2(n))
    return _geometric(p) + _geometric(2 * p)[first::2][: n - p]


def paper(n: int) -> list[float]:
    return _split(n, 0)


def slopes(n: int, how: str = "ok") -> torch.Tensor:
    """float32 (n,) slopes by one of SLOPES' formulas."""
    values = paper(n) if how == "ok" else SLOPES[how](n)
    return torch.tensor(values, dtype=torch.float32)


@dataclass(frozen=True)
class AlibiKnobs:
    slopes: str = "ok"  # the formula alibi_attention uses (SLOPES)
    returned: str | None = None  # the formula alibi_slopes returns; None: the same as `slopes`
    bias: str = "ok"  # ok: -m |p - j| | reward (+m |p - j|) | scaled (divided by sqrt(d) with the scores)
    #                   | key (+m j, fairseq's: the distance only under a causal mask) | key_neg (-m j)
    origin: str = "end"  # the query's position in the bias: end (i + Tk - Tq) | start (i: top-left)
    causal: str = "ok"  # ok | none (causal=True ignored) | no-diagonal | one-future | top-left
    attn: Knobs = RIGHT  # scale, softmax_dim


RIGHT_ALIBI = AlibiKnobs()


def alibi_attention(q, k, v, causal: bool, knobs: AlibiKnobs = RIGHT_ALIBI):
    """(out, weights, the slopes alibi_slopes returns, cast to q's dtype) with one mistake per knob."""
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    i = torch.arange(Tq)[:, None]
    p = i + (Tk - Tq)
    pos = p if knobs.origin == "end" else i
    j = torch.arange(Tk)[None, :]
    m = slopes(H, knobs.slopes).to(q.dtype)[:, None, None]  # (H, 1, 1)
    scale = scale_of(knobs.attn, q)
    bias = {"ok": -m * (pos - j).abs(), "reward": m * (pos - j).abs(), "scaled": -m * (pos - j).abs() * scale,
            "key": m * j, "key_neg": -m * j}[knobs.bias]  # (H, Tq, Tk)
    scores = (q @ k.transpose(-2, -1)) * scale + bias
    if causal and knobs.causal != "none":
        shift = {"ok": 0, "no-diagonal": -1, "one-future": 1, "top-left": -(Tk - Tq)}[knobs.causal]
        scores = scores.masked_fill(j > p + shift, float("-inf"))
    weights = torch.softmax(scores, dim=knobs.attn.softmax_dim)
    returned = slopes(H, knobs.slopes if knobs.returned is None else knobs.returned).to(q.dtype)
    return weights @ v, weights, returned
