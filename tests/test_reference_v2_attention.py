"""The v2 attention model answers (self-attention, mha-dims, relative-position) against independent computations:
PyTorch's SDPA, a per-head loop, the mha model answer, a loop over (query, key) pairs; the checker's variants
with default knobs against the references; and every knob tells itself apart on the cases."""

import math

import pytest
import torch
import torch.nn.functional as F

from attn_drill.judge.variants import relpos as variants_relpos
from attn_drill.judge.compare import closeness
from attn_drill.judge.specs import SPECS
from attn_drill.judge.variants.attention import Knobs
from conftest import reference


def keep_mask(*shape):
    keep = torch.rand(*shape) < 0.6
    keep[..., 0] = True  # every query sees a key
    return keep


@pytest.mark.parametrize("B,T,dim,dk,dv,full", [(2, 5, 6, 4, 7, True), (3, 4, 8, 6, 2, False), (1, 7, 5, 9, 3, True)])
def test_self_attention_matches_sdpa(B, T, dim, dk, dv, full):
    torch.manual_seed(0)
    mine = reference("self_attention").SelfAttention(dim, dk, dv).double().eval()
    x = torch.randn(B, T, dim, dtype=torch.float64)
    mask = keep_mask(B, T if full else 1, T)
    out, weights = mine(x, mask)
    q, k, v = mine.W_q(x), mine.W_k(x), mine.W_v(x)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))  # scale 1/sqrt(dk)
    assert out.shape == (B, T, dv) and weights.shape == (B, T, T)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, T, dtype=torch.float64))


def test_mha_dims_equals_mha_when_the_widths_are_d_model_over_heads():
    torch.manual_seed(0)
    D, H = 12, 3
    dims = reference("mha_dims").MultiHeadAttentionDims(D, H, D // H, D // H).double().eval()
    mha = reference("mha").MultiHeadAttention(D, H).double().eval()
    mha.load_state_dict(dims.state_dict())
    query, kv = torch.randn(2, 5, D, dtype=torch.float64), torch.randn(2, 6, D, dtype=torch.float64)
    mask = keep_mask(2, 5, 6)
    for a, b in zip(dims(query, kv, kv, mask), mha(query, kv, kv, mask)):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("B,H,Tq,Tk,dim,dk,dv", [(2, 3, 5, 6, 10, 4, 7), (3, 3, 4, 4, 7, 4, 5), (2, 4, 3, 7, 6, 3, 4)])
def test_mha_dims_matches_a_loop_over_heads(B, H, Tq, Tk, dim, dk, dv):
    torch.manual_seed(0)
    mine = reference("mha_dims").MultiHeadAttentionDims(dim, H, dk, dv).double().eval()
    query, kv = torch.randn(B, Tq, dim, dtype=torch.float64), torch.randn(B, Tk, dim, dtype=torch.float64)
    mask = keep_mask(B, 1, Tk)
    out, weights = mine(query, kv, kv, mask)
    q, k, v = mine.W_q(query), mine.W_k(kv), mine.W_v(kv)
    heads = []
    for h in range(H):  # head h: features [h*dk, (h+1)*dk) of q and k, [h*dv, (h+1)*dv) of v
        qh, kh, vh = q[..., h * dk:(h + 1) * dk], k[..., h * dk:(h + 1) * dk], v[..., h * dv:(h + 1) * dv]
        y = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask)
        heads.append(y)
    torch.testing.assert_close(out, mine.W_o(torch.cat(heads, dim=-1)))
    assert weights.shape == (B, H, Tq, Tk)


def relative_by_pairs(module, x):
    """Shaw et al.'s scores one (query, key) pair at a time, then softmax and W_o: no broadcasting to get wrong."""
    B, T, D = x.shape
    H, d, m = module.num_heads, module.d_head, module.max_distance
    q, k, v = (w(x).view(B, T, H, d) for w in (module.W_q, module.W_k, module.W_v))
    scores = torch.empty(B, H, T, T, dtype=x.dtype)
    for i in range(T):
        for j in range(T):
            r = module.rel_k.weight[min(max(j - i, -m), m) + m]  # (d,)
            scores[:, :, i, j] = ((q[:, i] * k[:, j]).sum(-1) + (q[:, i] * r).sum(-1)) / math.sqrt(d)
    weights = scores.softmax(-1)
    y = torch.einsum("bhij,bjhd->bihd", weights, v).reshape(B, T, D)
    return module.W_o(y), weights


@pytest.mark.parametrize("B,H,T,d,m", [(2, 3, 9, 5, 2), (1, 2, 4, 6, 3), (2, 4, 11, 3, 1)])
def test_relative_position_matches_the_pairwise_definition(B, H, T, d, m):
    torch.manual_seed(0)
    mine = reference("relative_position").RelativeSelfAttention(H * d, H, m).double().eval()
    x = torch.randn(B, T, H * d, dtype=torch.float64)
    for a, b in zip(mine(x), relative_by_pairs(mine, x)):
        torch.testing.assert_close(a, b)


