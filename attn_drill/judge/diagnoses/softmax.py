"""Softmax mistakes: the wrong axis normalised, and no per-slice max subtraction (overflow or 0/0)."""

from __future__ import annotations

import itertools

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge.compare import TOL, closeness, diff
from attn_drill.judge.diagnoses import LOCATORS, MATCH, diagnosis, line_of

NORMALISE = {"sum", "logsumexp", "div", "__truediv__", "__itruediv__", "div_"}
SHIFT = {"exp", "exp_", "amax", "max", "sub", "__sub__", "__isub__", "sub_"}


def _dim(case) -> int:
    dim = case.dims["dim"]
    return -1 if dim is None else dim


def _said(dim: int, ndim: int) -> str:
    pos = dim % ndim
    return t("evidence.attention.diagnoses_softmax.dim_last" if pos == ndim - 1 else
             "evidence.attention.diagnoses_softmax.dim", dim=pos)


def _right(o, ref) -> bool:
    return o.outputs is not None and diff(o.outputs[0], ref[0], TOL[torch.float64]).ok


def normalised_axis(out: torch.Tensor, x: torch.Tensor) -> str | int | tuple | None:
    """The axis along which `out` is exactly softmax(x) (an int), "all" for the whole tensor at once, a tuple of
    axes normalised together (a reshape that flattened them into one row), or None."""
    for axis in range(x.dim()):
        if closeness(out, torch.softmax(x, dim=axis)) <= MATCH:
            return axis
    if closeness(out, torch.softmax(x.flatten(), dim=0).view_as(x)) <= MATCH:
        return "all"
    for size in range(2, x.dim()):
        for axes in itertools.combinations(range(x.dim()), size):
            if closeness(out, torch.exp(x - x.logsumexp(dim=axes, keepdim=True))) <= MATCH:
                return axes
    return summed_axes(out)


def summed_axes(out: torch.Tensor) -> int | tuple | None:
    """Not a softmax of x, but weights that sum to 1 over some axes (each max subtracted along one axis, the sum
    taken along another): those axes; () when every entry is 1 (normalised on its own)."""
    out = out.detach().double()
    if not bool((out >= 0).all()) or not bool(torch.isfinite(out).all()):
        return None
    if bool(((out - 1).abs() <= 1e-9).all()):
        return ()
    for size in range(1, out.dim() + 1):
        for axes in itertools.combinations(range(out.dim()), size):
            sums = out.sum(dim=axes)
            if bool(((sums - 1).abs() <= 1e-9).all()):
                return axes[0] if size == 1 else ("all" if size == out.dim() else axes)
    return None


@diagnosis("softmax-wrong-dim", ("softmax",))
def wrong_dim(check):
    """Every case that fails is softmax along another axis (read from the output) and the rest are right."""
    wrong = []
    for o, ref in zip(check.outcomes, check.refs):
        if _right(o, ref):
            continue
        if o.outputs is None:
            return None
        x, dim = o.case.inputs["x"], _dim(o.case)
        axis = normalised_axis(o.outputs[0], x)
        if axis is None or axis == dim % x.dim():
            return None
        wrong.append((o, axis))
    if not wrong:
        return None
    o, axis = wrong[0]
    x, dim = o.case.inputs["x"], _dim(o.case)
    sums = o.outputs[0].detach().double().sum(dim)
    if axis == "all":
        along = t("evidence.attention.diagnoses_softmax.over_whole")
    elif axis == ():
        along = t("evidence.attention.diagnoses_softmax.over_each_entry")
    elif isinstance(axis, tuple):
        along = t("evidence.attention.diagnoses_softmax.over_dims", dims=", ".join(map(str, axis)))
    else:
        along = t("evidence.attention.diagnoses_softmax.along", dim=_said(axis, x.dim()))
    evidence = t("evidence.attention.diagnoses_softmax.sums_to_one", along=along, dim=_said(dim, x.dim()),
                 case=o.case.label, low=float(sums.min()), high=float(sums.max()))
    evidence += t("evidence.attention.diagnoses.tail", tail=_pattern(wrong, len(check.outcomes)))
    return findings.make("softmax-wrong-dim", evidence, line=line_of(o, NORMALISE), score=1.0)


def _pattern(wrong: list, n: int) -> str:
    """What the failing cases have in common."""
    if all(axis == o.case.inputs["x"].dim() - 1 for o, axis in wrong):
        return t("evidence.attention.diagnoses_softmax.last_axis_whatever", wrong=len(wrong), n=n)
    if all(o.case.dims["dim"] is None for o, _ in wrong):
        return t("evidence.attention.diagnoses_softmax.default_dim_wrong")
    return t("evidence.attention.diagnoses_softmax.another_axis_one" if len(wrong) == 1 else
             "evidence.attention.diagnoses_softmax.another_axis_many", wrong=len(wrong), n=n)


