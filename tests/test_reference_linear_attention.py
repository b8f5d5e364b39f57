"""The linear-attention model answer against the formula written as a loop over positions (the RNN form) and as
masked (T, T) products; the checker's variant with default knobs against the model answer; each knob changes the
outputs somewhere; and the causal form's memory: no (T, T) tensor."""

import pytest
import torch
import torch.nn.functional as F

from conftest import reference

from attn_drill.judge import memory
from attn_drill.judge.specs import SPECS
from attn_drill.judge.variants.linear import FEATURES, LinearKnobs

lin = reference("linear_attention")


def rnn(q, k, v, eps):
    """Causal linear attention one position at a time, keeping S (d, dv) and z (d,)."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    B, H, T, d = q.shape
    S = torch.zeros(B, H, d, v.size(-1), dtype=q.dtype)
    z = torch.zeros(B, H, d, dtype=q.dtype)
    outs = []
    for t in range(T):
        S = S + fk[:, :, t, :, None] * v[:, :, t, None, :]
        z = z + fk[:, :, t]
        outs.append((fq[:, :, t, None, :] @ S).squeeze(-2) / ((fq[:, :, t] * z).sum(-1, keepdim=True) + eps))
    return torch.stack(outs, dim=2)


@pytest.mark.parametrize("eps", [1e-6, 0.5])
def test_the_causal_model_answer_is_the_rnn(eps):
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 11, 4, dtype=torch.float64), torch.randn(2, 3, 11, 4, dtype=torch.float64)
    v = torch.randn(2, 3, 11, 5, dtype=torch.float64)
    torch.testing.assert_close(lin.linear_attention(q, k, v, causal=True, eps=eps), rnn(q, k, v, eps))


def test_the_non_causal_model_answer_is_the_last_position_of_the_rnn_for_every_query():
    torch.manual_seed(1)
    q, k = torch.randn(1, 2, 6, 3, dtype=torch.float64), torch.randn(1, 2, 6, 3, dtype=torch.float64)
    v = torch.randn(1, 2, 6, 4, dtype=torch.float64)
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    a = fq @ fk.transpose(-2, -1)
    want = (a @ v) / (a.sum(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(lin.linear_attention(q, k, v), want)


def test_the_causal_model_answer_holds_no_t_by_t_tensor():
    q, k, v = (torch.randn(1, 1, 30, n, dtype=torch.float64) for n in (4, 4, 3))
    with memory.Allocations(None, limit=30 * 30, heads=(1, 1)):
        lin.linear_attention(q, k, v, causal=True)


def test_the_variant_with_default_knobs_is_the_model_answer():
    spec = SPECS["linear-attention"]
    for case in spec.cases(torch.Generator().manual_seed(3)):
        torch.testing.assert_close(spec.variant(case, LinearKnobs())[0], spec.reference(case)[0])


KNOBS = [LinearKnobs(feature=f) for f in FEATURES if f != "ok"] + [LinearKnobs(normaliser=False)] + \
    [LinearKnobs(sums=s) for s in ("all", "strict", "den_all", "num_all", "suffix")]


@pytest.mark.parametrize("knobs", KNOBS)
def test_every_knob_changes_the_outputs_somewhere(knobs):
    spec = SPECS["linear-attention"]
    cases = spec.cases(torch.Generator().manual_seed(4))
    assert any(spec.distance(spec.variant(c, knobs), (spec.reference(c)[0],), None) > 1e-3 for c in cases), knobs
