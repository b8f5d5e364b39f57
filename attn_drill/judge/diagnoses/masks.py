"""Mask mistakes (the masks exercise): inverted, causal diagonal and alignment, padding length and axis.

A mistake explains the check when every case's mask is either right or exactly the mask with that mistake,
and at least one case shows it: so a mistake made in one function only (say causal_mask, while
attention_mask builds its own triangle) is named as surely as one shared by all three.
"""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.judge.diagnoses import LOCATORS, diagnosis
from attn_drill.judge.specs.masks import NAMES, MaskKnobs

COMPARE = {"__le__", "le", "__lt__", "lt", "__ge__", "ge", "__gt__", "gt", "tril", "triu", "tril_", "triu_"}
COMBINE = {"__invert__", "bitwise_not", "logical_not", "__and__", "__or__", "logical_and", "logical_or", "__eq__"}
BUILD = COMPARE | COMBINE
EITHER = ("causal_mask", "padding_mask")  # an inverted mask: shown where it is built, not where it is combined
PLACE = {"__getitem__", "unsqueeze", "view", "reshape", "expand", "repeat", "permute", "transpose", "__and__",
         "logical_and", "__mul__"}


def telling(check, knobs: MaskKnobs) -> list:
    """The cases that show the mistake, when it explains every case; [] otherwise."""
    shown = []
    for o, ref in zip(check.outcomes, check.refs):
        if o.outputs is None:
            return []
        got = o.outputs[0].cpu()
        if torch.equal(got, ref[0]):
            continue
        if not torch.equal(got, check.spec.variant(o.case, knobs)[0]):
            return []
        shown.append(o)
    return shown


def finding(check, slug: str, knobs: MaskKnobs, how: str, fn: str | tuple, names: set, score: float = 1.0):
    """The finding for a mistake that explains the check, shown on a case of `fn` (the function it is usually
    made in; a tuple: in this order of preference) when one shows it, with the user's line of the first of
    `names` called in that case's function."""
    shown = telling(check, knobs)
    if not shown:
        return None
    fns = (fn,) if isinstance(fn, str) else fn
    o = next((o for f in fns for o in shown if o.case.config["fn"] == f), shown[0])
    got, ref = o.outputs[0].cpu(), check.refs[check.outcomes.index(o)][0]
    evidence = (f"{how}: that is exactly your mask on {len(shown)} case{'s' if len(shown) > 1 else ''}, and every "
                f"other case is right; e.g. {o.case.label}: {first_row(o.case, got, ref)}")
    return findings.make(slug, evidence, line=line_in(check, o, names), score=score, picture=picture(o.case, got, ref))


def line_in(check, o, names: set) -> int | None:
    """The user's line of the first call among `names` made in the case's own function (by its code's lines)."""
    code = getattr(check.target.get(o.case.config["fn"]), "__code__", None)
    if code is None or o.tracer is None:
        return None
    lines = {line for _, _, line in code.co_lines() if line}
    return next((line for name, line in o.tracer.calls if name in names and line in lines), None)


@diagnosis("mask-inverted", ("masks",))
def inverted(check):
    f = finding(check, "mask-inverted", MaskKnobs(inverted=True),
                "True where the key must be hidden (nn.MultiheadAttention's convention)", EITHER, BUILD)
    if f:
        return f
    for part, fn in (("causal", "causal_mask"), ("padding", "padding_mask")):  # one function inverted, the other right
        f = finding(check, "mask-inverted", MaskKnobs(part=part),
                    f"the {part} part True where the key must be hidden, the other part right", fn, BUILD)
        if f:
            return f
    for other, also in ((MaskKnobs(inverted=True, top_left=True), "also top-left aligned where tq != tk"),
                        (MaskKnobs(inverted=True, diagonal=-1), "also off by one at the diagonal")):
        f = finding(check, "mask-inverted", other, f"True where the key must be hidden, and {also}", EITHER,
                    BUILD, score=0.9)
        if f:
            return f
    return None


@diagnosis("causal-diagonal", ("masks",))
def diagonal(check):
    return (finding(check, "causal-diagonal", MaskKnobs(diagonal=-1), "each query cannot see its own position "
                    "(j < i + (tk - tq) instead of <=)", "causal_mask", COMPARE)
            or finding(check, "causal-diagonal", MaskKnobs(diagonal=1), "each query sees one key in its future "
                       "(j <= i + (tk - tq) + 1)", "causal_mask", COMPARE)
            or finding(check, "causal-diagonal", MaskKnobs(diagonal=-1, top_left=True), "each query cannot see its "
                       "own position (j < i), and the mask is top-left aligned too", "causal_mask", COMPARE,
                       score=0.9))


@diagnosis("causal-misaligned", ("masks",))
def misaligned(check):
    return (finding(check, "causal-misaligned", MaskKnobs(top_left=True), "top-left aligned: query i sees keys "
                    "j <= i whatever tq and tk (SDPA's is_causal=True), right only when tq == tk", "causal_mask",
                    COMPARE)
            or finding(check, "causal-misaligned", MaskKnobs(offset_sign=-1), "the offset taken with the wrong sign: "
                       "j <= i - (tk - tq) instead of j <= i + (tk - tq), right only when tq == tk", "causal_mask",
                       COMPARE | {"sub", "__sub__", "__rsub__", "add", "__add__"}))


