"""The gqa model answer against the mha model answer with key/value weights repeated by the h // (H // Hkv)
mapping, and against F.scaled_dot_product_attention(..., enable_gqa=True); the checker's variants against it."""

import pytest
import torch
import torch.nn.functional as F

from attn_drill.judge.compare import closeness
from attn_drill.judge.variants import attention as variants
from attn_drill.judge.specs import SPECS
from conftest import reference

SHAPES = [(2, 6, 2, 5, 4, False), (2, 4, 2, 6, 5, True), (2, 4, 1, 5, 6, False), (3, 3, 3, 4, 4, True),
          (1, 8, 4, 7, 2, False)]  # B, H, Hkv, T, d, bias: groups of 3 and 2, MQA, plain MHA


def gqa(D, H, Hkv, bias):
    torch.manual_seed(0)
    module = reference("gqa").GroupedQueryAttention(D, H, Hkv, bias=bias).double().eval()
    if bias:  # nn.Linear's default biases are small: make them matter
        with torch.no_grad():
            for layer in (module.W_q, module.W_k, module.W_v, module.W_o):
                layer.bias.normal_()
    return module


def keep_mask(B, T, full=True):
    keep = torch.rand(B, T if full else 1, T) < 0.6
    keep[..., 0] = True  # every query sees a key
    return keep


@pytest.mark.parametrize("B,H,Hkv,T,d,bias", SHAPES)
@pytest.mark.parametrize("full", [True, False])
def test_matches_mha_with_kv_weights_repeated(B, H, Hkv, T, d, bias, full):
    D = H * d
    mine = gqa(D, H, Hkv, bias)
    mha = reference("mha").MultiHeadAttention(D, H, bias=bias).double().eval()
    # kv head j's rows [j*d, (j+1)*d) serve query heads j*g .. j*g + g-1: repeat each block of d rows g times
    kv_heads = torch.arange(H) // (H // Hkv)  # query head h -> kv head h // g
    rows = (kv_heads[:, None] * d + torch.arange(d)).flatten()
    with torch.no_grad():
        for name in ("W_q", "W_o"):
            getattr(mha, name).load_state_dict(getattr(mine, name).state_dict())
        for name in ("W_k", "W_v"):
            getattr(mha, name).weight.copy_(getattr(mine, name).weight[rows])
            if bias:
                getattr(mha, name).bias.copy_(getattr(mine, name).bias[rows])
    x = torch.randn(B, T, D, dtype=torch.float64)
    mask = keep_mask(B, T, full)
    out, weights = mine(x, mask)
    want, want_w = mha(x, x, x, mask)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(weights, want_w)


@pytest.mark.parametrize("B,H,Hkv,T,d,bias", SHAPES)
def test_matches_sdpa_with_enable_gqa(B, H, Hkv, T, d, bias):
    D = H * d
    mine = gqa(D, H, Hkv, bias)
    x = torch.randn(B, T, D, dtype=torch.float64)
    mask = keep_mask(B, T)
    q = mine.W_q(x).view(B, T, H, d).transpose(1, 2)
    k = mine.W_k(x).view(B, T, Hkv, d).transpose(1, 2)  # (B, Hkv, T, d): SDPA shares them itself
    v = mine.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None], enable_gqa=True)
    want = mine.W_o(y.transpose(1, 2).reshape(B, T, D))
    out, weights = mine(x, mask)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T, dtype=torch.float64))


def test_empty_row_gives_zeros_not_nan():
    mine = gqa(12, 4, 2, False)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    mask = keep_mask(2, 5)
    mask[:, 1] = False
    out, weights = mine(x, mask)
    assert bool(torch.isfinite(out).all())
    assert bool((weights[:, :, 1] == 0).all())


@pytest.mark.parametrize("knobs", [variants.Knobs(scale=1.0), variants.Knobs(softmax_dim=-2),
                                   variants.Knobs(mask="inverted"), variants.Knobs(mask="ignored"),
                                   variants.Knobs(mask="after_softmax"), variants.Knobs(head_axis=False),
                                   variants.Knobs(split="blocks"), variants.Knobs(merge="blocks"),
                                   variants.Knobs(out_proj=False), variants.Knobs(kv_repeat="tile")], ids=repr)
def test_every_knob_changes_the_outputs(knobs):
    """A mistake the cases cannot tell from the reference could never be named."""
    spec = SPECS["gqa"]
    differs = False
    for case in spec.cases(torch.Generator().manual_seed(3)):
        ref = spec.reference(case)[0]
        try:
            var = spec.variant(case, knobs)
        except RuntimeError:
            continue  # the mistake raises on this case (a mask broadcast that cannot happen): it must show elsewhere
        differs |= any(closeness(a, b) > 1e-6 for a, b in zip(ref, var))
    assert differs


def test_cases_tell_repeat_from_repeat_interleave_and_cover_mqa_and_mha():
    cases = SPECS["gqa"].cases(torch.Generator().manual_seed(3))
    kinds = {(c.dims["Hkv"] == 1, c.dims["Hkv"] == c.dims["H"]) for c in cases}
    assert kinds == {(False, False), (True, False), (False, True)}
    telling = [c for c in cases if 1 < c.dims["Hkv"] < c.dims["H"]]
    assert len(telling) >= 2
    assert any(c.dims["B"] == c.dims["H"] and c.inputs["mask"] is not None for c in cases)


def test_tiling_maps_head_h_to_kv_head_h_mod_hkv():
    t = torch.arange(2.0).view(1, 2, 1, 1)  # kv heads 0 and 1
    assert variants.repeat_kv(t, 3).flatten().tolist() == [0, 0, 0, 1, 1, 1]
    assert variants.repeat_kv(t, 3, "tile").flatten().tolist() == [0, 1, 0, 1, 0, 1]
