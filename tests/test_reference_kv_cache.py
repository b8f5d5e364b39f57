"""The kv-cache model answer: the whole sequence at once, token by token and in uneven chunks give the same
outputs and the same cache; and it equals an independent composition (RoPE written out per pair, then
PyTorch's own grouped-query causal attention over the full sequence). The checker's variants with default
knobs are the reference, and every knob changes what the cases see."""


import pytest
import torch
import torch.nn.functional as F

from attn_drill.judge.compare import closeness
from attn_drill.judge.specs import SPECS
from attn_drill.judge.variants.cache import CacheKnobs
from conftest import reference


def make(D, H, Hkv, base=10000.0, seed=0):
    torch.manual_seed(seed)
    return reference("kv_cache").CachedSelfAttention(D, H, Hkv, rope_base=base).double().eval()


def feed(module, x, chunks):
    """Call the module chunk by chunk, each call getting the cache the previous one returned."""
    outs, cache, start = [], None, 0
    for n in chunks:
        out, cache = module(x[:, start:start + n], cache)
        outs.append(out)
        start += n
    return torch.cat(outs, dim=1), cache


def rope_per_pair(x, positions, base):
    """The contract's formula, one pair (i, i + d/2) at a time."""
    d = x.size(-1)
    out = torch.empty_like(x)
    for i in range(d // 2):
        theta = positions.double() * base ** (-2 * i / d)  # (T,)
        c, s = theta.cos(), theta.sin()
        out[..., i] = x[..., i] * c - x[..., i + d // 2] * s
        out[..., i + d // 2] = x[..., i + d // 2] * c + x[..., i] * s
    return out


def independent(module, x):
    """Full-sequence attention composed from PyTorch's parts: RoPE per pair, SDPA with enable_gqa, W_o."""
    B, T, D = x.shape
    H, Hkv = module.num_heads, module.num_kv_heads
    d = D // H
    pos = torch.arange(T)
    q = rope_per_pair(module.W_q(x).view(B, T, H, d).transpose(1, 2), pos, module.rope_base)
    k = rope_per_pair(module.W_k(x).view(B, T, Hkv, d).transpose(1, 2), pos, module.rope_base)
    v = module.W_v(x).view(B, T, Hkv, d).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # Tq == Tk: no alignment question
    return module.W_o(y.transpose(1, 2).reshape(B, T, D)), (k, v)


CONFIGS = [(32, 4, 2, 10000.0), (36, 6, 2, 100.0), (24, 3, 1, 10000.0), (32, 4, 4, 500.0), (32, 8, 2, 10000.0)]


@pytest.mark.parametrize("D,H,Hkv,base", CONFIGS)
def test_at_once_token_by_token_and_in_chunks_agree(D, H, Hkv, base):
    module = make(D, H, Hkv, base)
    x = torch.randn(2, 11, D, dtype=torch.float64)
    whole, (k, v) = feed(module, x, [11])
    for chunks in ([1] * 11, [3, 5, 2, 1], [1, 6, 4], [10, 1]):
        out, (k2, v2) = feed(module, x, chunks)
        torch.testing.assert_close(out, whole, msg=lambda m: f"{chunks}: {m}")
        torch.testing.assert_close(k2, k)
        torch.testing.assert_close(v2, v)
    assert k.shape == v.shape == (2, Hkv, 11, D // H)


@pytest.mark.parametrize("D,H,Hkv,base", CONFIGS)
def test_matches_rope_per_pair_and_torch_gqa_attention(D, H, Hkv, base):
    module = make(D, H, Hkv, base, seed=1)
    x = torch.randn(3, 9, D, dtype=torch.float64)
    want, (wk, wv) = independent(module, x)
    with torch.no_grad():
        out, (k, v) = module(x)
        torch.testing.assert_close(out, want)
        torch.testing.assert_close(k, wk)  # the cache holds the rotated keys, Hkv heads
        torch.testing.assert_close(v, wv)  # and the values as they are
        # continuing from that cache: the last tokens' outputs of the full pass
        more = torch.randn(3, 4, D, dtype=torch.float64)
        out2, _ = module(more, (k, v))
        full, _ = independent(module, torch.cat([x, more], dim=1))
        torch.testing.assert_close(out2, full[:, 9:])


def test_float32_and_half_keep_their_dtype_and_stay_close():
    module = make(32, 4, 2)
    x = torch.randn(2, 6, 32, dtype=torch.float64)
    with torch.no_grad():
        want, _ = feed(module, x, [4, 1, 1])
    for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 2e-2), (torch.bfloat16, 1e-1)):
        m = make(32, 4, 2).to(dtype)
        with torch.no_grad():
            out, (k, v) = feed(m, x.to(dtype), [4, 1, 1])
        assert out.dtype == k.dtype == v.dtype == dtype
        assert float((out.double() - want).abs().max()) < tol


KNOBS = [CacheKnobs(scale="1"), CacheKnobs(scale="1/d"), CacheKnobs(softmax_dim=-2), CacheKnobs(softmax_dim=1),
         CacheKnobs(causal="top-left"), CacheKnobs(causal="top-left-chunks"), CacheKnobs(causal="one-future"),
         CacheKnobs(causal="no-diagonal", fill="min"), CacheKnobs(causal="none"), CacheKnobs(split="blocks"),
         CacheKnobs(merge="blocks"), CacheKnobs(out_proj=False), CacheKnobs(repeat="tile"), CacheKnobs(pairs="adjacent"), CacheKnobs(sign=-1),
         CacheKnobs(positions="restart"), CacheKnobs(freq="no_factor_2"), CacheKnobs(freq="default_base")]


@pytest.mark.parametrize("knobs", KNOBS, ids=repr)
def test_every_knob_changes_what_the_cases_see(knobs):
    """A mistake the cases cannot tell from the reference could never be named."""
    spec = SPECS["kv-cache"]
    cases = spec.cases(torch.Generator().manual_seed(3))
    differs = 0
    for case in cases:
        ref = spec.unpack(spec.reference(case)[0])
        differs += any(closeness(a, b) > 1e-6 for a, b in zip(ref, spec.variant(case, knobs)))
    assert differs >= 1


def test_cases_show_what_a_cache_hides():
    """Every case family the issue asks for: one call, uneven chunks, single tokens after a prefill, a given
    cache; kv heads > 1 with groups > 1; a rope_base other than 10000."""
    cases = SPECS["kv-cache"].cases(torch.Generator().manual_seed(0))
    steps = [c.dims["steps"] for c in cases]
    assert (7,) in [s for s in steps if len(s) == 1]
    assert any(len(set(s)) > 2 for s in steps)  # uneven chunks
    assert any(s[0] > 1 and s[1:] and set(s[1:]) == {1} for s in steps)  # prefill, then single tokens
    assert any(c.dims["T_past"] > 0 for c in cases)
    assert any(c.dims["Hkv"] > 1 and c.dims["H"] // c.dims["Hkv"] > 1 for c in cases)
    assert any(c.config["rope_base"] != 10000.0 for c in cases)
