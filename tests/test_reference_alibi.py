"""The alibi model answer against the paper's own get_slopes (Press et al.'s code, recursive) and against the
fairseq form under a causal mask; the checker's variant with default knobs against the model answer; each knob
changes the outputs somewhere."""

import math

import pytest
import torch

from conftest import reference

from attn_drill.judge.specs import SPECS
from attn_drill.judge.variants.alibi import SLOPES, AlibiKnobs
from attn_drill.judge.variants.attention import Knobs

alibi = reference("alibi")


def get_slopes(n):
    """Press et al.'s get_slopes, as their repository writes it."""
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2]


@pytest.mark.parametrize("n", range(1, 33))
def test_the_slopes_are_the_papers(n):
    torch.testing.assert_close(alibi.alibi_slopes(n), torch.tensor(get_slopes(n), dtype=torch.float32))


def test_under_a_causal_mask_fairseqs_bias_gives_the_same_weights():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 6, T, 8, dtype=torch.float64) for T in (5, 9, 9))
    out, w = alibi.alibi_attention(q, k, v, causal=True)
    m = torch.tensor(get_slopes(6), dtype=torch.float64)[:, None, None]
    j = torch.arange(9)[None, :]
    p = torch.arange(5)[:, None] + 4
    s = q @ k.transpose(-2, -1) / math.sqrt(8) + m * j
    s = s.masked_fill(j > p, float("-inf"))
    torch.testing.assert_close(w, s.softmax(-1), rtol=1e-6, atol=1e-7)  # float32 slopes in the model answer
    torch.testing.assert_close(out, s.softmax(-1) @ v, rtol=1e-6, atol=1e-7)


def test_the_variant_with_default_knobs_is_the_model_answer():
    spec = SPECS["alibi"]
    for case in spec.cases(torch.Generator().manual_seed(3)):
        torch.testing.assert_close(spec.variant(case, AlibiKnobs()), spec.reference(case)[0])


KNOBS = [AlibiKnobs(bias=b) for b in ("reward", "scaled", "key", "key_neg")] + \
    [AlibiKnobs(slopes=s) for s in SLOPES if s != "ok"] + \
    [AlibiKnobs(origin="start"), AlibiKnobs(causal="none"), AlibiKnobs(causal="no-diagonal"),
     AlibiKnobs(causal="one-future"), AlibiKnobs(causal="top-left"), AlibiKnobs(attn=Knobs(scale=1.0)),
     AlibiKnobs(attn=Knobs(softmax_dim=-2))]


@pytest.mark.parametrize("knobs", KNOBS)
def test_every_knob_changes_the_outputs_somewhere(knobs):
    spec = SPECS["alibi"]
    cases = spec.cases(torch.Generator().manual_seed(4))
    assert any(spec.distance(spec.variant(c, knobs), spec.reference(c)[0], None) > 1e-3 for c in cases), knobs
