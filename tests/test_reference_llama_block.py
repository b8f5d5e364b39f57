"""The llama-block model answer against a formulation written apart from it (Hugging Face's rotate_half and
repeat_kv, an explicit softmax), against PyTorch's own RMSNorm, and the checker's variant with default knobs against
the model answer; each knob changes the outputs."""

import math

import pytest
import torch
import torch.nn.functional as F

from conftest import reference

from attn_drill.judge.specs import SPECS
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.llama import RIGHT_BLOCK, LlamaKnobs, block

llama = reference("llama_block")


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apart(m, x, positions):
    """The block as Hugging Face's LlamaDecoderLayer writes it, from m's weights."""
    B, T, D = x.shape
    H, Hkv = m.num_heads, m.num_kv_heads
    d = D // H

    def rms(t, w, eps):
        return w * (t / torch.sqrt(t.pow(2).mean(-1, keepdim=True) + eps))

    eps = m.attn_norm.eps
    hn = rms(x, m.attn_norm.weight, eps)
    q = (hn @ m.W_q.weight.T).view(B, T, H, d).transpose(1, 2)
    k = (hn @ m.W_k.weight.T).view(B, T, Hkv, d).transpose(1, 2)
    v = (hn @ m.W_v.weight.T).view(B, T, Hkv, d).transpose(1, 2)
    inv = 1.0 / (m.rope_base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = positions.double()[..., None] * inv
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    if cos.dim() == 3:
        cos, sin = cos[:, None], sin[:, None]
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    k = k[:, :, None].expand(B, Hkv, H // Hkv, T, d).reshape(B, H, T, d)  # HF's repeat_kv
    v = v[:, :, None].expand(B, Hkv, H // Hkv, T, d).reshape(B, H, T, d)
    s = q @ k.transpose(-2, -1) / math.sqrt(d) + torch.full((T, T), float("-inf")).triu(1)
    e = torch.exp(s - s.amax(-1, keepdim=True))
    y = ((e / e.sum(-1, keepdim=True)) @ v).transpose(1, 2).reshape(B, T, D) @ m.W_o.weight.T
    h = x + y
    f = rms(h, m.ffn_norm.weight, eps)
    g = F.silu(f @ m.ffn.w1.weight.T) * (f @ m.ffn.w3.weight.T)
    return h + g @ m.ffn.w2.weight.T


@pytest.mark.parametrize("H,Hkv,eps,pos", [(4, 2, 1e-6, "uneven"), (6, 3, 0.1, "rows"), (4, 1, 1e-6, None),
                                           (4, 4, 0.1, "uneven")])
def test_the_model_answer_equals_hugging_faces_formulation(H, Hkv, eps, pos):
    torch.manual_seed(0)
    B, T, d = 2, 6, 4
    m = llama.LlamaBlock(H * d, H, Hkv, 20, eps=eps).double()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    x = 3 * torch.randn(B, T, H * d, dtype=torch.float64)
    positions = {"uneven": torch.tensor([3, 4, 7, 8, 12, 13]), "rows": torch.tensor([[0, 2, 3, 5, 9, 10],
                                                                                     [1, 2, 6, 7, 8, 11]]),
                 None: torch.arange(T)}[pos]
    out = m(x) if pos is None else m(x, positions)
    torch.testing.assert_close(out, apart(m, x, positions))


def test_rmsnorm_equals_pytorchs():
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    mine = llama.RMSNorm(8, eps=0.1).double()
    theirs = torch.nn.RMSNorm(8, eps=0.1).double()
    with torch.no_grad():
        w = 1 + torch.randn(8, dtype=torch.float64)
        mine.weight.copy_(w)
        theirs.weight.copy_(w)
    torch.testing.assert_close(mine(x), theirs(x))


def test_the_variant_with_default_knobs_is_the_model_answer():
    spec = SPECS["llama-block"]
    for case in spec.cases(torch.Generator().manual_seed(3)):
        want = spec.reference(case)[0]
        torch.testing.assert_close(block(case.params, case.inputs["x"], _positions(case), case.config, RIGHT_BLOCK),
                                   want)


def _positions(case):
    p = case.inputs["positions"]
    return torch.arange(case.dims["T"]) if p is None else p


@pytest.mark.parametrize("knobs", [LlamaKnobs(norm="mean"), LlamaKnobs(norm="eps_outside"), LlamaKnobs(norm="no_eps"),
                                   LlamaKnobs(gate="swapped"), LlamaKnobs(gate="relu"), LlamaKnobs(residual="no_attn"),
                                   LlamaKnobs(residual="no_ffn"), LlamaKnobs(placement="post"),
                                   LlamaKnobs(causal="none"), LlamaKnobs(causal="no-diagonal"),
                                   LlamaKnobs(attn=Knobs(rope_pairs="interleaved")),
                                   LlamaKnobs(attn=Knobs(rope_positions="arange")),
                                   LlamaKnobs(attn=Knobs(kv_repeat="tile")), LlamaKnobs(attn=Knobs(scale=1.0))])
def test_every_knob_changes_the_output_somewhere(knobs):
    spec = SPECS["llama-block"]
    cases = spec.cases(torch.Generator().manual_seed(4))
    assert any(not torch.allclose(spec.variant(c, knobs)[0], spec.reference(c)[0]) for c in cases), knobs