PAIRS = [("causal-diagonal", MaskKnobs(diagonal=-1), "the diagonal hidden"),
         ("causal-diagonal", MaskKnobs(diagonal=1), "one future key shown"),
         ("causal-misaligned", MaskKnobs(top_left=True), "top-left aligned"),
         ("padding-off-by-one", MaskKnobs(length_shift=1), "one key too many"),
         ("padding-off-by-one", MaskKnobs(length_shift=-1), "one key too few"),
         ("padding-on-queries", MaskKnobs(rows="queries"), "query rows hidden"),
         ("mask-inverted", MaskKnobs(part="causal"), "the triangle inverted"),
         ("mask-inverted", MaskKnobs(part="padding"), "the padding inverted")]


@diagnosis(("causal-diagonal", "causal-misaligned", "padding-off-by-one", "padding-on-queries", "mask-inverted"),
           ("masks",))
def two_at_once(check):
    """Two mask mistakes at once (each in its own function, or both in one): both findings, or None. Only when
    no single mistake explains every case (a pair never outranks one mistake)."""
    singles = [k for _, k, _ in PAIRS]
    if any(telling(check, k) for k in singles):
        return None
    for i, (slug_a, a, how_a) in enumerate(PAIRS):
        for slug_b, b, how_b in PAIRS[i + 1:]:
            both = MaskKnobs(**{**_set(a), **_set(b)})
            if slug_a == slug_b or _set(a).keys() & _set(b).keys() or not telling(check, both):
                continue
            said = f"{how_a} and {how_b}: together that is exactly your mask on every case that differs"
            return [findings.make(slug_a, said + f" (two mistakes: {slug_a} and {slug_b})", score=0.96),
                    findings.make(slug_b, said + f" (two mistakes: {slug_a} and {slug_b})", score=0.95)]
    return None


def _set(knobs: MaskKnobs) -> dict:
    return {k: v for k, v in vars(knobs).items() if v != getattr(MaskKnobs(), k)}


@diagnosis("padding-off-by-one", ("masks",))
def off_by_one(check):
    return (finding(check, "padding-off-by-one", MaskKnobs(length_shift=1), "one key too many: j <= lengths[b] "
                    "instead of j < lengths[b]", "padding_mask", COMPARE)
            or finding(check, "padding-off-by-one", MaskKnobs(length_shift=-1), "one key too few: j < lengths[b] - 1",
                       "padding_mask", COMPARE | {"sub", "__sub__", "__rsub__"}))


@diagnosis("padding-on-queries", ("masks",))
def on_queries(check):
    return (finding(check, "padding-on-queries", MaskKnobs(rows="queries"), "the lengths hide query rows "
                    "(mask[b, 0, i, j] = i < lengths[b]) instead of key columns", "attention_mask", PLACE)
            or finding(check, "padding-on-queries", MaskKnobs(rows="both"), "the lengths hide the padded query "
                       "rows as well as the padded keys: only keys are masked", "attention_mask", PLACE))


# --- evidence: one row in words, and the masks side by side ----------------------------------------------

def keys(row: torch.Tensor) -> str:
    on = row.nonzero().flatten().tolist()
    if not on:
        return "no key"
    if on == list(range(on[0], on[-1] + 1)):
        return f"key {on[0]}" if len(on) == 1 else f"keys {on[0]}-{on[-1]}"
    return "keys " + ", ".join(map(str, on))


def first_row(case, got: torch.Tensor, want: torch.Tensor) -> str:
    """The first row that differs, in words: which keys it sees, and which it should."""
    index = tuple(int(i) for i in (got != want).any(-1).nonzero()[0])
    fn = case.config["fn"]
    if fn == "causal_mask":
        who = f"query {index[0]}"
    elif fn == "padding_mask":
        who = f"sequence {index[0]} (length {int(case.inputs['lengths'][index[0]])})"
    else:
        who = f"query {index[2]} of sequence {index[0]} (length {int(case.inputs['lengths'][index[0]])})"
    return f"{who} sees {keys(got[index])}, expected {keys(want[index])}"


def picture(case, got: torch.Tensor, want: torch.Tensor) -> dict:
    """Your mask beside the expected one, as an interviewer would draw it (for a batch, the worst sequence)."""
    fn = case.config["fn"]
    if fn == "attention_mask":
        b = int((got != want).flatten(1).sum(1).argmax())
        got, want = got[b, 0], want[b, 0]
        title = f"mask of sequence {b} (length {int(case.inputs['lengths'][b])}): rows = queries, columns = keys"
    elif fn == "padding_mask":
        title = "mask: rows = sequences (no query axis), columns = keys"
    else:
        title = "mask: rows = queries, columns = keys"

    def rows(t):
        return [[1.0 if v else 0.0 for v in row] for row in t.tolist()]

    return {"title": title + "; filled = may attend", "caption": case.label, "yours": rows(got),
            "expected": rows(want)}


def by_function(check) -> str:
    """For the values-mismatch fallback: which functions give right masks."""
    parts = []
    for name in NAMES:
        mine = [(o, r) for o, r in zip(check.outcomes, check.refs) if o.case.config["fn"] == name]
        wrong = [(o, r) for o, r in mine if o.outputs is None or not torch.equal(o.outputs[0].cpu(), r[0])]
        if not wrong:
            parts.append(f"{name} is right on its {len(mine)} cases")
            continue
        o, r = wrong[0]
        said = "raised" if o.outputs is None else first_row(o.case, o.outputs[0].cpu(), r[0])
        parts.append(f"{name} is wrong on {len(wrong)} of {len(mine)} ({o.case.label}: {said})")
    return "; ".join(parts)


LOCATORS["masks"] = by_function
