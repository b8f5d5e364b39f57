"""Mask mistakes (the masks exercise): inverted, causal diagonal and alignment, padding length and axis.

A mistake explains the check when every case's mask is either right or exactly the mask with that mistake,
and at least one case shows it: so a mistake made in one function only (say causal_mask, while
attention_mask builds its own triangle) is named as surely as one shared by all three.
"""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.i18n import t
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
    evidence = t("evidence.attention.diagnoses_masks.exactly_many" if len(shown) > 1 else
                 "evidence.attention.diagnoses_masks.exactly_one", how=how, n=len(shown), case=o.case.label,
                 row=first_row(o.case, got, ref))
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
    f = finding(check, "mask-inverted", MaskKnobs(inverted=True), t("evidence.attention.diagnoses_masks.inverted"),
                EITHER, BUILD)
    if f:
        return f
    for part, fn in (("causal", "causal_mask"), ("padding", "padding_mask")):  # one function inverted, the other right
        f = finding(check, "mask-inverted", MaskKnobs(part=part),
                    t(f"evidence.attention.diagnoses_masks.inverted_{part}"), fn, BUILD)
        if f:
            return f
    for other, also in ((MaskKnobs(inverted=True, top_left=True), "inverted_top_left"),
                        (MaskKnobs(inverted=True, diagonal=-1), "inverted_diagonal")):
        f = finding(check, "mask-inverted", other, t(f"evidence.attention.diagnoses_masks.{also}"), EITHER, BUILD,
                    score=0.9)
        if f:
            return f
    return None


@diagnosis("causal-diagonal", ("masks",))
def diagonal(check):
    return (finding(check, "causal-diagonal", MaskKnobs(diagonal=-1),
                    t("evidence.attention.diagnoses_masks.own_position_hidden"), "causal_mask", COMPARE)
            or finding(check, "causal-diagonal", MaskKnobs(diagonal=1),
                       t("evidence.attention.diagnoses_masks.future_key"), "causal_mask", COMPARE)
            or finding(check, "causal-diagonal", MaskKnobs(diagonal=-1, top_left=True),
                       t("evidence.attention.diagnoses_masks.own_position_top_left"), "causal_mask", COMPARE,
                       score=0.9))


@diagnosis("causal-misaligned", ("masks",))
def misaligned(check):
    return (finding(check, "causal-misaligned", MaskKnobs(top_left=True),
                    t("evidence.attention.diagnoses_masks.top_left"), "causal_mask", COMPARE)
            or finding(check, "causal-misaligned", MaskKnobs(offset_sign=-1),
                       t("evidence.attention.diagnoses_masks.offset_sign"), "causal_mask",
                       COMPARE | {"sub", "__sub__", "__rsub__", "add", "__add__"}))


# (slug, knobs, the key of how it is said: evidence.attention.diagnoses_masks.<key>)
PAIRS = [("causal-diagonal", MaskKnobs(diagonal=-1), "pair_diagonal_hidden"),
         ("causal-diagonal", MaskKnobs(diagonal=1), "pair_future_key"),
         ("causal-misaligned", MaskKnobs(top_left=True), "pair_top_left"),
         ("padding-off-by-one", MaskKnobs(length_shift=1), "pair_key_too_many"),
         ("padding-off-by-one", MaskKnobs(length_shift=-1), "pair_key_too_few"),
         ("padding-on-queries", MaskKnobs(rows="queries"), "pair_query_rows"),
         ("mask-inverted", MaskKnobs(part="causal"), "pair_triangle_inverted"),
         ("mask-inverted", MaskKnobs(part="padding"), "pair_padding_inverted")]


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
            said = t("evidence.attention.diagnoses_masks.pair", first=t(f"evidence.attention.diagnoses_masks.{how_a}"),
                     second=t(f"evidence.attention.diagnoses_masks.{how_b}"), slug_a=slug_a, slug_b=slug_b)
            return [findings.make(slug_a, said, score=0.96), findings.make(slug_b, said, score=0.95)]
    return None


def _set(knobs: MaskKnobs) -> dict:
    return {k: v for k, v in vars(knobs).items() if v != getattr(MaskKnobs(), k)}