def test_relative_position_with_zero_table_is_mha():
    torch.manual_seed(0)
    mine = reference("relative_position").RelativeSelfAttention(12, 3, 2).double().eval()
    mha = reference("mha").MultiHeadAttention(12, 3).double().eval()
    mha.load_state_dict({n: p for n, p in mine.state_dict().items() if not n.startswith("rel_k")})
    with torch.no_grad():
        mine.rel_k.weight.zero_()
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    mask = keep_mask(2, 7, 7)
    for a, b in zip(mine(x, mask), mha(x, x, x, mask)):
        torch.testing.assert_close(a, b)


def test_offsets_clip_wrap_and_raise():
    index, _ = variants_relpos.offsets(5, 1)
    assert index[0].tolist() == [1, 2, 2, 2, 2] and index[4].tolist() == [0, 0, 0, 0, 1]  # [i, j] = clip(j - i) + m
    flipped, _ = variants_relpos.offsets(5, 1, Knobs(relpos_offset="i-j"))
    assert flipped[0].tolist() == [1, 0, 0, 0, 0]
    wrapped, _ = variants_relpos.offsets(5, 1, Knobs(relpos_far="wrap"))
    assert wrapped[0].tolist() == [1, 2, 0, 1, 2]
    _, kept = variants_relpos.offsets(5, 1, Knobs(relpos_far="drop"))
    assert kept[0].tolist() == [True, True, False, False, False]
    with pytest.raises(RuntimeError):
        variants_relpos.offsets(5, 1, Knobs(relpos_far="none"))
    assert variants_relpos.offsets(2, 1, Knobs(relpos_far="none"))[0].tolist() == [[1, 2], [0, 1]]


EXERCISES = ["self-attention", "mha-dims", "relative-position"]


ATTENTION = [Knobs(scale=1.0), Knobs(softmax_dim=-2), Knobs(mask="inverted"), Knobs(mask="ignored"),
             Knobs(mask="after_softmax")]
HEADS = [Knobs(head_axis=False), Knobs(split="blocks"), Knobs(merge="blocks"), Knobs(out_proj=False)]
RELPOS = [Knobs(relpos_offset="i-j"), Knobs(relpos_far="none"), Knobs(relpos_far="wrap"), Knobs(relpos_far="drop"),
          Knobs(relpos_scaled=False)]
KNOBS = {"self-attention": ATTENTION, "mha-dims": ATTENTION + HEADS, "relative-position": ATTENTION + HEADS + RELPOS}


@pytest.mark.parametrize("exercise,knobs", [(e, k) for e in EXERCISES for k in KNOBS[e]], ids=repr)
def test_every_knob_changes_the_outputs(exercise, knobs):
    """A mistake the cases cannot tell from the reference could never be named."""
    spec = SPECS[exercise]
    differs = False
    for case in spec.cases(torch.Generator().manual_seed(3)):
        ref = spec.reference(case)[0]
        try:
            var = spec.variant(case, knobs)
        except RuntimeError:
            differs = True  # raises on this case (a broadcast or a lookup that cannot happen): that shows too
            continue
        differs |= any(a.shape != b.shape or closeness(a, b) > 1e-6 for a, b in zip(ref, var))
    assert differs


def test_cases_show_each_mistake():
    sa = SPECS["self-attention"].cases(torch.Generator().manual_seed(3))
    assert all(len({c.dims["dk"], c.dims["dv"], c.dims["dim"]}) == 3 for c in sa)
    md = SPECS["mha-dims"].cases(torch.Generator().manual_seed(3))
    assert all(c.dims["H"] * c.dims["dk"] != c.dims["dim"] and c.dims["dk"] != c.dims["dv"] for c in md)
    assert {c.dims["Tq"] > c.dims["Tk"] for c in md} >= {True} and any(c.dims["Tq"] < c.dims["Tk"] for c in md)
    rp = SPECS["relative-position"].cases(torch.Generator().manual_seed(3))
    assert sum(c.dims["T"] > 2 * c.dims["max_distance"] + 1 for c in rp) >= 3
    assert any(c.dims["T"] <= c.dims["max_distance"] + 1 for c in rp)  # unclipped code still runs somewhere
    for cases in (sa, md, rp):
        shapes = {None if c.inputs["mask"] is None else c.inputs["mask"].shape[1] == 1 for c in cases}
        assert shapes == {None, True, False}  # no mask, (B, 1, Tk) and (B, Tq, Tk)
    assert any(c.dims["B"] == c.dims["H"] and c.masked for c in md) and any(c.dims["B"] == c.dims["H"] and c.masked
                                                                            for c in rp)
