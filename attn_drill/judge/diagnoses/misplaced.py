"""Mistakes no v1 slug named (issue 10): a right step done in the wrong place, or with the wrong tensor.

- scale-after-softmax: 1/sqrt(d) applied to the weights or to the output, not to the scores;
- mask-fill-zero: hidden scores set to a modest value (0, -1, ...), the value fitted from the user's weights;
- wrong-projection: one projection (or input) used in another's place, proved by the reference run on a copy of
  the case whose weights or inputs are swapped the same way;
- projection-before-merge: W_o applied per head in a way that changes the result;
- online-softmax-no-normalise (flash): the accumulator never divided by the running sum, or by a stale one;
- rope-on-values (kv-cache): v turned by RoPE like k.
Each is a knob of the variants (variants.py, variants_cache.py, variants_flash.py) held to the user's outputs.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import torch

from attn_drill.i18n import t
from attn_drill.judge.diagnoses import (MASKING, departure, diagnosis, first_outcome, golden, line_of, match,
                                        variant_finding)
from attn_drill.judge.diagnoses.attention import ATTENTION, MODULES, WINDOWED, first_masked
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.cache import CacheKnobs
from attn_drill.judge.variants.flash import FlashKnobs

SCALING = {"__mul__", "__truediv__", "mul", "div", "__rmul__", "__itruediv__", "__imul__"}


# --- scale-after-softmax ----------------------------------------------------------------------------

AFTER = ("weights", "output")  # where 1/sqrt(d) goes instead: said by evidence.attention.diagnoses_misplaced.after_*


@diagnosis("scale-after-softmax", ATTENTION + WINDOWED + ("kv-cache", "flash"))
def scale_after_softmax(check):
    line = line_of(first_outcome(check), SCALING, last=True)
    for at in AFTER:
        how = t(f"evidence.attention.diagnoses_misplaced.after_{at}")
        if check.spec.id == "flash":
            knobs = FlashKnobs(scale_at=at) if at == "output" else None
        elif check.spec.id == "kv-cache":
            knobs = CacheKnobs(scale_at=at) if at == "output" else None  # no weights returned, no bias: the same
        else:
            knobs = Knobs(scale_at=at)
        f = knobs and variant_finding(check, "scale-after-softmax", knobs, how, line=line)
        if f:
            return f
    return None


# --- mask-fill-zero -----------------------------------------------------------------------------------

def fitted_fill(check) -> float | None:
    """The finite value the user's hidden scores got, read off the returned weights: on a row, a visible key's
    log-weight minus its scaled score is the same constant, and a hidden key's log-weight minus it is the fill."""
    o = first_masked(check)
    if o is None or o.outputs is None:
        return None
    w = o.outputs[1].detach().double().cpu()
    seen = check.spec.visible(o.case)
    if seen is None or w.shape != check.spec.raw_scores(o.case).shape:
        return None
    seen = seen.expand_as(w)
    s = check.spec.raw_scores(o.case) / math.sqrt(o.case.dims.get("dk", o.case.dims["d"]))
    logw = w.clamp_min(1e-300).log()
    rows = seen.any(-1, keepdim=True) & (~seen).any(-1, keepdim=True)  # a visible key and a hidden one
    const = torch.where(seen, logw - s, 0.0).sum(-1, keepdim=True) / seen.sum(-1, keepdim=True).clamp_min(1)
    fills = (logw - const)[rows.expand_as(w) & ~seen & (w > 1e-250)]
    return float(fills.median()) if fills.numel() else None


FILLS = {"masked_fill", "masked_fill_", "where"}


