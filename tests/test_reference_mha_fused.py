"""The mha-fused model answer against nn.MultiheadAttention with copied weights, and the checker's variants
against the model answer."""

import importlib.util

import pytest
import torch

from attn_drill import paths
from attn_drill.judge.variants import modules as module_variants, attention as variants
from attn_drill.judge.compare import closeness
from attn_drill.judge.specs import SPECS


def reference():
    spec = importlib.util.spec_from_file_location("ref_mha_fused", paths.REFERENCE / "mha_fused.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FusedSelfAttention


def pair(D, H, bias):
    """Ours and nn.MultiheadAttention with the same weights: in_proj_weight stacks [W_q; W_k; W_v] as W_qkv does."""
    torch.manual_seed(0)
    mine = reference()(D, H, bias=bias).double().eval()
    theirs = torch.nn.MultiheadAttention(D, H, bias=bias, batch_first=True).double().eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(mine.W_qkv.weight)
        theirs.out_proj.weight.copy_(mine.W_o.weight)
        if bias:
            theirs.in_proj_bias.copy_(mine.W_qkv.bias)
            theirs.out_proj.bias.copy_(mine.W_o.bias)
    return mine, theirs


@pytest.mark.parametrize("B,H,T,d,bias", [(2, 3, 5, 7, True), (3, 3, 4, 4, False), (1, 4, 6, 2, True)])
def test_matches_nn_multihead_attention_with_padding(B, H, T, d, bias):
    mine, theirs = pair(H * d, H, bias)
    x = torch.randn(B, T, H * d, dtype=torch.float64)
    keep = torch.rand(B, T) < 0.7
    keep[:, 0] = True
    out, weights = mine(x, keep[:, None, :])
    # nn.MultiheadAttention's key_padding_mask says True = ignore: the opposite of ours, so invert it
    want, want_w = theirs(x, x, x, key_padding_mask=~keep, average_attn_weights=False)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(weights, want_w)


def test_matches_nn_multihead_attention_with_a_full_mask():
    B, H, T, d = 2, 3, 5, 4
    mine, theirs = pair(H * d, H, True)
    x = torch.randn(B, T, H * d, dtype=torch.float64)
    keep = torch.rand(B, T, T) < 0.6
    keep[..., 0] = True
    out, weights = mine(x, keep)
    # its 3D attn_mask is (B * H, T, T), row b * H + h, and True = ignore
    want, want_w = theirs(x, x, x, attn_mask=~keep.repeat_interleave(H, dim=0), average_attn_weights=False)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(weights, want_w)


def test_no_mask_matches_and_rows_sum_to_one():
    mine, theirs = pair(12, 4, True)
    x = torch.randn(2, 6, 12, dtype=torch.float64)
    out, weights = mine(x)
    torch.testing.assert_close(out, theirs(x, x, x, need_weights=False)[0])
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 6, dtype=torch.float64))


@pytest.mark.parametrize("knobs", [variants.Knobs(scale=1.0), variants.Knobs(softmax_dim=-2),
                                   variants.Knobs(mask="inverted"), variants.Knobs(mask="ignored"),
                                   variants.Knobs(mask="after_softmax"), variants.Knobs(head_axis=False),
                                   variants.Knobs(split="blocks"), variants.Knobs(merge="blocks"),
                                   variants.Knobs(out_proj=False), variants.Knobs(qkv_split="heads")], ids=repr)
def test_every_knob_changes_the_outputs(knobs):
    """A mistake the cases cannot tell from the reference could never be named."""
    spec = SPECS["mha-fused"]
    differs = False
    for case in spec.cases(torch.Generator().manual_seed(3)):
        ref = spec.reference(case)[0]
        try:
            var = spec.variant(case, knobs)
        except RuntimeError:
            continue  # the mistake raises on this case (a mask broadcast that cannot happen): it must show elsewhere
        differs |= any(closeness(a, b) > 1e-6 for a, b in zip(ref, var))
    assert differs


def test_the_per_head_split_gives_head_h_its_interleaved_features():
    """view(B, T, H, 3, d): query head h reads features [3hd, 3hd + d) of W_qkv's output."""
    B, T, H, d = 1, 2, 3, 2
    qkv = torch.arange(B * T * 3 * H * d, dtype=torch.float64).view(B, T, 3 * H * d)
    q, k, v = module_variants.split_qkv(qkv, H, "heads")
    assert q[0, 0, d:2 * d].tolist() == qkv[0, 0, 3 * d:4 * d].tolist()
    assert k[0, 0, :d].tolist() == qkv[0, 0, d:2 * d].tolist()
    q, k, v = module_variants.split_qkv(qkv, H)
    assert k[0, 0, :d].tolist() == qkv[0, 0, H * d:H * d + d].tolist()
