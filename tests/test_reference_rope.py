"""rope: the model answer against the contract's formula written out pair by pair, the relative-position
property, and the fit that reads pairing, direction, positions and frequencies back off an output."""

import importlib.util
import math
from types import SimpleNamespace

import pytest
import torch

from attn_drill import paths
from attn_drill.judge import calls, diagnoses
from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.compare import closeness
from attn_drill.judge.specs import SPECS
from attn_drill.judge.variants.attention import RIGHT, Knobs


def apply_rope():
    spec = importlib.util.spec_from_file_location("ref_rope", paths.REFERENCE / "rope.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.apply_rope


def by_the_formula(x, positions, base):
    """The contract, one (batch, head, token, pair) at a time, in Python floats."""
    B, H, T, d = x.shape
    out = torch.empty_like(x)
    for b in range(B):
        for t in range(T):
            p = int(positions[b, t] if positions.dim() == 2 else positions[t])
            for i in range(d // 2):
                theta = p * base ** (-2 * i / d)
                c, s = math.cos(theta), math.sin(theta)
                for h in range(H):
                    xi, xj = float(x[b, h, t, i]), float(x[b, h, t, i + d // 2])
                    out[b, h, t, i] = xi * c - xj * s
                    out[b, h, t, i + d // 2] = xj * c + xi * s
    return out


@pytest.mark.parametrize("B,H,T,d,pos_shape,base", [
    (2, 3, 5, 8, "T", 10000.0), (2, 2, 6, 12, "BT", 100.0), (1, 4, 7, 16, "T", 500.0), (3, 1, 4, 6, "BT", 10000.0),
    (1, 1, 3, 2, "T", 10.0)])
def test_reference_is_the_formula_pair_by_pair(B, H, T, d, pos_shape, base):
    g = torch.Generator().manual_seed(d)
    x = torch.randn(B, H, T, d, generator=g, dtype=torch.float64)
    positions = torch.randint(0, 120, (T,) if pos_shape == "T" else (B, T), generator=g)
    got = apply_rope()(x, positions, base)
    torch.testing.assert_close(got, by_the_formula(x, positions, base), rtol=1e-12, atol=1e-12)
    assert got.dtype == x.dtype and got.shape == x.shape


def test_reference_default_base_and_low_precision():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 2, 5, 8, generator=g, dtype=torch.float64)
    positions = torch.tensor([3, 9, 10, 40, 77])
    want = by_the_formula(x, positions, 10000.0)
    torch.testing.assert_close(apply_rope()(x, positions), want, rtol=1e-12, atol=1e-12)
    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 5e-2)):
        got = apply_rope()(x.to(dtype), positions)
        assert got.dtype == dtype
        torch.testing.assert_close(got.double(), by_the_formula(x.to(dtype).double(), positions, 10000.0),
                                   rtol=tol, atol=tol)


def test_relative_position_property():
    """q rotated at m, k rotated at n: q . k depends only on m - n (shift both, the score stays)."""
    g = torch.Generator().manual_seed(2)
    d = 16
    q, k = torch.randn(d, generator=g, dtype=torch.float64), torch.randn(d, generator=g, dtype=torch.float64)
    rope = apply_rope()

    def score(m, n):
        x = torch.stack([q, k]).view(1, 1, 2, d)
        r = rope(x, torch.tensor([m, n]), 100.0)[0, 0]
        return float(r[0] @ r[1])

    for m, n in ((5, 2), (17, 40), (3, 3)):
        for shift in (1, 7, 64):
            assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=1e-10)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-6)  # and it does depend on the distance


def test_variant_with_default_knobs_is_the_reference_and_each_knob_shows():
    spec = SPECS["rope"]
    cases = spec.cases(torch.Generator().manual_seed(3))
    for case in cases:
        assert closeness(spec.variant(case, RIGHT)[0], spec.reference(case)[0]) < 1e-12, case.label
    for knobs in KNOBS:
        assert any(closeness(spec.variant(c, knobs)[0], spec.reference(c)[0]) > 1e-3 for c in cases), knobs


KNOBS = [Knobs(rope_pairs="interleaved"), Knobs(rope_sign=-1), Knobs(rope_positions="arange")] + [
    Knobs(rope_freqs=how) for how in rope_fit.FREQUENCIES if how != "ok"]


def changed(knobs) -> str:
    return str({f: v for f, v in vars(knobs).items() if f.startswith("rope") and v != vars(RIGHT)[f]})


@pytest.mark.parametrize("knobs", [RIGHT] + KNOBS, ids=changed)
@pytest.mark.parametrize("positions", [torch.tensor([[4, 9, 11, 30, 31, 57], [2, 3, 8, 20, 44, 45]]),
                                       torch.tensor([70, 12, 5, 33, 34, 90])], ids=["(B, T)", "(T,)"])
