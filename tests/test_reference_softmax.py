"""The softmax model answer agrees with torch.softmax, and the checker's cases tell the known mistakes apart."""


import pytest
import torch

from attn_drill.judge.diagnoses.softmax import _flavours, normalised_axis
from attn_drill.judge.specs import SPECS
from conftest import reference


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((4, 6), 0), ((4, 6), -1), ((2, 5, 4), 1), ((2, 3, 4, 5), 2),
                                       ((2, 3, 4, 5), -3)])
def test_matches_torch_softmax(shape, dim):
    x = 3 * torch.randn(shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    torch.testing.assert_close(reference("softmax").softmax(x, dim), torch.softmax(x, dim))


def test_default_dim_is_the_last():
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    torch.testing.assert_close(reference("softmax").softmax(x), torch.softmax(x, -1))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_magnitudes_of_1e4(dtype):
    g = torch.Generator().manual_seed(1)
    x = (torch.tensor([[1e4], [-1e4], [0.0], [5e3]], dtype=torch.float64) + torch.randn(4, 6, generator=g,
         dtype=torch.float64)).to(dtype)
    x[3] = 1e4 * torch.randn(6, generator=g, dtype=torch.float64).to(dtype)  # one row spread over ±1e4
    got = reference("softmax").softmax(x, -1)
    assert bool(torch.isfinite(got).all())
    torch.testing.assert_close(got, torch.softmax(x, -1))
    naive = x.exp() / x.exp().sum(-1, keepdim=True)
    assert not bool(torch.isfinite(naive).all())  # the case really overflows without the max


def test_neg_inf_entries_get_exactly_zero():
    x = torch.randn(3, 5, dtype=torch.float64)
    x[0, 1] = x[2, 0] = x[2, 4] = float("-inf")
    got = reference("softmax").softmax(x, -1)
    torch.testing.assert_close(got, torch.softmax(x, -1))
    assert got[0, 1] == 0 and got[2, 0] == 0 and got[2, 4] == 0


def test_all_neg_inf_slice_is_nan_like_torch():
    x = torch.full((2, 3), float("-inf"), dtype=torch.float64)
    x[1] = torch.randn(3, dtype=torch.float64)
    got, want = reference("softmax").softmax(x, -1), torch.softmax(x, -1)
    assert bool(torch.isnan(got[0]).all()) and bool(torch.isnan(want[0]).all())
    torch.testing.assert_close(got[1], want[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_keeps_dtype(dtype):
    x = torch.randn(3, 8).to(dtype)
    got = reference("softmax").softmax(x, -1)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), torch.softmax(x.double(), -1), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_cases_tell_the_mistakes_apart(seed):
    """The large case breaks each unstable softmax on slices the other leaves right; the -inf case never hides
    a whole slice; every case's dim differs from some other axis, so a wrong axis always shows."""
    cases = SPECS["softmax"].cases(torch.Generator().manual_seed(seed))
    large = [c for c in cases if float(c.inputs["x"][torch.isfinite(c.inputs["x"])].abs().max()) > 1e3]
    assert large
    for c in large:
        flavours = _flavours(c.inputs["x"], c.dims["dim"])
        nomax, glob = flavours["no max subtracted"], flavours["one max for the whole tensor"]
        assert bool((nomax & ~glob).any()) and bool((glob & ~nomax).any())
    inf = [c for c in cases if not bool(torch.isfinite(c.inputs["x"]).all())]
    assert inf
    for c in inf:
        x = c.inputs["x"]
        assert bool(torch.isfinite(x).any(c.dims["dim"]).all())
        assert bool(torch.isinf(x.movedim(c.dims["dim"], -1)[..., 0]).any())  # an online softmax's first step
    assert any(c.dims["dim"] is None for c in cases)
    for c in cases:  # the reference's output is read back as its own axis, and no other
        x, dim = c.inputs["x"], -1 if c.dims["dim"] is None else c.dims["dim"]
        out = torch.softmax(x, dim)
        assert normalised_axis(out, x) == dim % x.dim()
