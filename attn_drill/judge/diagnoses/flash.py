"""Flash-attention mistakes: the full score matrix, the scale, the causal mask, the online-softmax rescale.

The full score matrix is seen by memory.Allocations, which stops the user's code at the op that makes it.
The others are variants of the blockwise computation (variants/flash.py) that reproduce the user's outputs.
A row that sees no key in a variant (the diagonal hidden in a square causal case) is left out of comparisons
(FlashSpec.distance).
"""

from __future__ import annotations

import torch

from attn_drill import findings
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
    at = f" at your line {a.line}" if a.line else ""
    note = memory_note(check.target)
    evidence = (f"{op}{at} made a {a.shape} {a.dtype} tensor, {a.per_head} entries per (batch, head): as many as "
                f"the whole Tq x Tk = {dims['Tq']} x {dims['Tk']} score matrix or more, where one block of scores is "
                f"{dims['Tq']} x {dims['block_size'] or 64} ({o.case.label}; {len(hits)} of {len(check.outcomes)} "
                f"cases). "
                f"{note[:1].upper()}{note[1:]}")
    return findings.make("full-scores-materialized", evidence, line=a.line, score=2.0)


# --- variants of the blockwise computation -------------------------------------------------------

CAUSAL = {
    "diagonal": ("causal-diagonal", "a causal mask that also hides the diagonal key: query i sees key j only when "
                 "j < i + (Tk - Tq)"),
    "future": ("causal-diagonal", "a causal mask that shows one future key: query i sees key j when "
               "j <= i + (Tk - Tq) + 1"),
    "topleft": ("causal-misaligned", "a top-left aligned causal mask, query i sees key j when j <= i (as SDPA's "
                "is_causal does), where bottom-right alignment asks for j <= i + (Tk - Tq)"),
    "blocklocal": ("causal-misaligned", "a causal mask that counts each key from its block's start (j - start), not "
                   "from the first key: every later block is masked as if it were the first"),
}


@diagnosis(("causal-diagonal", "causal-misaligned"), ("flash",))
def causal(check):
    for how, (slug, said) in CAUSAL.items():
        f = variant_finding(check, slug, FlashKnobs(causal=how), said, line=line_of(first_outcome(check), MASKING),
                            extra=lambda o: f"Tk - Tq = {o.case.dims['Tk'] - o.case.dims['Tq']} there")
        if f:
            return f
    return None


RESCALE = {
    "acc": "the output accumulator is not multiplied by exp(m_old - m_new) when a block raises the running max "
           "(the running sum is)",
    "sum": "the running sum is not multiplied by exp(m_old - m_new) when a block raises the running max "
           "(the output accumulator is)",
    "none": "neither the running sum nor the output accumulator is multiplied by exp(m_old - m_new) when a block "
            "raises the running max",
    "blockmax": "each block is exponentiated against its own max and the blocks are added up with no rescaling to a "
                "common max",
}


@diagnosis("online-softmax-no-rescale", ("flash",))
def no_rescale(check):
    for how, said in RESCALE.items():
        f = variant_finding(check, "online-softmax-no-rescale", FlashKnobs(rescale=how), said, extra=max_rises)
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
    return f"there the running max goes up after the first block in {rises} of {first.numel()} query rows"


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