@diagnosis("mask-fill-zero", ATTENTION + WINDOWED)
def mask_fill_zero(check):
    fill = fitted_fill(check)
    if fill is None or not -50.0 < fill < 50.0:
        return None
    value = round(fill, 4)
    said = f"{value:g}" if abs(value - round(value)) > 1e-4 else f"{round(value):d}"
    how = t("evidence.attention.diagnoses_misplaced.fill", value=said)
    gone = departure(check)  # the user's line that made the first tensor with finite hidden scores
    o = first_masked(check)
    filling = {line for name, line in (o.tracer.calls if o and o.tracer else []) if name in FILLS | {"__mul__", "mul"}}
    line = gone.line if gone and gone.kind == "mask" and gone.line in filling else None  # not a later line
    line = line or line_of(o, FILLS) or line_of(o, MASKING) or line_of(o, {"__mul__", "mul"})
    return variant_finding(check, "mask-fill-zero", Knobs(fill_value=fill), how, line=line, value=said)


# flash and kv-cache build their causal mask inside: the fill is fitted to the outputs, not read off weights
COARSE = (0.0, -1.0, 1.0, -2.0, 2.0, -5.0, 5.0, -10.0, 10.0, -20.0, -50.0)


def knobs_with_fill(check, fill: float):
    return FlashKnobs(fill=fill) if check.spec.id == "flash" else CacheKnobs(fill_value=fill)


def fitted_fill_inside(check) -> float | None:
    """The finite value whose causal fill brings the reference closest to the user's output on the first causal
    case: a coarse grid of the values people write, then a golden section around the best of them."""
    o = next((o for o in check.outcomes if o.outputs is not None and o.case.dims.get("causal", True)), None)
    if o is None:
        return None

    def err(v: float) -> float:
        try:
            var = check.spec.variant(o.case, knobs_with_fill(check, v))
            return check.spec.distance(o.outputs, var, var)
        except Exception:  # noqa: BLE001 - a variant that cannot run explains nothing
            return float("inf")

    errs = {v: err(v) for v in COARSE}
    best = min(errs, key=errs.get)
    if errs[best] <= MATCH_FILL:
        return best
    if errs[best] > 0.5:  # nowhere near any fill: not this mistake
        return None
    return golden(err, best - 5.0, best + 5.0, steps=30)


MATCH_FILL = 1e-6


@diagnosis("mask-fill-zero", ("flash", "kv-cache"))
def mask_fill_zero_inside(check):
    fill = fitted_fill_inside(check)
    if fill is None:
        return None
    value = round(fill, 4)
    said = f"{value:g}" if abs(value - round(value)) > 1e-4 else f"{round(value):d}"
    how = t("evidence.attention.diagnoses_misplaced.fill_future", value=said)
    gone = departure(check)  # the user's line that made the first tensor with finite hidden scores
    o = first_outcome(check)
    line = (gone.line if gone and gone.kind == "mask" else None) or line_of(o, FILLS) or line_of(o, MASKING)
    return variant_finding(check, "mask-fill-zero", knobs_with_fill(check, fill), how, line=line, value=said)


# --- wrong-projection: the reference on a case whose weights or inputs are swapped ---------------------

class Swapped:
    """The check as it is, save that its spec's variant runs on a case changed by `change`."""

    def __init__(self, check, change):
        self._check, self.spec = check, _SwappedSpec(check.spec, change)

    def __getattr__(self, name):
        return getattr(self._check, name)


class _SwappedSpec:
    def __init__(self, spec, change):
        self._spec, self._change = spec, change

    def variant(self, case, knobs):
        return self._spec.variant(self._change(case), knobs)

    def __getattr__(self, name):
        return getattr(self._spec, name)


def use_param(target: str, source: str):
    """A case change: layer `target` gets `source`'s weights (RuntimeError when their shapes differ)."""
    def change(case):
        p = dict(case.params)
        for part in ("weight", "bias"):
            src, dst = f"{source}.{part}", f"{target}.{part}"
            if dst in p and src in p:
                if p[src].shape != p[dst].shape:
                    raise RuntimeError(f"{source} and {target} differ in shape")
                p[dst] = p[src]
        return dataclasses.replace(case, params=p)
    return change