def test_fit_reads_the_knobs_back(knobs, positions):
    """From (x, out) alone: the pairing; and the frequencies times the positions used give the angles."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 6, 12, generator=g, dtype=torch.float64)
    out = rope_fit.rotate(x, positions, 100.0, knobs)
    rot = rope_fit.fit_rotation(x, out)
    assert rot.is_rotation and rot.layout == knobs.rope_pairs
    used = rope_fit.positions_as(positions, knobs.rope_positions)
    omega, misfit = rope_fit.fit_frequencies(rot, used)
    assert float(misfit.max()) < 1e-6
    want = knobs.rope_sign * rope_fit.frequencies(12, 100.0, knobs.rope_freqs)
    assert float(rope_fit.wrap(omega - want).abs().max()) < 1e-6  # integer positions: omega mod 2 pi
    other = rope_fit.positions_as(positions, "arange" if knobs.rope_positions == "given" else "given")
    assert float(rope_fit.fit_frequencies(rot, other)[1].max()) > 0.1  # the other positions do not fit


def test_fit_finds_a_pairing_of_no_known_layout():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 2, 5, 8, generator=g, dtype=torch.float64)
    order = [0, 7, 1, 6, 2, 5, 3, 4]  # pairs (0, 7), (1, 6), (2, 5), (3, 4) made adjacent, turned, put back
    turned = rope_fit.rotate(x[..., order], torch.tensor([3, 4, 9, 12, 20]), 100.0, Knobs(rope_pairs="interleaved"))
    out = torch.empty_like(turned)
    out[..., order] = turned
    rot = rope_fit.fit_rotation(x, out)
    assert rot.is_rotation and rot.layout == "other" and rot.pairs == [(0, 7), (1, 6), (2, 5), (3, 4)]


def test_fit_says_when_out_is_not_pairs_turned():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 2, 5, 8, generator=g, dtype=torch.float64)
    assert not rope_fit.fit_rotation(x, 0.5 * x).is_rotation  # lengths change
    assert rope_fit.fit_rotation(x, x[..., :4]) is None  # another shape


def check_of(knobs):
    """A check whose user outputs are RoPE with these knobs, as the engine would hold it after the values stage."""
    spec = SPECS["rope"]
    cases = spec.cases(torch.Generator().manual_seed(6))
    outcomes = [calls.Outcome(c, outputs=spec.variant(c, knobs)) for c in cases]
    return SimpleNamespace(spec=spec, outcomes=outcomes, refs=[(spec.reference(c)[0],) for c in cases], path=None)


@pytest.mark.parametrize("knobs,slugs", [
    (Knobs(rope_pairs="interleaved"), ["rope-interleaved"]),
    (Knobs(rope_sign=-1), ["rope-wrong-direction"]),
    (Knobs(rope_positions="arange"), ["rope-positions-ignored"]),
    (Knobs(rope_freqs="default_base"), ["rope-wrong-frequencies"]),
    (Knobs(rope_freqs="half_d"), ["rope-wrong-frequencies"]),
    (Knobs(rope_freqs="positive"), ["rope-wrong-frequencies"]),
    (Knobs(rope_sign=-1, rope_positions="arange"), ["rope-wrong-direction", "rope-positions-ignored"]),
    (Knobs(rope_pairs="interleaved", rope_freqs="no_factor_2"), ["rope-interleaved", "rope-wrong-frequencies"]),
], ids=str)
def test_diagnoses_name_the_knobs(knobs, slugs):
    found = diagnoses.diagnose(check_of(knobs))
    errors = sorted(f.slug for f in found if f.level == "error")
    assert errors == sorted(slugs), [(f.slug, f.evidence) for f in found]
    for f in found:
        assert "reproduces your outputs exactly on 4 of 4 cases" in f.evidence, f.evidence


def test_unknown_frequencies_are_named_with_the_fitted_numbers():
    check = check_of(RIGHT)
    for o in check.outcomes:  # every pair turns 1.5 times too fast: no formula in the list
        c = o.case
        omega = 1.5 * rope_fit.frequencies(c.dims["d"], c.dims["base"])
        theta = c.inputs["positions"].double()[..., None] * omega
        theta = theta[:, None] if theta.dim() == 3 else theta
        x1, x2 = c.inputs["x"].chunk(2, -1)
        o.outputs = (torch.cat([x1 * theta.cos() - x2 * theta.sin(), x2 * theta.cos() + x1 * theta.sin()], -1),)
    found = diagnoses.diagnose(check)
    assert [f.slug for f in found] == ["rope-wrong-frequencies"], [(f.slug, f.evidence) for f in found]
    assert "none of the usual slips" in found[0].evidence


def no_minus_sign(case):
    """rotate_half written as cat(x2, x1): x * cos + cat(x2, x1) * sin, which is not a rotation."""
    x, positions = case.inputs["x"], case.inputs["positions"]
    theta = positions.double()[..., None] * rope_fit.frequencies(case.dims["d"], case.dims["base"])
    theta = torch.cat([theta, theta], -1)
    theta = theta[:, None] if theta.dim() == 3 else theta
    x1, x2 = x.chunk(2, -1)
    return x * theta.cos() + torch.cat([x2, x1], -1) * theta.sin()


def test_values_mismatch_says_what_the_fit_sees():
    check = check_of(RIGHT)
    for o in check.outcomes:
        o.outputs = (no_minus_sign(o.case),)
    found = diagnoses.diagnose(check)
    assert [f.slug for f in found if f.level == "error"] == ["values-mismatch"], [(f.slug, f.evidence) for f in found]
    assert "not a rotation of pairs" in found[-1].evidence, found[-1].evidence