# --- stability: right on moderate inputs, broken where the entries are large ---------------------------------

def _flavours(x: torch.Tensor, dim: int) -> dict[str, torch.Tensor]:
    """The slices (along dim) that each unstable softmax gets wrong, as bool over the other axes."""
    want = torch.softmax(x, dim=dim)
    e = torch.exp(x)
    g = torch.exp(x - x.max())
    return {"no max subtracted": _broken(e / e.sum(dim, keepdim=True), want, dim),
            "one max for the whole tensor": _broken(g / g.sum(dim, keepdim=True), want, dim)}


def _broken(out: torch.Tensor, want: torch.Tensor, dim: int) -> torch.Tensor:
    """bool over the slices along dim: any entry out of the float64 tolerance (NaN counts as out)."""
    tol = TOL[torch.float64]
    return ~((out - want).abs() <= tol.atol + tol.rtol * want.abs()).all(dim)


def _what(values: torch.Tensor) -> str:
    if bool(torch.isnan(values).any()):
        return t("evidence.attention.diagnoses_softmax.nan")
    if bool(torch.isinf(values).any()):
        return t("evidence.attention.diagnoses_softmax.inf")
    if bool((values == 0).all()):
        return t("evidence.attention.diagnoses_softmax.all_zeros")
    return t("evidence.attention.diagnoses_softmax.wrong_values")


@diagnosis("softmax-unstable", ("softmax",))
def unstable(check):
    """Right on every case with moderate entries, wrong on slices with large ones: a missing per-slice max."""
    large = []
    for o, ref in zip(check.outcomes, check.refs):
        x = o.case.inputs["x"]
        big = float(x[torch.isfinite(x)].abs().max()) > 1e3
        if _right(o, ref):
            continue
        if o.outputs is None:
            return None
        if big:
            large.append((o, ref))
        elif bool(torch.isfinite(x).all()):
            return None  # wrong on ordinary inputs: not (only) a stability problem
    if not large:
        return None
    o, ref = large[0]
    x, dim = o.case.inputs["x"], _dim(o.case)
    out = o.outputs[0].detach().double()
    bad = _broken(out, ref[0].detach().double(), dim)
    evidence = t("evidence.attention.diagnoses_softmax.unstable", slices=_slices(bad, dim, x.dim()),
                 what=_what(out.movedim(dim, -1)[bad]), case=o.case.label, why=_why(x, dim, bad))
    return findings.make("softmax-unstable", evidence, line=line_of(o, SHIFT), score=1.2)


def _slices(bad: torch.Tensor, dim: int, ndim: int) -> str:
    """The broken slices, with the verb: "rows 0, 2 of x give", "row 4 of x gives", "3 slices ... give"."""
    if bad.dim() != 1:
        return t("evidence.attention.diagnoses_softmax.slices_along", count=int(bad.sum()), dim=dim % ndim)
    rows = bad.nonzero().flatten().tolist()
    if len(rows) == 1:
        return t("evidence.attention.diagnoses_softmax.row", row=rows[0])
    return t("evidence.attention.diagnoses_softmax.rows", rows=", ".join(map(str, rows)))


def _why(x: torch.Tensor, dim: int, bad: torch.Tensor) -> str:
    """Which unstable softmax breaks exactly these slices, or what the slices have in common."""
    for how, predicted in _flavours(x, dim).items():
        if torch.equal(predicted, bad):
            no_max = how.startswith("no max")
            why = (t("evidence.attention.diagnoses_softmax.overflows") if no_max else
                   t("evidence.attention.diagnoses_softmax.underflows", max=float(x.max())))
            how = t("evidence.attention.diagnoses_softmax.no_max" if no_max else
                    "evidence.attention.diagnoses_softmax.global_max")
            return t("evidence.attention.diagnoses_softmax.exactly_these", how=how, why=why)
    span = x.movedim(dim, -1)[bad]
    span = span[torch.isfinite(span)]
    return t("evidence.attention.diagnoses_softmax.span", low=float(span.min()), high=float(span.max()))


def slices_sum(check) -> str:
    """For the values-mismatch fallback: do the user's slices along dim still sum to 1?"""
    for o, ref in zip(check.outcomes, check.refs):  # the case values-mismatch names
        if o.outputs is not None and closeness(o.outputs[0], ref[0]) > MATCH:
            dim = -1 if o.case.dims["dim"] is None else o.case.dims["dim"]
            sums = o.outputs[0].detach().double().sum(dim)
            return t("evidence.attention.diagnoses_softmax.slices_sum", low=float(sums.min()), high=float(sums.max()))
    return t("evidence.attention.diagnoses_softmax.no_tensor")


LOCATORS["softmax"] = slices_sum
