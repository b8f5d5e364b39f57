"""sliding-window: the window's shape, read off the weights the code returns, and the sink's share of each row.

The window. A hidden key gets weight exactly 0, so the keys a user's code lets each query see are where its
weights are not 0. That set is held to a family of windows around each query's position p (keys before it,
itself, keys after it, p counted from the end or from the start): the one that fits every case, checked again as
a whole computation by its variant, says which mistake it is. The line is the user's first tensor that holds
that very window (a bool mask, an additive one, the masked scores).

The sink. With the window right, the user's weights are the window's softmax times a factor per row; the
contract's factor is 1 - the sink's share. A factor of 1 is the sink ignored; another factor below 1 is the sink
joined some other way (the forms people write are tried by name, for the evidence).
"""

from __future__ import annotations

import itertools

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import calls, localise
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import MATCH, departure, diagnosis, variant_finding
from attn_drill.judge.variants.window import RIGHT_WINDOW, WindowKnobs, visible

WINDOW = ("sliding-window",)

# the windows a careless mask gives, in the order they are tried (the first that fits every case is named)
SHAPES = [WindowKnobs(extra=e, itself=s, ahead=a, origin=o)
          for o, e, s, a in itertools.product(("end", "start"), (0, 1, -1, None, 2, -2), (True, False),
                                              (0, 1, "window", "all"))]


def support_fits(o, wk: WindowKnobs) -> bool | None:
    """Whether the user's weights on this case are nonzero exactly where `wk` lets each query see (rows it
    leaves empty not looked at: NaN, zeros or uniform there are all what an empty row gives); None when the
    weights cannot say (the code raised, or another shape)."""
    if o.outputs is None:
        return None
    w = o.outputs[1].detach()
    d = o.case.dims
    if tuple(w.shape) != (d["B"], d["H"], d["Tq"], d["Tk"]):
        return None
    seen = visible(d["Tq"], d["Tk"], d["window"], wk)  # (Tq, Tk)
    rows = seen.any(-1)
    return bool(((w != 0) == seen)[..., rows, :].all())


def fitted_window(check) -> WindowKnobs | None:
    """The window shape that the user's weights show on every case (two at least), when it is not the contract's."""
    said = [o for o in check.outcomes if support_fits(o, RIGHT_WINDOW) is not None]
    if len(said) < 2 or all(support_fits(o, RIGHT_WINDOW) for o in said):
        return None
    return next((wk for wk in SHAPES if wk != RIGHT_WINDOW and all(support_fits(o, wk) for o in said)), None)


def describe(wk: WindowKnobs, window: int) -> str:
    """The keys a window lets a query at p see, in words, for this window size."""
    behind = None if wk.extra is None else window - 1 + wk.extra
    ahead = {"window": window - 1, "all": None}.get(wk.ahead, wk.ahead)
    lo = t("evidence.cache.diagnoses_window.every_before") if behind is None else f"p - {behind}" if behind > 0 else "p"
    if behind is not None and behind <= 0 and not wk.itself:
        lo = "p + 1"
    hi = (t("evidence.cache.diagnoses_window.every_after") if ahead is None else f"p + {ahead}" if ahead > 0
          else "p" if wk.itself else "p - 1")
    where = "p = i + Tk - Tq" if wk.origin == "end" else t("evidence.cache.diagnoses_window.from_first_key")
    count = ("" if behind is None or ahead is None
             else t("evidence.cache.diagnoses_window.count", n=behind + ahead + wk.itself))
    return t("evidence.cache.diagnoses_window.keys", lo=lo, hi=hi, count=count, where=where)


def slug_of(wk: WindowKnobs) -> str | None:
    """The mistake a window shape is, when it differs from the contract in one way only."""
    r = RIGHT_WINDOW
    if wk.extra is None and wk.ahead == "all":
        return "mask-ignored"
    if wk == WindowKnobs(origin="start"):
        return "causal-misaligned"
    if wk.origin != r.origin:
        return None
    if wk in (WindowKnobs(itself=False, extra=1), WindowKnobs(itself=False), WindowKnobs(extra=-1, ahead=1)):
        return "causal-diagonal"  # the window shifted by one at its query's end
    if wk.itself and wk.extra == 0 and wk.ahead != 0:
        return "window-two-sided"
    if wk.itself and wk.ahead == 0 and wk.extra in (1, -1):
        return "window-off-by-one"
    return None


