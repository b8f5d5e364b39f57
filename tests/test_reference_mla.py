"""The mla model answer (naive form) against the absorbed form written apart from it, as DeepSeek-V3's inference
code computes it (W_kv_b folded into the query and the output, Hugging Face's rotate_half for RoPE), token by token
and all at once; its RMSNorm against PyTorch's; the checker's variant with default knobs against the model answer;
and each knob changes the outputs somewhere."""

import math

import pytest
import torch

from conftest import reference

from attn_drill.judge.specs import SPECS
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.mla import MLAKnobs

mla = reference("mla")


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x, positions, base):
    d = x.size(-1)
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    emb = torch.cat([positions.double()[:, None] * inv] * 2, dim=-1)  # (T, d)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def absorbed(m, x, cache=None):
    """DeepSeek's absorbed attention from m's weights: scores against the latent, the values never built."""
    B, T, _ = x.shape
    H, r, dn, dr, dv = m.num_heads, m.kv_rank, m.d_nope, m.d_rope, m.d_v
    past = 0 if cache is None else cache[0].size(1)
    pos = torch.arange(past, past + T)
    q = (x @ m.W_q.weight.T).view(B, T, H, dn + dr)
    q_nope, q_pe = q[..., :dn], rope(q[..., dn:].transpose(1, 2), pos, m.rope_base).transpose(1, 2)
    a = x @ m.W_kv_a.weight.T
    c = a[..., :r]
    c = c / torch.sqrt(c.pow(2).mean(-1, keepdim=True) + m.kv_norm.eps) * m.kv_norm.weight
    pe = rope(a[..., r:], pos, m.rope_base)
    if cache is not None:
        c, pe = torch.cat([cache[0], c], 1), torch.cat([cache[1], pe], 1)
    wkv_b = m.W_kv_b.weight.view(H, dn + dv, r)
    q_lat = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :dn])
    s = (torch.einsum("bshc,btc->bsht", q_lat, c) + torch.einsum("bshr,btr->bsht", q_pe, pe)) / math.sqrt(dn + dr)
    Tk = c.size(1)
    s = s + torch.full((T, Tk), float("-inf")).triu(past + 1)[None, :, None]
    p = s.softmax(-1)
    o = torch.einsum("bshc,hdc->bshd", torch.einsum("bsht,btc->bshc", p, c), wkv_b[:, dn:])
    return o.reshape(B, T, H * dv) @ m.W_o.weight.T, (c, pe)


@pytest.mark.parametrize("H,r,dn,dr,dv,base", [(4, 12, 6, 4, 8, 10000.0), (3, 10, 8, 6, 4, 100.0),
                                               (2, 9, 4, 8, 5, 500.0)])
def test_the_model_answer_equals_the_absorbed_form_all_at_once_and_in_chunks(H, r, dn, dr, dv, base):
    torch.manual_seed(0)
    B, T, D = 2, 7, 16
    m = mla.MultiHeadLatentAttention(D, H, r, dn, dr, dv, rope_base=base).double()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    x = torch.randn(B, T, D, dtype=torch.float64)
    out, cache = m(x)
    want, want_cache = absorbed(m, x)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(cache, want_cache)
    outs, cache = [], None
    for chunk in (x[:, :3], x[:, 3:4], x[:, 4:]):
        o, cache = m(chunk, cache)
        outs.append(o)
    torch.testing.assert_close(torch.cat(outs, 1), want)
    torch.testing.assert_close(cache, want_cache)


def test_rmsnorm_equals_pytorchs():
    x = torch.randn(3, 5, 8, dtype=torch.float64) + 0.5
    mine = mla.RMSNorm(8, eps=0.1).double()
    theirs = torch.nn.RMSNorm(8, eps=0.1).double()
    with torch.no_grad():
        w = 1 + torch.randn(8, dtype=torch.float64)
        mine.weight.copy_(w)
        theirs.weight.copy_(w)
    torch.testing.assert_close(mine(x), theirs(x))


def test_the_variant_with_default_knobs_is_the_model_answer():
    spec = SPECS["mla"]
    for case in spec.cases(torch.Generator().manual_seed(3)):
        torch.testing.assert_close(spec.variant(case, MLAKnobs()), spec.unpack(spec.reference(case)[0]))


KNOBS = [MLAKnobs(norm="mean"), MLAKnobs(norm="eps_outside"), MLAKnobs(norm="no_eps"), MLAKnobs(latent="raw"),
         MLAKnobs(latent="twice"), MLAKnobs(latent="reread"), MLAKnobs(cache="raw"), MLAKnobs(cache="unrotated"), MLAKnobs(kv_b="blocked"),
         MLAKnobs(q="blocked"), MLAKnobs(kv_a="swapped"), MLAKnobs(rope="nope"), MLAKnobs(rope="nope_q"), MLAKnobs(rope="whole"),
         MLAKnobs(rope="no_k"), MLAKnobs(rope="no_q"), MLAKnobs(causal="none"), MLAKnobs(causal="no-diagonal"), MLAKnobs(causal="one-future"),
         MLAKnobs(causal="top-left"), MLAKnobs(causal="first-call"),
         MLAKnobs(rope_width="head"), MLAKnobs(rope_width="nope"), MLAKnobs(attn=Knobs(rope_pairs="interleaved")),
         MLAKnobs(attn=Knobs(rope_positions="arange")), MLAKnobs(attn=Knobs(rope_sign=-1)),
         MLAKnobs(attn=Knobs(scale=1.0)), MLAKnobs(attn=Knobs(softmax_dim=-2))]


@pytest.mark.parametrize("knobs", KNOBS)
def test_every_knob_changes_the_outputs_somewhere(knobs):
    spec = SPECS["mla"]
    cases = spec.cases(torch.Generator().manual_seed(4))
    assert any(spec.distance(spec.variant(c, knobs), spec.unpack(spec.reference(c)[0]), None) > 1e-3
               for c in cases), knobs
