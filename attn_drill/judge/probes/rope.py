"""Read a rotary embedding off its output: which features turn together, by what angle, at what frequency.

For reuse (the rope diagnoses, and the kv-cache checks on the keys of a returned cache):

    rot = fit_rotation(x, out)   # x before RoPE, out after; any leading axes, features last
    rot.pairs, rot.layout        # [(a, b), ...] features turned together; "half", "interleaved" or "other"
    rot.angles                   # (..., P): the angle pair p turned by at each sample, in (-pi, pi]
    omega, misfit = fit_frequencies(rot, positions)  # angle = omega[p] * position, fitted per pair
    misfit_of(rot, positions, omega)                  # how far a given set of frequencies is from the angles

`rotate(x, positions, base, knobs, omega)` is RoPE with one mistake per knob (variants.Knobs' rope_* fields), or
with fitted frequencies `omega`.
Everything here is found from numbers, never from source text; it runs in float64 on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_drill.i18n import t

ANGLE_TOL = 1e-3  # radians: a float32 angle is off by ~1e-5 at positions ~100, a mistake by far more
STRETCH_TOL = 1e-3  # relative change of a pair's length still called a rotation


# --- RoPE with one mistake per knob ---------------------------------------------------------------------

def _exponents(d: int, dtype) -> torch.Tensor:
    return torch.arange(0, d, 2, dtype=dtype) / d  # 2i/d for the pairs i in [0, d/2)


# frequency formulas people really write: name -> (how to say it, (d, base) -> (d/2,) float64 frequencies)
FREQUENCIES = {
    "ok": ("base ** (-2i/d)", lambda d, b: b ** -_exponents(d, torch.float64)),
    "no_factor_2": ("base ** (-i/d): the exponent lacks its factor 2 (arange(d/2) / d)",
                    lambda d, b: b ** -(torch.arange(d // 2, dtype=torch.float64) / d)),
    "half_d": ("base ** (-2i/(d/2)): d/2 in place of d in the exponent",
               lambda d, b: b ** -(2 * _exponents(d, torch.float64))),
    "default_base": ("10000 ** (-2i/d): the base argument is ignored",
                     lambda d, b: 10000.0 ** -_exponents(d, torch.float64)),
    "positive": ("base ** (+2i/d): the minus sign (or the 1 / ...) is missing",
                 lambda d, b: b ** _exponents(d, torch.float64)),
    "one_based": ("base ** (-2(i+1)/d): pairs counted from 1",
                  lambda d, b: b ** -(_exponents(d, torch.float64) + 2 / d)),
    "odd": ("base ** (-(2i+1)/d): odd exponents (arange(1, d, 2) for arange(0, d, 2))",
            lambda d, b: b ** -(_exponents(d, torch.float64) + 1 / d)),
    "linspace": ("base ** (-i/(d/2 - 1)): exponents spread over [0, 1] (linspace) instead of [0, 1 - 2/d]",
                 lambda d, b: b ** -torch.linspace(0, 1, d // 2, dtype=torch.float64)),
    "no_log": ("exp(-2i/d): log(base) is missing from exp(-2i/d * log(base))",
               lambda d, b: torch.exp(-_exponents(d, torch.float64))),
}


def frequency_said(how: str) -> str:
    """FREQUENCIES' way of saying formula `how` (the formula, then what is wrong with it), in the language in use."""
    said = {"ok": t("evidence.cache.probes_rope.freq_ok"),
            "no_factor_2": t("evidence.cache.probes_rope.freq_no_factor_2"),
            "half_d": t("evidence.cache.probes_rope.freq_half_d"),
            "default_base": t("evidence.cache.probes_rope.freq_default_base"),
            "positive": t("evidence.cache.probes_rope.freq_positive"),
            "one_based": t("evidence.cache.probes_rope.freq_one_based"),
            "odd": t("evidence.cache.probes_rope.freq_odd"),
            "linspace": t("evidence.cache.probes_rope.freq_linspace"),
            "no_log": t("evidence.cache.probes_rope.freq_no_log")}
    return said.get(how, FREQUENCIES[how][0])


def frequencies(d: int, base: float, how: str = "ok") -> torch.Tensor:
    """(d/2,) float64: the radians per position of each pair, by one of FREQUENCIES' formulas."""
    return FREQUENCIES[how][1](d, float(base))