def window_line(check, wk: WindowKnobs) -> int | None:
    """The user's line that made the first tensor holding this window: a bool mask or its complement, an additive
    mask, the masked scores (their -inf where it hides), read on the first case the window differs on."""
    o = next((o for o in check.outcomes if o.outputs is not None
              and not torch.equal(*(visible(o.case.dims["Tq"], o.case.dims["Tk"], o.case.dims["window"], k)
                                    for k in (wk, RIGHT_WINDOW)))), None)
    if o is None or getattr(check, "target", None) is None:
        return None
    d = o.case.dims
    seen = visible(d["Tq"], d["Tk"], d["window"], wk).double()
    if bool(seen.all()):
        return None  # no window at all: no tensor of yours holds it
    keep = localise.Recorder()
    calls.run(check.spec, check.target, o.case, check.path, record=keep)
    for op in keep.ops:
        if holds(op, seen, neginf=not op.boolean) and op.line is not None:
            return wrong_part(keep.ops, op, d) or op.line
    return None


def holds(op, seen: torch.Tensor, neginf: bool = False) -> bool:
    """Whether the op's tensor is the (Tq, Tk) bool `seen` or its complement in every slice (neginf: a float
    tensor whose -inf entries are where `seen` is False: an additive mask, the masked scores)."""
    t = op.out
    if t.dim() < 2 or t.shape[-2:] != seen.shape:
        return False
    flat = t.reshape(-1, *seen.shape)
    if neginf:
        return all(torch.equal(torch.isneginf(m).double(), 1 - seen) for m in flat)
    return op.boolean and all(torch.equal(m, seen) or torch.equal(m, 1 - seen) for m in flat)


def wrong_part(ops, op, d: dict) -> int | None:
    """When the window was combined from parts made on other lines (causal & ~too_old), the line of the part that
    is none of the contract's own: the causal edge j <= p, the window's edge j > p - window, or both."""
    Tq, Tk, w = d["Tq"], d["Tk"], d["window"]
    p = torch.arange(Tq)[:, None] + (Tk - Tq)
    j = torch.arange(Tk)[None, :]
    right = [((j <= p) & (j > p - w)).double(), (j <= p).double(), (j > p - w).double()]
    todo, seen_ops = list(op.parents), set()
    while todo:  # the parts, through the ops of the same line (~too_old is an op of its own)
        part = ops[todo.pop(0)]
        if id(part) in seen_ops or not part.boolean or bool((part.out == part.out.flatten()[0]).all()):
            continue  # a constant (torch.ones) carries no window
        seen_ops.add(id(part))
        if part.line == op.line:
            todo += list(part.parents)
        elif part.line is not None and not any(holds(part, r) for r in right):
            return part.line
    return None


@diagnosis(("window-off-by-one", "window-two-sided", "causal-diagonal", "causal-misaligned", "mask-ignored"), WINDOW)
def window_shape(check):
    wk = fitted_window(check)
    slug = wk and slug_of(wk)
    if not slug:
        return None
    o = next(o for o in check.outcomes if support_fits(o, wk))
    w = o.case.dims["window"]
    how = t("evidence.cache.diagnoses_window.nonzero_on", yours=describe(wk, w), right=describe(RIGHT_WINDOW, w),
            window=w)
    if slug == "window-off-by-one":
        how += (t("evidence.cache.diagnoses_window.one_more") if wk.extra == 1 else
                t("evidence.cache.diagnoses_window.one_fewer"))
    return variant_finding(check, slug, wk, how, line=window_line(check, wk))


# --- the sink ----------------------------------------------------------------------------------------------

