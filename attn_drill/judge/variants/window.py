"""Known mistakes of sliding-window attention with sinks, as executable variants.

`window_attention` computes the model answer with default knobs. The window's shape is WindowKnobs: which keys
around each query's position are visible; the sink's use is WindowKnobs.sink; the attention mistakes every
exercise shares (the scale, the softmax's axis, the fill, the mask after the softmax) are variants.attention's
Knobs, applied here with the window and the sink column. tests/test_references.py proves the defaults equal the
reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_drill.judge.variants.attention import RIGHT, Knobs, scale_of

WIDE = 10 ** 9  # a bound that never binds: no lower edge, or no causal edge


@dataclass(frozen=True)
class WindowKnobs:
    """Key j is visible from position p iff p - behind <= j <= p (j < p when not itself), or p < j <= p + ahead.
    The contract: behind = window - 1, itself, ahead = 0, p = i + Tk - Tq."""
    extra: int | None = 0  # keys before the query beyond window - 1 (+1: the Hugging Face window of window + 1);
    #                        None: no lower edge (every earlier key)
    itself: bool = True  # the query's own key
    ahead: int | str = 0  # keys after the query: 0 (causal), an int, "window" (window - 1: a band), "all"
    origin: str = "end"  # end: p = i + Tk - Tq (the contract) | start: p = i (a top-left window)
    sink: str = "ok"  # ok | ignored | scaled (divided by sqrt(d) with the scores) | unshifted (exp(sink) added to
    #                   a max-shifted sum: the sink joins as sink + the row's max)


RIGHT_WINDOW = WindowKnobs()


def visible(Tq: int, Tk: int, window: int, wk: WindowKnobs = RIGHT_WINDOW, device=None) -> torch.Tensor:
    """(Tq, Tk) bool: which keys each query may see under the window's shape `wk`."""
    p = torch.arange(Tq, device=device)[:, None] + (Tk - Tq if wk.origin == "end" else 0)  # (Tq, 1)
    j = torch.arange(Tk, device=device)[None, :]  # (1, Tk)
    behind = WIDE if wk.extra is None else window - 1 + wk.extra
    ahead = {"window": window - 1, "all": WIDE}.get(wk.ahead, wk.ahead)
    # the window's past: from p - behind up to p itself (or to p - 1); empty when behind < 0 (a window of 0 keys)
    past = (j >= p - behind) & ((j <= p) if wk.itself else (j < p))
    return past | ((j > p) & (j <= p + ahead))


def window_attention(q, k, v, window: int, sinks=None, knobs: Knobs = RIGHT, wk: WindowKnobs = RIGHT_WINDOW):
    """(out (B, H, Tq, d), weights (B, H, Tq, Tk)) with one mistake per knob."""
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    scale = scale_of(knobs, q)
    late, scale = (scale, 1.0) if knobs.scale_at != "scores" else (1.0, scale)
    scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, Tq, Tk)
    seen = visible(Tq, Tk, window, wk, q.device)
    if knobs.mask == "ok":  # (ignored: no mask; after_softmax...: below)
        fill = float("-inf") if knobs.fill == "-inf" else torch.finfo(scores.dtype).min
        scores = scores.masked_fill(~seen, fill if knobs.fill_value is None else knobs.fill_value)
    if sinks is not None and wk.sink != "ignored":
        sink = sinks.reshape(1, H, 1, 1).expand(B, H, Tq, 1)
        if wk.sink == "scaled":
            sink = sink * scale
        elif wk.sink == "unshifted":  # exp(sink) added to sum(exp(s - max)): the sink acts as sink + max
            sink = sink + scores.amax(-1, keepdim=True)
        scores = torch.cat([scores, sink], dim=-1)  # (B, H, Tq, Tk + 1)
    weights = torch.softmax(scores, dim=knobs.softmax_dim)[..., :Tk]
    if knobs.mask in ("after_softmax", "after_softmax_renorm"):
        weights = weights * seen  # probabilities zeroed after normalising
    elif knobs.mask == "after_softmax_inf":
        weights = weights.masked_fill(~seen, float("-inf"))  # -inf after the softmax: NaN once multiplied by v
    if knobs.scale_at == "weights":
        weights = weights * late
    out = weights @ v
    if knobs.mask == "after_softmax_renorm":
        out = out / weights.sum(-1, keepdim=True)
    return (out * late if knobs.scale_at == "output" else out), weights