def swap_params(a: str, b: str):
    """A case change: layers `a` and `b` trade weights."""
    def change(case):
        p = dict(case.params)
        for part in ("weight", "bias"):
            x, y = f"{a}.{part}", f"{b}.{part}"
            if x in p and y in p:
                if p[x].shape != p[y].shape:
                    raise RuntimeError(f"{a} and {b} differ in shape")
                p[x], p[y] = p[y], p[x]
        return dataclasses.replace(case, params=p)
    return change


def use_input(target: str, source: str):
    def change(case):
        return dataclasses.replace(case, inputs={**case.inputs, target: case.inputs[source]})
    return change


def fused_block(target: int, source: int):
    """mha-fused: W_qkv's rows for q, k or v (block 0, 1, 2) replaced by another block's."""
    def change(case):
        p = dict(case.params)
        for part in ("weight", "bias"):
            name = f"W_qkv.{part}"
            if name in p:
                t = p[name].clone()
                D = t.size(0) // 3
                t[target * D:(target + 1) * D] = p[name][source * D:(source + 1) * D]
                p[name] = t
        return dataclasses.replace(case, params=p)
    return change


ROLES = {"W_q": "queries", "W_k": "keys", "W_v": "values"}  # said by evidence.attention.diagnoses_misplaced.role_*
FUSED = ("q", "k", "v")


def _role(layer: str) -> str:
    """What the layer makes, in words: "queries"."""
    return t(f"evidence.attention.diagnoses_misplaced.role_{ROLES[layer]}")


def swaps(exercise: str) -> list[tuple[str, object, str | None]]:
    """(how to say it, case change, a pattern for the user's line that does it) for every swap the exercise allows."""
    if exercise == "mha-fused":
        out = [(t("evidence.attention.diagnoses_misplaced.fused_slice_reused", source=FUSED[s], target=FUSED[d]),
                fused_block(d, s), None) for d in range(3) for s in range(3) if s != d]
        return out + [(t("evidence.attention.diagnoses_misplaced.fused_slices_swapped", a=FUSED[a], b=FUSED[b]),
                       lambda c, a=a, b=b: swap_fused(c, a, b), None) for a, b in ((0, 1), (1, 2), (0, 2))]
    out = [(t("evidence.attention.diagnoses_misplaced.used_for", source=s, role=_role(d), target=d), use_param(d, s),
            rf"^\s*{d[-1]}\w*\s*=.*\b{s}\b") for d in ROLES for s in ROLES if s != d]
    out += [(t("evidence.attention.diagnoses_misplaced.swapped", a=a, b=b), swap_params(a, b),
             rf"\b{a}\b.*\b{b}\b|\b{b}\b.*\b{a}\b") for a, b in (("W_q", "W_k"), ("W_k", "W_v"), ("W_q", "W_v"))]
    if exercise in ("mha", "mha-dims"):  # three inputs: one of them projected in another's place
        out += [(t("evidence.attention.diagnoses_misplaced.input_projected", source=s, role=_role(d),
                   input=t(f"evidence.attention.diagnoses_misplaced.input_{ROLES[d]}")),
                 use_input({"W_k": "key", "W_v": "value", "W_q": "query"}[d], s), rf"\b{d}\(\s*{s}\b")
                for d, s in (("W_k", "query"), ("W_v", "query"), ("W_v", "key"), ("W_q", "key"), ("W_k", "value"))]
    return out


TRIPLE = r"(\"\"\"|\'\'\')"


def source_line(path, pattern: str | None) -> int | None:
    """The first line of the user's file that matches `pattern`: where the swap is written, when it is plain."""
    if not pattern or path is None:
        return None
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeError):
        return None
    quoted = False  # inside a docstring: words, not code
    for i, text in enumerate(lines, 1):
        if quoted:
            quoted = not re.search(TRIPLE, text)
            continue
        code = re.sub(TRIPLE + r".*?\1", "", text)  # docstrings that open and close on this line
        opens = re.search(TRIPLE, code)  # a docstring that runs on to later lines
        code = re.sub(r'"[^"]*"|\'[^\']*\'', "", code[:opens.start()] if opens else code).split("#")[0]
        if re.search(pattern, code):
            return i
        quoted = bool(opens)
    return None


