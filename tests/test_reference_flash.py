"""The flash model answer equals plain attention (reference/sdpa.py, an explicit softmax, PyTorch's SDPA),
causal and not, Tq != Tk both ways, block sizes that do and do not divide T; and it never builds the score matrix."""

import math

import pytest
import torch
import torch.nn.functional as F

from conftest import reference


flash = reference("flash").flash_attention


def bottom_right(Tq, Tk):
    """query i sees key j iff j <= i + (Tk - Tq), written out as loops (independent of any tril call)."""
    return torch.tensor([[j <= i + (Tk - Tq) for j in range(Tk)] for i in range(Tq)])


def explicit(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    e = torch.exp(s - s.amax(-1, keepdim=True))
    return (e / e.sum(-1, keepdim=True)) @ v


def qkv(B, H, Tq, Tk, d, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, H, Tq, d, generator=g, dtype=dtype), torch.randn(B, H, Tk, d, generator=g, dtype=dtype),
            torch.randn(B, H, Tk, d, generator=g, dtype=dtype))


SHAPES = [(2, 3, 37, 53, 8), (1, 2, 53, 37, 4), (2, 2, 40, 40, 16), (1, 1, 1, 29, 8), (1, 1, 29, 1, 8)]


@pytest.mark.parametrize("block", [1, 5, 16, 29, 64, 100])
@pytest.mark.parametrize("B,H,Tq,Tk,d", SHAPES)
def test_matches_attention_without_mask(B, H, Tq, Tk, d, block):
    q, k, v = qkv(B, H, Tq, Tk, d)
    out = flash(q, k, v, block_size=block)
    torch.testing.assert_close(out, reference("sdpa").scaled_dot_product_attention(q, k, v)[0])
    torch.testing.assert_close(out, explicit(q, k, v))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))


@pytest.mark.parametrize("block", [1, 7, 16, 64])
@pytest.mark.parametrize("B,H,Tq,Tk,d", [s for s in SHAPES if s[2] <= s[3]])
def test_matches_bottom_right_causal_attention(B, H, Tq, Tk, d, block):
    q, k, v = qkv(B, H, Tq, Tk, d, seed=1)
    mask = bottom_right(Tq, Tk)
    out = flash(q, k, v, causal=True, block_size=block)
    torch.testing.assert_close(out, reference("sdpa").scaled_dot_product_attention(q, k, v, mask)[0])
    torch.testing.assert_close(out, explicit(q, k, v, mask))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    if Tq != Tk:  # SDPA's is_causal is top-left aligned: a different answer, the trap this exercise names
        assert not torch.allclose(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))


@pytest.mark.parametrize("block", [3, 16])
def test_rows_with_no_visible_key_are_zero_like_sdpa(block):
    q, k, v = qkv(2, 2, 30, 19, 8, seed=2)  # causal with Tq > Tk: the first 11 queries see nothing
    out = flash(q, k, v, causal=True, block_size=block)
    mask = bottom_right(30, 19)
    assert not bool(mask[:11].any()) and bool(mask[11:].any(-1).all())
    assert bool((out[:, :, :11] == 0).all())
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_stable_for_large_scores():
    q, k, v = qkv(1, 2, 20, 45, 8, seed=3)
    q, k = q * 40, k * 40  # scores in the thousands: exp overflows without the running max
    out = flash(q, k, v, causal=True, block_size=8)
    assert bool(torch.isfinite(out).all())
    torch.testing.assert_close(out, explicit(q, k, v, bottom_right(20, 45)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_keeps_dtype_and_accumulates_in_float32(dtype):
    q, k, v = qkv(2, 2, 33, 47, 8, seed=4)
    out = flash(q.to(dtype), k.to(dtype), v.to(dtype), causal=True, block_size=10)
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), explicit(q, k, v, bottom_right(33, 47)),
                               atol={torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}[dtype], rtol=0)


def test_gradients_match_attention():
    q, k, v = (t.requires_grad_(True) for t in qkv(1, 2, 21, 34, 4, seed=5))
    g = torch.randn(1, 2, 21, 4, dtype=torch.float64)
    (flash(q, k, v, causal=True, block_size=8) * g).sum().backward()
    mine = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    (explicit(q, k, v, bottom_right(21, 34)) * g).sum().backward()
    for a, t in zip(mine, (q, k, v)):
        torch.testing.assert_close(a, t.grad)


def test_meta_device_runs():
    q, k, v = (t.to("meta") for t in qkv(1, 2, 21, 34, 4))
    out = flash(q, k, v, causal=True, block_size=8)
    assert out.device.type == "meta" and out.shape == (1, 2, 21, 4)
