"""Known flash-attention mistakes as executable variants of the blockwise computation.

`flash` with default knobs is the right answer; each knob reproduces one real mistake. It walks the keys in
the same blocks as the user's code (the case's block_size), because the online-softmax mistakes depend on
where the blocks start. A query row that sees no key comes back NaN: such rows are never compared.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_drill.judge.variants.attention import scale_of


@dataclass(frozen=True)
class FlashKnobs:
    scale: float | str | None = None  # None = 1/sqrt(d); a number = what the scores are multiplied by; a rule
    #                                   of variants.SCALE_RULES
    causal: str = "ok"  # ok | diagonal (hides key i + (Tk - Tq)) | future (shows one key more) | topleft (j <= i)
    #                     | blocklocal (key j counted from its block's start)
    rescale: str = "ok"  # ok | acc (output not rescaled) | sum (running sum not) | none (neither) | blockmax
    normalise: str = "ok"  # ok | never (the accumulator returned as it is) | stale (divided by the sum before the
    #                        last block was added) | stale-rescaled (that sum rescaled to the last max) |
    #                        last-block (the last block's own sum: the variable of the loop's last pass)
    scale_at: str = "scores"  # scores | output (1/sqrt(d) applied to the result, not to the scores)
    fill: float | None = None  # None: hidden scores -inf; a number: what they are set to (0: mask-fill-zero)


RIGHT = FlashKnobs()
CAUSAL = {  # how far past query i (bottom-right aligned) key j may be, as a function of (Tq, Tk)
    "ok": lambda Tq, Tk: Tk - Tq,
    "diagonal": lambda Tq, Tk: Tk - Tq - 1,
    "future": lambda Tq, Tk: Tk - Tq + 1,
    "topleft": lambda Tq, Tk: 0,
}


def visible(Tq: int, Tk: int, how: str = "ok") -> torch.Tensor:
    """bool (Tq, Tk): key j visible to query i."""
    return torch.arange(Tk)[None, :] <= torch.arange(Tq)[:, None] + CAUSAL[how](Tq, Tk)


def flash(q, k, v, causal: bool, block_size: int, knobs: FlashKnobs = RIGHT) -> torch.Tensor:
    """(B, H, Tq, d) from float64 q, k, v; one mistake per knob."""
    Tq, Tk = q.size(-2), k.size(-2)
    scale = scale_of(knobs, q)
    late, scale = (scale, 1.0) if knobs.scale_at == "output" else (1.0, scale)
    shown = visible(Tq, Tk, "ok" if knobs.causal == "blocklocal" else knobs.causal) if causal else None
    m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.size(-1),), dtype=q.dtype)
    for start in range(0, Tk, block_size):
        end = min(start + block_size, Tk)
        s = (q @ k[..., start:end, :].transpose(-2, -1)) * scale
        if shown is not None:
            block = shown[:, :end - start] if knobs.causal == "blocklocal" else shown[:, start:end]
            s = s.masked_fill(~block, float("-inf") if knobs.fill is None else knobs.fill)
        block_max = s.amax(-1, keepdim=True)
        m_new = torch.maximum(m, block_max)
        shift = block_max if knobs.rescale == "blockmax" else m_new  # blockmax: each block against its own max
        shift = shift.masked_fill(shift == float("-inf"), 0.0)
        p = torch.exp(s - shift)
        alpha = torch.exp(m - shift)  # rescales what was summed under the old max
        kept = l * (alpha if knobs.rescale in ("ok", "acc") else 1.0)  # the old sum, rescaled to the new max
        stale = kept if knobs.normalise == "stale-rescaled" else l
        last = p.sum(-1, keepdim=True)
        l = kept + last
        acc = acc * (alpha if knobs.rescale in ("ok", "sum") else 1.0) + p @ v[..., start:end, :]
        m = m_new
    if knobs.normalise == "never":
        return acc * late
    if knobs.normalise == "last-block":
        return acc / last * late  # 0/0 = NaN, or x/0 = inf, where the last block hid every key of a row
    return acc / (stale if knobs.normalise.startswith("stale") else l) * late  # 0/0 = NaN where a row saw no key