def swap_fused(case, a: int, b: int):
    p = dict(case.params)
    for part in ("weight", "bias"):
        name = f"W_qkv.{part}"
        if name in p:
            t, D = p[name].clone(), p[name].size(0) // 3
            t[a * D:(a + 1) * D], t[b * D:(b + 1) * D] = p[name][b * D:(b + 1) * D], p[name][a * D:(a + 1) * D]
            p[name] = t
    return dataclasses.replace(case, params=p)


def applies(change, cases) -> bool:
    """Whether the swap fits every case's weights: a layer of another shape cannot stand in for one (the user's
    code may well raise there, for another reason). Inputs of other lengths may: that raising is the evidence."""
    try:
        for c in cases:
            change(c)
    except RuntimeError:
        return False
    return True


@diagnosis("wrong-projection", MODULES + ("self-attention", "kv-cache"))
def wrong_projection(check):
    right = CacheKnobs() if check.spec.id == "kv-cache" else Knobs()
    for how, change, pattern in swaps(check.spec.id):
        if not applies(change, check.cases):
            continue
        swapped = Swapped(check, change)
        example = match(swapped, right)[3]
        if example is None or example.outputs is None:
            continue  # raising where the swap raises is no evidence alone: it must reproduce a case that ran
        line = source_line(check.path, pattern) or line_of(first_outcome(check), {"linear"})
        f = variant_finding(swapped, "wrong-projection", right, how, line=line)
        if f:
            raised = [o for o in check.outcomes if o.error is not None]
            if raised:  # the swap raises there too: Tq != Tk, a key and a query of other lengths
                f.evidence += t("evidence.attention.diagnoses_misplaced.raises_on_lengths", raised=len(raised),
                                n=len(check.outcomes))
            return f
    return None


# --- projection-before-merge --------------------------------------------------------------------------

# the knobs.per_head ways, each said by evidence.attention.diagnoses_misplaced.per_head_<way, "+" as "_">
PER_HEAD = ("bias", "rows", "rows+bias", "diagonal", "first", "first+bias")


@diagnosis("projection-before-merge", MODULES + ("kv-cache",))
def projection_before_merge(check):
    line = line_of(first_outcome(check), {"linear", "einsum", "__matmul__", "matmul"}, last=True)
    for how in PER_HEAD:
        said = t(f"evidence.attention.diagnoses_misplaced.per_head_{how.replace('+', '_')}")
        knobs = CacheKnobs(per_head=how) if check.spec.id == "kv-cache" else Knobs(per_head=how)
        f = variant_finding(check, "projection-before-merge", knobs, said, line=line)
        if f:
            return f
    return None


# --- flash: the sum never divided by, or a stale one --------------------------------------------------

# the FlashKnobs.normalise ways, each said by evidence.attention.diagnoses_misplaced.normalise_<way, "-" as "_">
NORMALISE = ("never", "stale", "stale-rescaled", "last-block")


@diagnosis("online-softmax-no-normalise", ("flash",))
def no_normalise(check):
    for how in NORMALISE:
        said = t(f"evidence.attention.diagnoses_misplaced.normalise_{how.replace('-', '_')}")
        for at in ("scores", "output"):
            f = variant_finding(check, "online-softmax-no-normalise", FlashKnobs(normalise=how, scale_at=at), said,
                                line=line_of(first_outcome(check), {"__truediv__", "div", "__itruediv__"}, last=True))
            if f:
                return f
    return None


# --- kv-cache: RoPE on the values -----------------------------------------------------------------------

@diagnosis("rope-on-values", ("kv-cache",))
def rope_on_values(check):
    line = source_line(check.path, r"\bv\b.*(rope|rotat|cos|sin)|(rope|rotat)\w*\(.*\bv\b")
    return variant_finding(check, "rope-on-values", CacheKnobs(rope_values=True),
                           t("evidence.attention.diagnoses_misplaced.rope_on_values"),
                           line=line or line_of(first_outcome(check), {"cos", "sin", "__mul__", "cat"}))
