"""Compare a user's tensor with the reference's: where it first differs, and by how much."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_drill.i18n import t


@dataclass
class Tolerance:
    atol: float
    rtol: float


# float64 runs are compared tightly enough to tell mistakes apart, loosely enough to allow a float32 detour
TOL = {
    torch.float64: Tolerance(1e-5, 1e-4),
    torch.float32: Tolerance(1e-4, 1e-3),
    torch.float16: Tolerance(2e-2, 2e-2),
    torch.bfloat16: Tolerance(8e-2, 5e-2),
}


@dataclass
class Diff:
    ok: bool
    max_abs: float
    max_rel: float  # max abs error / max |expected|
    index: tuple[int, ...] | None  # first element out of tolerance
    got: float | None = None
    want: float | None = None


def raw_bytes(t: torch.Tensor) -> bytes:
    """A tensor's bytes, as stored, without numpy: torch runs without it, and so must a fresh install."""
    flat = t.detach().cpu().contiguous().reshape(-1)
    return bytes(flat.view(torch.uint8).tolist())


def diff(got: torch.Tensor, want: torch.Tensor, tol: Tolerance) -> Diff:
    """Elementwise comparison in float64."""
    g, w = got.detach().double().cpu(), want.detach().double().cpu()
    err = (g - w).abs()
    bad = ~(err <= tol.atol + tol.rtol * w.abs())  # NaN counts as bad
    finite = torch.nan_to_num(err, nan=float("inf"))
    max_abs = float(finite.max()) if finite.numel() else 0.0
    # relative to the largest expected value: entries near zero would make an elementwise ratio meaningless
    max_rel = max_abs / max(float(w.abs().max()), 1e-12) if w.numel() else 0.0
    if not bool(bad.any()):
        return Diff(True, max_abs, max_rel, None)
    index = unravel(int(bad.flatten().nonzero()[0]), bad.shape)
    return Diff(False, max_abs, max_rel, index, float(g[index]), float(w[index]))


def unravel(flat: int, shape) -> tuple[int, ...]:
    """The index of the `flat`-th element of a tensor of `shape`, in plain arithmetic: torch.unravel_index's
    argument checks import sympy on first use (about a second of a check)."""
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


def closeness(got: torch.Tensor, want: torch.Tensor) -> float:
    """Relative L2 distance, 0 = identical; inf when shapes differ or values are not finite."""
    if got.shape != want.shape:
        return float("inf")
    g, w = got.detach().double().cpu(), want.detach().double().cpu()
    gf, wf = torch.isfinite(g), torch.isfinite(w)
    if not bool((gf == wf).all()):
        return float("inf")  # NaN or inf in one and not at the same place in the other
    if not bool(gf.all()):  # the same computation gives NaN in the same places: compare the rest
        same = (g[~gf].nan_to_num(0.0) == w[~wf].nan_to_num(0.0)).all()
        if not bool(same):
            return float("inf")
        g, w = g[gf], w[wf]
    if not w.numel():
        return 0.0
    big = float(torch.maximum(g.abs().max(), w.abs().max()))
    if big > 1e150:  # values near float64's end: their squares would overflow the norms (inf / inf = NaN)
        g, w = g / big, w / big
    return float((g - w).norm() / w.norm().clamp_min(1e-12))


def where(index: tuple[int, ...], axes: tuple[str, ...]) -> str:
    """Name an index by axes, e.g. (batch 1, head 2, query 0, key 3)."""
    axes = axes[-len(index):] if len(axes) >= len(index) else ("dim",) * (len(index) - len(axes)) + axes
    return t("evidence.core.compare.sep").join(t("evidence.core.compare.at", axis=axis(a), i=i)
                                                for a, i in zip(axes, index))


def axis(name: str) -> str:
    """An axis's name in the language in use ("kv head"); a name the catalogue lacks as it is."""
    try:
        return t(f"evidence.core.compare.axis.{name.replace(' ', '_')}")
    except KeyError:
        return name
