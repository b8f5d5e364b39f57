"""Flash-attention mistakes: the full score matrix, the scale, the causal mask, the online-softmax rescale.

The full score matrix is seen by memory.Allocations, which stops the user's code at the op that makes it.
The others are variants of the blockwise computation (variants/flash.py) that reproduce the user's outputs.
A row that sees no key in a variant (the diagonal hidden in a square causal case) is left out of comparisons
(FlashSpec.distance).
"""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import memory
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import (MATCH, SCORES, diagnosis, first_outcome, fit_log, line_of, scale_finding,
                                        variant_finding)
from attn_drill.judge.specs.flash import memory_note
from attn_drill.judge.variants.flash import FlashKnobs, visible

MASKING = {"masked_fill", "masked_fill_", "where", "tril", "triu", "__gt__", "__ge__", "__lt__", "__le__"}
SCALING = SCORES | {"__mul__", "__truediv__", "mul", "div"}


@diagnosis("full-scores-materialized", ("flash",))
def full_scores(check):
    hits = [o for o in check.outcomes if isinstance(o.error, memory.TensorTooLarge)]
    if not hits:
        return None
    o = hits[0]
    a, dims = o.error.alloc, o.case.dims
    # the torch call that was running: the last one the tracer saw on that line (the dispatch mode sees aten ops)
    called = [name for name, line in (o.tracer.calls if o.tracer else []) if line == a.line and a.line]
    called = called[-1] if called else None
    op = f"{called} ({a.op})" if called else a.op
    at = t("evidence.cache.diagnoses_flash.at_line", line=a.line) if a.line else ""
    note = memory_note(check.target)
    evidence = t("evidence.cache.diagnoses_flash.full_scores", op=op, at=at, shape=a.shape, dtype=a.dtype,
                 per_head=a.per_head, Tq=dims['Tq'], Tk=dims['Tk'], block=dims['block_size'] or 64, case=o.case.label,
                 hits=len(hits), n=len(check.outcomes), note=f"{note[:1].upper()}{note[1:]}")
    return findings.make("full-scores-materialized", evidence, line=a.line, score=2.0)


# --- variants of the blockwise computation -------------------------------------------------------

CAUSAL = {"diagonal": "causal-diagonal", "future": "causal-diagonal", "topleft": "causal-misaligned",
          "blocklocal": "causal-misaligned"}


def causal_said(how: str) -> str:
    """CAUSAL's mask `how`, in words."""
    return {"diagonal": t("evidence.cache.diagnoses_flash.causal_diagonal"),
            "future": t("evidence.cache.diagnoses_flash.causal_future"),
            "topleft": t("evidence.cache.diagnoses_flash.causal_topleft"),
            "blocklocal": t("evidence.cache.diagnoses_flash.causal_blocklocal")}[how]


@diagnosis(("causal-diagonal", "causal-misaligned"), ("flash",))
def causal(check):
    for how, slug in CAUSAL.items():
        f = variant_finding(check, slug, FlashKnobs(causal=how), causal_said(how),
                            line=line_of(first_outcome(check), MASKING),
                            extra=lambda o: t("evidence.cache.diagnoses_flash.offset_there",
                                              offset=o.case.dims['Tk'] - o.case.dims['Tq']))
        if f:
            return f
    return None


RESCALE = ("acc", "sum", "none", "blockmax")  # the rescales left out, in the order they are tried


def rescale_said(how: str) -> str:
    """The rescale RESCALE's `how` leaves out, in words."""
    return {"acc": t("evidence.cache.diagnoses_flash.rescale_acc"),
            "sum": t("evidence.cache.diagnoses_flash.rescale_sum"),
            "none": t("evidence.cache.diagnoses_flash.rescale_none"),
            "blockmax": t("evidence.cache.diagnoses_flash.rescale_blockmax")}[how]


@diagnosis("online-softmax-no-rescale", ("flash",))
def no_rescale(check):
    for how in RESCALE:
        f = variant_finding(check, "online-softmax-no-rescale", FlashKnobs(rescale=how), rescale_said(how),
                            extra=max_rises)
        if f:
            return f
    return None


def max_rises(o) -> str:
    """How many rows see their running max go up after the first block: where the rescale matters."""
    x, dims = o.case.inputs, o.case.dims
    Tq, Tk, block = dims["Tq"], dims["Tk"], dims["block_size"] or 64
    s = x["q"] @ x["k"].transpose(-2, -1)
    if dims["causal"]:
        s = s.masked_fill(~visible(Tq, Tk), float("-inf"))
    first = s[..., :block].amax(-1)
    rises = int((s.amax(-1) > first).sum())
    return t("evidence.cache.diagnoses_flash.max_rises", rises=rises, rows=first.numel())


# --- the scale: fitted to the user's outputs ------------------------------------------------------

def dense(case, scale: float) -> torch.Tensor:
    """softmax(scale * q k^T, causal) v in one go: for fitting, where the blocks do not matter."""
    x, dims = case.inputs, case.dims
    s = (x["q"] @ x["k"].transpose(-2, -1)) * scale
    if dims["causal"]:
        s = s.masked_fill(~visible(dims["Tq"], dims["Tk"]), float("-inf"))
    return torch.softmax(s, -1) @ x["v"]


def fit_scale(o) -> float:
    """The scale s (0 included) whose attention is closest to the user's output."""
    got = o.outputs[0].detach().double()
    s, err = fit_log(lambda s: closeness(got, dense(o.case, s)))
    return 0.0 if closeness(got, dense(o.case, 0.0)) < err else s  # uniform weights: a scale that rounds to 0


@diagnosis(("missing-scale", "wrong-scale"), ("flash",))
def scale(check):
    """Each case's output is attention with some scale s, other than 1/sqrt(d)."""
    fitted = []
    for o in check.outcomes:
        if o.outputs is None:
            return None
        s = fit_scale(o)
        var = check.spec.variant(o.case, FlashKnobs(scale=s))
        if check.spec.distance(o.outputs, var, var) > MATCH:
            return None  # not softmax(s q k^T) v: not (only) a scale mistake
        fitted.append((o, s))
    return scale_finding(check, fitted, line_of(first_outcome(check), SCALING))
