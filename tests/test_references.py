"""The references (shown to users as model answers) agree with PyTorch's own implementations, and the
checker's variants with default knobs agree with the references."""

import importlib.util

import pytest
import torch
import torch.nn.functional as F

from attn_drill import paths
from attn_drill.judge.variants import attention as variants
from attn_drill.judge.specs import SPECS
from attn_drill.judge.compare import closeness


def load(name):
    spec = importlib.util.spec_from_file_location(f"ref_{name}", paths.REFERENCE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mask_shape", [None, (2, 3, 5, 6), (2, 1, 5, 6), (5, 6)])
def test_sdpa_matches_torch(mask_shape):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, t, dd, generator=g, dtype=torch.float64) for t, dd in ((5, 7), (6, 7), (6, 4)))
    mask = None
    if mask_shape:
        mask = torch.rand(mask_shape, generator=g) < 0.6
        mask[..., 0] = True  # every query sees a key
    out, weights = load("sdpa").scaled_dot_product_attention(q, k, v, mask)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64))


def test_sdpa_empty_row_gives_zeros_like_torch():
    q, k, v = torch.randn(1, 3, 4), torch.randn(1, 5, 4), torch.randn(1, 5, 2)
    mask = torch.ones(1, 3, 5, dtype=torch.bool)
    mask[0, 1] = False
    out, _ = load("sdpa").scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert bool((out[0, 1] == 0).all())


@pytest.mark.parametrize("B,H,Tq,Tk,d,bias", [(2, 3, 5, 6, 7, True), (3, 3, 4, 4, 4, False), (1, 2, 3, 7, 8, True)])
def test_mha_matches_nn_multihead_attention(B, H, Tq, Tk, d, bias):
    torch.manual_seed(0)
    D = H * d
    mine = load("mha").MultiHeadAttention(D, H, bias=bias).double().eval()
    theirs = torch.nn.MultiheadAttention(D, H, bias=bias, batch_first=True).double().eval()
    with torch.no_grad():  # copy our weights into its packed [W_q; W_k; W_v] layout
        theirs.in_proj_weight.copy_(torch.cat([mine.W_q.weight, mine.W_k.weight, mine.W_v.weight]))
        theirs.out_proj.weight.copy_(mine.W_o.weight)
        if bias:
            theirs.in_proj_bias.copy_(torch.cat([mine.W_q.bias, mine.W_k.bias, mine.W_v.bias]))
            theirs.out_proj.bias.copy_(mine.W_o.bias)
    query = torch.randn(B, Tq, D, dtype=torch.float64)
    kv = torch.randn(B, Tk, D, dtype=torch.float64)
    keep = torch.rand(B, Tk) < 0.7
    keep[:, 0] = True
    out, weights = mine(query, kv, kv, keep[:, None, :])
    # nn.MultiheadAttention's key_padding_mask says True = ignore: the opposite of ours, so invert it
    want, want_w = theirs(query, kv, kv, key_padding_mask=~keep, average_attn_weights=False)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(weights, want_w)


@pytest.mark.parametrize("exercise", ["sdpa", "mha"])
def test_every_knob_changes_the_outputs(exercise):
    """A variant that equals the reference on every case could never be told apart: the cases must separate them."""
    spec = SPECS[exercise]
    cases = spec.cases(torch.Generator().manual_seed(3))
    knobs = [variants.Knobs(scale=1.0), variants.Knobs(softmax_dim=-2), variants.Knobs(mask="inverted"),
             variants.Knobs(mask="ignored"), variants.Knobs(mask="after_softmax")]
    if exercise == "mha":
        knobs += [variants.Knobs(split="blocks"), variants.Knobs(merge="blocks"), variants.Knobs(out_proj=False),
                  variants.Knobs(head_axis=False)]
    for kn in knobs:
        differs = False
        for case in cases:
            ref = spec.reference(case)[0]
            try:
                var = spec.variant(case, kn)
            except RuntimeError:
                continue  # raises on this case (a broadcast that cannot happen): it must show on another one
            differs |= any(closeness(a, b) > 1e-6 for a, b in zip(ref, var))
        assert differs, kn
