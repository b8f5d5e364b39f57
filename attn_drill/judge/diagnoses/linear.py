"""Mistakes of linear attention (linear-attention): the feature map, the normaliser, the causal sums, and the
(T, T) matrix the causal form must never hold.

A leak of the future is read off behaviour first: the later half of a causal case's inputs is redrawn, and any
change in the outputs of the earlier positions is the future read. The forms are then named by variants of
variants/linear.py held to the outputs on every case. The (T, T) matrix is seen by memory.Allocations, which
stops the code at the op that makes it (as in flash).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import calls, memory
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import diagnosis
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.specs.base import Case
from attn_drill.judge.variants import linear as variants_linear
from attn_drill.judge.variants.linear import FEATURES, LinearKnobs

LINEAR = ("linear-attention",)



@diagnosis("full-scores-materialized", LINEAR)
def full_scores(check):
    hits = [o for o in check.outcomes if isinstance(o.error, memory.TensorTooLarge)]
    if not hits:
        return None
    o = hits[0]
    a, T = o.error.alloc, o.case.dims["T"]
    called = [name for name, line in (o.tracer.calls if o.tracer else []) if line == a.line and a.line]
    op = f"{called[-1]} ({a.op})" if called else a.op
    at = t("evidence.modern.diagnoses_linear.at_line", line=a.line) if a.line else ""
    d, dv = o.case.dims["d"], o.case.dims["dv"]
    evidence = t("evidence.modern.diagnoses_linear.full_scores", op=op, at=at, shape=a.shape, dtype=a.dtype,
                 per_head=a.per_head, T=T, need=T * d * dv, label=o.case.label, hits=len(hits),
                 n=len(check.outcomes))
    return findings.make("full-scores-materialized", evidence, line=a.line, score=2.0)


def future_read(check) -> tuple[Case, int, float] | None:
    """(case, t, change) when redrawing a causal case's q, k and v from position t on changes the outputs before t:
    the code reads the future. Several t, so a leak inside a block of positions shows wherever the blocks are cut.
    None when it does not, or cannot be told."""
    o = next((o for o in check.outcomes if o.case.dims["causal"] and o.outputs is not None), None)
    if o is None:
        return None
    case, T = o.case, o.case.dims["T"]
    gen = torch.Generator().manual_seed(7)
    for at in sorted({T - 1, T // 2, T // 3, 1}, reverse=True):
        inputs = {}
        for name, x in case.inputs.items():
            x = x.clone()
            x[..., at:, :] = torch.randn(x[..., at:, :].shape, generator=gen, dtype=x.dtype)
            inputs[name] = x
        o2 = calls.run(check.spec, check.target, Case(case.label, inputs, case.dims), check.path)
        if o2.outputs is None:
            return None
        change = closeness(o2.outputs[0][..., :at, :], o.outputs[0][..., :at, :].detach())
        if change > 1e-9:
            return case, at, change
    return None


@diagnosis("linear-causal-leak", LINEAR)
def causal_leak(check):
    named = first(check, "linear-causal-leak", [
        (LinearKnobs(sums="all"), t("evidence.modern.diagnoses_linear.sums_all")),
        (LinearKnobs(sums="den_all"), t("evidence.modern.diagnoses_linear.den_all")),
        (LinearKnobs(sums="num_all"), t("evidence.modern.diagnoses_linear.num_all")),
        (LinearKnobs(sums="suffix"), t("evidence.modern.diagnoses_linear.suffix"))])
    if named:
        return named
    read = future_read(check)
    if read is None:
        return None
    case, at, change = read
    T = case.dims["T"]
    redrawn = t("evidence.modern.diagnoses_linear.position", t=at) if at == T - 1 else \
        t("evidence.modern.diagnoses_linear.positions", t=at, last=T - 1)
    return findings.make("linear-causal-leak", t("evidence.modern.diagnoses_linear.leak", redrawn=redrawn,
                                                 before=at - 1, change=change, label=case.label), score=0.95)


@diagnosis("causal-diagonal", LINEAR)
def causal_diagonal(check):
    return first(check, "causal-diagonal", [(LinearKnobs(sums="strict"),
                                             t("evidence.modern.diagnoses_linear.strict"))])


@diagnosis("linear-no-normaliser", LINEAR)
def no_normaliser(check):
    return first(check, "linear-no-normaliser", [
        (LinearKnobs(normaliser=False), t("evidence.modern.diagnoses_linear.no_normaliser"))])


GRID = (-2.0, -1.0, 0.0, 1.0, 2.0)  # the key values the feature map is read at


def feature_shares(check) -> list[float] | None:
    """The user's feature map read off behaviour: d = 1, one query, keys at GRID, v one-hot by key and eps tiny, so
    output feature j is key j's share of the weights, phi(k_j) / sum phi(k) (with or without a normaliser, the
    shares are the ratios). None when the code cannot run so, or gives no finite shares."""
    n = len(GRID)
    inputs = {"q": torch.full((1, 1, n, 1), 0.3, dtype=torch.float64),
              "k": torch.tensor(GRID, dtype=torch.float64).view(1, 1, n, 1),
              "v": torch.eye(n, dtype=torch.float64).view(1, 1, n, n)}
    dims = {"B": 1, "H": 1, "T": n, "Tq": n, "Tk": n, "d": 1, "dv": n, "causal": False, "eps": 1e-12}
    o = calls.run(check.spec, check.target, Case(t("evidence.modern.diagnoses_linear.probe"), inputs, dims),
                  check.path)
    if o.outputs is None or o.outputs[0].shape != (1, 1, n, n):
        return None
    row = o.outputs[0][0, 0, 0].detach().double()
    total = row.sum()
    if not bool(torch.isfinite(row).all()) or abs(float(total)) < 1e-12:
        return None
    return (row / total).tolist()


@diagnosis("linear-feature-map", LINEAR)
def feature_map(check):
    named = first(check, "linear-feature-map", [
        (LinearKnobs(feature=how), t("evidence.modern.diagnoses_linear.feature", said=variants_linear.said(how)))
        for how in FEATURES if how != "ok"])
    if named:
        return named
    if any(o.outputs is None for o in check.outcomes):
        return None  # the probe's d = 1 broadcasts where the cases' widths raise: it would read another program
    shares = feature_shares(check)
    if shares is None:
        return None
    phi = F.elu(torch.tensor(GRID, dtype=torch.float64)) + 1
    want = (phi / phi.sum()).tolist()
    if max(abs(a - b) for a, b in zip(shares, want)) <= 1e-6:
        return None
    at = ", ".join(f"{x:g}" for x in GRID)
    return findings.make("linear-feature-map", t("evidence.modern.diagnoses_linear.shares", at=at, got=_list(shares),
                                                 want=_list(want)), score=0.95)


def _list(xs) -> str:
    return "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"
