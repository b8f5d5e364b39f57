"""Flash-attention mistakes: the full score matrix, the scale, the causal mask, the online-softmax rescale.

The full score matrix is seen by memory.Allocations, which stops the user's code at the op that makes it.
The others are variants of the blockwise computation (variants_flash) that reproduce the user's outputs.
A row that sees no key in a variant (the diagonal hidden in a square causal case) is left out of comparisons.
"""

from __future__ import annotations

import math

import torch

from attn_drill import findings
from attn_drill.check import memory
from attn_drill.check.compare import closeness
from attn_drill.check.diagnoses import MATCH, SCORES, diagnosis
from attn_drill.check.specs.flash import memory_note
from attn_drill.check.variants_flash import FlashKnobs, visible

MASKING = {"masked_fill", "masked_fill_", "where", "tril", "triu", "__gt__", "__ge__", "__lt__", "__le__"}


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

def _distance(a: torch.Tensor, b: torch.Tensor, rows: torch.Tensor) -> float:
    """closeness over the rows (bool (..., Tq, 1)) the variant can see."""
    keep = rows.expand_as(b)
    return closeness(a.detach().double()[keep], b[keep]) if a.shape == b.shape else float("inf")


def reproduces(check, knobs: FlashKnobs):
    """(cases matched, cases that tell the variant from the reference, worst distance, first telling case)."""
    matched, telling, worst, example = 0, 0, 0.0, None
    for o, ref in zip(check.outcomes, check.refs):
        var = check.spec.variant(o.case, knobs)[0]
        rows = torch.isfinite(var).all(-1, keepdim=True)
        differs = _distance(var, ref[0], rows) > MATCH
        dist = _distance(o.outputs[0], var, rows) if o.outputs is not None else float("inf")
        telling += differs
        if dist <= MATCH:
            matched += 1
            if differs and example is None:
                example = o
        worst = max(worst, dist)
    return matched, telling, worst, example


def variant_finding(check, slug: str, knobs: FlashKnobs, how: str, line=None, extra=None):
    n = len(check.outcomes)
    matched, telling, worst, example = reproduces(check, knobs)
    if telling == 0 or matched < n - 1 or example is None:  # all cases, or all but one (a second mistake)
        return None
    exact = "exactly" if worst < 1e-9 else f"to {worst:.1e}"
    evidence = f"{how}: that reproduces your outputs {exact} on {matched} of {n} cases, e.g. {example.case.label}"
    if extra:
        evidence += "; " + extra(example)
    return findings.make(slug, evidence, line=line, score=matched / n - min(worst, 0.01))


def line_of(check, names: set[str]) -> int | None:
    o = next((o for o in check.outcomes if o.error is None and o.tracer), None)
    return o.tracer.first_line(names) if o else None


CAUSAL = {
    "diagonal": ("causal-diagonal", "a causal mask that also hides the diagonal key: query i sees key j only when "
                 "j < i + (Tk - Tq)"),
    "future": ("causal-diagonal", "a causal mask that shows one future key: query i sees key j when "
               "j <= i + (Tk - Tq) + 1"),
    "topleft": ("causal-misaligned", "a top-left aligned causal mask, query i sees key j when j <= i (as SDPA's "
                "is_causal does), where bottom-right alignment asks for j <= i + (Tk - Tq)"),
}


@diagnosis("causal-diagonal, causal-misaligned", ("flash",))
def causal(check):
    for how, (slug, said) in CAUSAL.items():
        f = variant_finding(check, slug, FlashKnobs(causal=how), said, line=line_of(check, MASKING),
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


def fit_scale(o) -> tuple[float, float]:
    """The scale s (0 included) whose attention is closest to the user's output: (s, distance)."""
    got = o.outputs[0].detach().double()

    def err(log_s: float) -> float:
        return closeness(got, dense(o.case, math.exp(log_s)))

    grid = [math.log(10) * e / 8 for e in range(-24, 17)]  # s from 1e-3 to 1e2, 8 points a decade
    i = min(range(len(grid)), key=lambda j: err(grid[j]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = err(a), err(b)
    for _ in range(30):  # golden section: the bracket shrinks by 0.618 per step, one new point each
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = err(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = err(b)
    s = math.exp((lo + hi) / 2)
    zero = closeness(got, dense(o.case, 0.0))  # uniform weights: a scale that rounds to 0
    return (0.0, zero) if zero < err(math.log(s)) else (s, err(math.log(s)))


def scale_names(dims) -> dict[str, float]:
    d, block = dims["d"], dims["block_size"] or 64
    return {"1/d": 1 / d, "sqrt(d), multiplied": d ** 0.5, f"1/sqrt(block_size) = 1/sqrt({block})": block ** -0.5,
            f"1/sqrt(Tk) = 1/sqrt({dims['Tk']})": dims["Tk"] ** -0.5, "0 (e.g. 1 // math.sqrt(d))": 0.0}


@diagnosis("missing-scale, wrong-scale", ("flash",))
def scale(check):
    """Each case's output is attention with some scale s, other than 1/sqrt(d)."""
    fitted = []
    for o in check.outcomes:
        if o.outputs is None:
            return None
        s, _ = fit_scale(o)
        var = check.spec.variant(o.case, FlashKnobs(scale=s))[0]
        if _distance(o.outputs[0], var, torch.isfinite(var).all(-1, keepdim=True)) > MATCH:
            return None  # not softmax(s q k^T) v: not (only) a scale mistake
        fitted.append((o, s))
    o, s = fitted[0]
    d = o.case.dims["d"]
    want = d ** -0.5
    if abs(s - want) <= 1e-3 * want:
        return None
    line = line_of(check, SCORES | {"__mul__", "__truediv__", "mul", "div"})
    expected = f"expected {want:.4f} = 1/sqrt({d}) ({o.case.label})"
    if abs(s - 1.0) < 1e-3:
        return findings.make("missing-scale", f"your effective scale is {s:.3f}, {expected}", line=line, score=1.0)
    names = [n for n, v in scale_names(o.case.dims).items() if abs(v - s) <= 1e-3 * max(v, 1e-3)]
    said = f" = {names[0]}" if names else ""
    return findings.make("wrong-scale", f"your effective scale is {s:.4f}{said}, {expected}", line=line, score=1.0)