SINK_FORMS = ("scaled", "unshifted")  # the ways of joining the sink tried by name, in order


def sink_form_said(form: str) -> str:
    """One of SINK_FORMS, in words."""
    return {"scaled": t("evidence.cache.diagnoses_window.sink_scaled"),
            "unshifted": t("evidence.cache.diagnoses_window.sink_unshifted")}[form]


def sink_line(check, found):
    """The sink's line: the departure's (diagnose() gives it), unless that comes before the first line of the user's
    that reads the sinks at all (a wrong tensor made from the right scores alone is not the sink's doing)."""
    if found is None:
        return None
    o = next((o for o in check.outcomes if o.case.inputs["sinks"] is not None and o.outputs is not None), None)
    if o is None or getattr(check, "target", None) is None:
        return found
    sinks, lines = o.case.inputs["sinks"], []

    def reads(line, name, args, kwargs, out):
        if line is not None and any(isinstance(a, torch.Tensor) and a.shape == sinks.shape and a.is_floating_point()
                                    and torch.equal(a.detach().double().cpu(), sinks)
                                    for a in (*args, *kwargs.values())):
            lines.append(line)

    calls.run(check.spec, check.target, o.case, check.path, record=reads)
    if lines:
        gone = departure(check)
        if gone is None or gone.line is None or gone.line < lines[0]:
            found.line = lines[0]
    return found


@diagnosis("sink-ignored", WINDOW)
def sink_ignored(check):
    return sink_line(check, variant_finding(check, "sink-ignored", WindowKnobs(sink="ignored"),
                                            t("evidence.cache.diagnoses_window.no_sink")))


def row_factors(check, o) -> torch.Tensor | None:
    """The user's weights on a sink case as the no-sink window softmax times a factor per row: those factors
    (B, H, Tq), or None when the weights are not of that form (or the outputs do not follow from them)."""
    if o.outputs is None or o.case.inputs["sinks"] is None:
        return None
    out0, w0 = check.spec.variant(o.case, WindowKnobs(sink="ignored"))
    out, w = (t.detach().double() for t in o.outputs)
    if w.shape != w0.shape or out.shape != out0.shape:
        return None
    c = w.sum(-1, keepdim=True)  # w0's rows sum to 1
    if max(closeness(w, w0 * c), closeness(out, out0 * c)) > MATCH:
        return None
    return c.squeeze(-1)


@diagnosis("sink-misapplied", WINDOW)
def sink_misapplied(check):
    """The weights are the window's softmax scaled per row below 1, as a sink does, but by other shares."""
    sunk = [o for o in check.outcomes if o.case.inputs["sinks"] is not None]
    plain_right = all(o.outputs is not None and check.spec.distance(o.outputs, r, r) <= MATCH
                      for o, r in zip(check.outcomes, check.refs) if o.case.inputs["sinks"] is None)
    if not sunk or not plain_right:
        return None
    found = []
    for o in sunk:
        c = row_factors(check, o)
        if c is None or not bool(((c > 0) & (c < 1 - 1e-9)).all()):
            return None
        found.append((o, c))
    o, c = found[0]
    ref = check.refs[check.outcomes.index(o)][1].sum(-1)  # the contract's factors: 1 - the sink's share
    if float((c - ref).abs().max()) < 1e-6:
        return None
    h, i = divmod(int((c - ref).abs()[0].argmax()), c.size(-1))
    shares = t("evidence.cache.diagnoses_window.shares", case=o.case.label, h=h, i=i, kept=float(c[0, h, i]),
               logit=float(o.case.inputs['sinks'][h]), leaves=float(ref[0, h, i]))
    for form in SINK_FORMS:
        named = variant_finding(check, "sink-misapplied", WindowKnobs(sink=form), sink_form_said(form))
        if named:
            named.evidence += t("evidence.cache.diagnoses_window.sep") + shares
            return sink_line(check, named)
    evidence = shares + t("evidence.cache.diagnoses_window.plain_right")
    return sink_line(check, findings.make("sink-misapplied", evidence, score=0.9))