def positions_as(positions: torch.Tensor, how: str = "given") -> torch.Tensor:
    """The positions the angles use: the given ones, or 0..T-1 (a mistake) shaped like them."""
    if how == "given":
        return positions
    T = positions.size(-1)
    return torch.arange(T, dtype=positions.dtype, device=positions.device).expand(positions.shape)


def half_pairs(d: int) -> list[tuple[int, int]]:
    return [(i, i + d // 2) for i in range(d // 2)]


def interleaved_pairs(d: int) -> list[tuple[int, int]]:
    return [(2 * i, 2 * i + 1) for i in range(d // 2)]


def rotate(x: torch.Tensor, positions: torch.Tensor, base: float, knobs=None, omega=None) -> torch.Tensor:
    """RoPE of x (B, H, T, d) in float64, with the mistakes knobs asks for (None: the right answer).
    omega, each pair's radians per position (d/2 floats, e.g. fitted to a user's keys), overrides the formula."""
    pairs = getattr(knobs, "rope_pairs", "half")
    sign = getattr(knobs, "rope_sign", 1)
    where = getattr(knobs, "rope_positions", "given")
    how = getattr(knobs, "rope_freqs", "ok")
    d = x.size(-1)
    freq = frequencies(d, base, how) if omega is None else torch.tensor(omega, dtype=torch.float64)  # (d/2,)
    theta = positions_as(positions, where).double()[..., None] * (sign * freq)  # (T, d/2) or (B, T, d/2)
    if theta.dim() == 3:
        theta = theta[:, None]  # (B, 1, T, d/2)
    cos, sin = theta.cos(), theta.sin()
    x = x.double()
    a, b = (x[..., : d // 2], x[..., d // 2:]) if pairs == "half" else (x[..., 0::2], x[..., 1::2])
    ra, rb = a * cos - b * sin, b * cos + a * sin
    if pairs == "half":
        return torch.cat([ra, rb], dim=-1)
    return torch.stack([ra, rb], dim=-1).flatten(-2)


# --- reading the rotation off (x, out) ------------------------------------------------------------------

@dataclass
class Rotation:
    """What out = RoPE(x) looks like, fitted from the numbers."""

    pairs: list[tuple[int, int]]  # (a, b), a < b, ordered by a: the features turned together
    angles: torch.Tensor  # (..., P) float64: the angle (x_a, x_b) turned by to become (out_a, out_b), in (-pi, pi]
    valid: torch.Tensor  # (...,) bool: samples where every pair of x is nonzero and out is finite
    stretch: float  # worst relative change of a pair's length over the valid samples (0 for rotations)

    @property
    def layout(self) -> str:
        d = 2 * len(self.pairs)
        if self.pairs == half_pairs(d):
            return "half"
        return "interleaved" if self.pairs == interleaved_pairs(d) else "other"

    @property
    def is_rotation(self) -> bool:
        return self.stretch <= STRETCH_TOL


def _length_change(X: torch.Tensor, Y: torch.Tensor, pairs) -> torch.Tensor:
    """(P,) relative change of each pair's squared length, summed over samples."""
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    before = X[:, a] ** 2 + X[:, b] ** 2
    after = Y[:, a] ** 2 + Y[:, b] ** 2
    return (after - before).abs().sum(0) / before.sum(0).clamp_min(1e-300)


def find_pairs(X: torch.Tensor, Y: torch.Tensor) -> list[tuple[int, int]] | None:
    """The pairing of features under which out keeps every pair's length: the contract's half split or the
    interleaved one when either fits (they are tried first: a pair that barely turns fits any partner),
    else each feature's best partner, when those partners pair up."""
    d = X.size(1)
    if d % 2:
        return None
    for pairs in (half_pairs(d), interleaved_pairs(d)):
        if float(_length_change(X, Y, pairs).max()) <= STRETCH_TOL:
            return pairs
    both = X[:, :, None] ** 2 + X[:, None, :] ** 2  # (N, d, d): squared length of (x_j, x_k)
    change = ((Y[:, :, None] ** 2 + Y[:, None, :] ** 2) - both).abs().sum(0) / both.sum(0).clamp_min(1e-300)
    change.fill_diagonal_(float("inf"))
    partner = change.argmin(1).tolist()
    if any(partner[partner[j]] != j for j in range(d)):
        return None
    return sorted((j, partner[j]) for j in range(d) if j < partner[j])


def fit_rotation(x: torch.Tensor, out: torch.Tensor) -> Rotation | None:
    """Which features out turned together, and by what angle at each sample; None when out cannot be read as
    x with its features turned in pairs (a shape that differs, or no pairing that keeps lengths)."""
    if x.shape != out.shape or x.dim() < 1 or x.size(-1) < 2:
        return None
    lead, d = x.shape[:-1], x.size(-1)
    X = x.detach().double().cpu().reshape(-1, d)
    Y = out.detach().double().cpu().reshape(-1, d)
    finite = torch.isfinite(Y).all(1) & torch.isfinite(X).all(1)
    if not bool(finite.any()):
        return None
    pairs = find_pairs(X[finite], Y[finite])
    if pairs is None:
        pairs = half_pairs(d) if d % 2 == 0 else None
        if pairs is None:
            return None
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    z = torch.complex(X[:, a], X[:, b])  # (N, P): each pair of x as a point in the plane
    w = torch.complex(Y[:, a], Y[:, b])
    scale = float(z.abs().max()) if z.numel() else 0.0
    valid = finite & (z.abs() > 1e-9 * max(scale, 1e-300)).all(1)
    angles = torch.where(valid[:, None], torch.angle(w * z.conj()), torch.zeros(()))
    lengths = (w.abs() - z.abs()).abs() / z.abs().clamp_min(1e-300)
    stretch = float(lengths[valid].max()) if bool(valid.any()) else float("inf")
    return Rotation(pairs, angles.reshape(*lead, len(pairs)), valid.reshape(lead), stretch)


def wrap(t: torch.Tensor) -> torch.Tensor:
    """Angles taken into [-pi, pi): a turn by t and by t + 2 pi are one turn."""
    return torch.remainder(t + math.pi, 2 * math.pi) - math.pi


def _samples(rot: Rotation, positions: torch.Tensor):
    """Flat (angles (N, P), positions (N,)) over the valid samples; positions broadcast against the samples."""
    p = positions.detach().double().cpu()
    lead = rot.valid.shape
    if p.dim() == 2 and len(lead) == 3:  # (B, T) positions against (B, H, T) samples: add the head axis
        p = p[:, None, :]
    p = p.expand(lead)
    return rot.angles[rot.valid], p[rot.valid]


def misfit_of(rot: Rotation, positions: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
    """(P,) worst |angle - omega * position| per pair, modulo 2 pi: ~0 when these frequencies explain the angles."""
    theta, p = _samples(rot, positions)
    if theta.numel() == 0:
        return torch.full((len(rot.pairs),), float("inf"))
    return wrap(theta - p[:, None] * omega.double()[None, :]).abs().amax(0)


def fit_frequencies(rot: Rotation, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per pair, the frequency omega in (-pi, pi] for which angle = omega * position fits best (integer
    positions cannot tell omega from omega + 2 pi), and the misfit (P,) that remains, in radians.

    A periodogram over a grid fine enough for the largest position finds the peak; least squares on the
    wrapped residuals refines it."""
    theta, p = _samples(rot, positions)
    P = len(rot.pairs)
    if theta.numel() == 0 or float(p.abs().max()) == 0:
        return torch.zeros(P, dtype=torch.float64), torch.full((P,), float("inf"))
    pmax = float(p.abs().max())
    grid = torch.linspace(-math.pi, math.pi, max(512, int(40 * pmax)), dtype=torch.float64)  # (K,)
    omega = torch.empty(P, dtype=torch.float64)
    for i in range(P):
        phase = theta[None, :, i] - grid[:, None] * p[None, :]  # (K, N)
        power = torch.complex(phase.cos(), phase.sin()).sum(1).abs()
        w = float(grid[int(power.argmax())])
        for _ in range(3):
            r = wrap(theta[:, i] - w * p)
            w += float((r * p).sum() / (p * p).sum())
        omega[i] = (w + math.pi) % (2 * math.pi) - math.pi
    return omega, misfit_of(rot, positions, omega)