@diagnosis("padding-off-by-one", ("masks",))
def off_by_one(check):
    return (finding(check, "padding-off-by-one", MaskKnobs(length_shift=1),
                    t("evidence.attention.diagnoses_masks.key_too_many"), "padding_mask", COMPARE)
            or finding(check, "padding-off-by-one", MaskKnobs(length_shift=-1),
                       t("evidence.attention.diagnoses_masks.key_too_few"), "padding_mask",
                       COMPARE | {"sub", "__sub__", "__rsub__"}))


@diagnosis("padding-on-queries", ("masks",))
def on_queries(check):
    return (finding(check, "padding-on-queries", MaskKnobs(rows="queries"),
                    t("evidence.attention.diagnoses_masks.query_rows"), "attention_mask", PLACE)
            or finding(check, "padding-on-queries", MaskKnobs(rows="both"),
                       t("evidence.attention.diagnoses_masks.query_rows_too"), "attention_mask", PLACE))


# --- evidence: one row in words, and the masks side by side ----------------------------------------------

def keys(row: torch.Tensor) -> str:
    on = row.nonzero().flatten().tolist()
    if not on:
        return t("evidence.attention.diagnoses_masks.no_key")
    if on == list(range(on[0], on[-1] + 1)):
        return (t("evidence.attention.diagnoses_masks.key", key=on[0]) if len(on) == 1 else
                t("evidence.attention.diagnoses_masks.key_range", first=on[0], last=on[-1]))
    return t("evidence.attention.diagnoses_masks.key_list", keys=", ".join(map(str, on)))


def first_row(case, got: torch.Tensor, want: torch.Tensor) -> str:
    """The first row that differs, in words: which keys it sees, and which it should."""
    index = tuple(int(i) for i in (got != want).any(-1).nonzero()[0])
    fn = case.config["fn"]
    if fn == "causal_mask":
        who = t("evidence.attention.diagnoses_masks.query", query=index[0])
    elif fn == "padding_mask":
        who = t("evidence.attention.diagnoses_masks.sequence", seq=index[0],
                length=int(case.inputs['lengths'][index[0]]))
    else:
        who = t("evidence.attention.diagnoses_masks.query_of_sequence", query=index[2], seq=index[0],
                length=int(case.inputs['lengths'][index[0]]))
    return t("evidence.attention.diagnoses_masks.sees", who=who, got=keys(got[index]), want=keys(want[index]))


def picture(case, got: torch.Tensor, want: torch.Tensor) -> dict:
    """Your mask beside the expected one, as an interviewer would draw it (for a batch, the worst sequence)."""
    fn = case.config["fn"]
    if fn == "attention_mask":
        b = int((got != want).flatten(1).sum(1).argmax())
        got, want = got[b, 0], want[b, 0]
        title = t("evidence.attention.diagnoses_masks.picture_sequence", seq=b, length=int(case.inputs['lengths'][b]))
    elif fn == "padding_mask":
        title = t("evidence.attention.diagnoses_masks.picture_padding")
    else:
        title = t("evidence.attention.diagnoses_masks.picture_causal")

    def rows(t):
        return [[1.0 if v else 0.0 for v in row] for row in t.tolist()]

    return {"title": t("evidence.attention.diagnoses_masks.picture_filled", title=title), "caption": case.label,
            "yours": rows(got), "expected": rows(want)}


def by_function(check) -> str:
    """For the values-mismatch fallback: which functions give right masks."""
    parts = []
    for name in NAMES:
        mine = [(o, r) for o, r in zip(check.outcomes, check.refs) if o.case.config["fn"] == name]
        wrong = [(o, r) for o, r in mine if o.outputs is None or not torch.equal(o.outputs[0].cpu(), r[0])]
        if not wrong:
            parts.append(t("evidence.attention.diagnoses_masks.right_on_all", name=name, n=len(mine)))
            continue
        o, r = wrong[0]
        said = (t("evidence.attention.diagnoses_masks.raised") if o.outputs is None else
                first_row(o.case, o.outputs[0].cpu(), r[0]))
        parts.append(t("evidence.attention.diagnoses_masks.wrong_on", name=name, wrong=len(wrong), n=len(mine),
                       case=o.case.label, said=said))
    return t("evidence.attention.diagnoses_masks.separator").join(parts)


LOCATORS["masks"] = by_function
