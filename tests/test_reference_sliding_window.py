"""The sliding-window model answer against loops written from the contract and PyTorch's SDPA; the checker's variant
with default knobs against the model answer; each knob of the window's shape and the sink changes the outputs."""

import math

import pytest
import torch
import torch.nn.functional as F

from conftest import reference

from attn_drill.judge.variants.window import RIGHT_WINDOW, WindowKnobs, visible, window_attention

swa = reference("sliding_window").sliding_window_attention


def by_loops(q, k, v, window, sinks=None):
    """query i at p = i + Tk - Tq sees key j iff p - window < j <= p; the sink is one more logit in the softmax."""
    B, H, Tq, d = q.shape
    Tk = k.size(-2)
    w = torch.zeros(B, H, Tq, Tk, dtype=q.dtype)
    for b in range(B):
        for h in range(H):
            for i in range(Tq):
                p = i + Tk - Tq
                keys = [j for j in range(Tk) if p - window < j <= p]
                s = torch.stack([q[b, h, i] @ k[b, h, j] / math.sqrt(d) for j in keys])
                logits = torch.cat([s, sinks[h:h + 1]]) if sinks is not None else s
                e = torch.exp(logits - logits.max())
                w[b, h, i, keys] = (e / e.sum())[:len(keys)]
    return w @ v, w


def qkv(B, H, Tq, Tk, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, T, d, generator=g, dtype=torch.float64) for T in (Tq, Tk, Tk))


@pytest.mark.parametrize("Tq,Tk,window", [(6, 9, 3), (7, 7, 1), (5, 8, 2), (4, 10, 6), (9, 9, 20)])
@pytest.mark.parametrize("with_sinks", [False, True])
def test_the_model_answer_equals_loops_written_from_the_contract(Tq, Tk, window, with_sinks):
    q, k, v = qkv(2, 3, Tq, Tk, 8)
    sinks = torch.tensor([1.5, -0.5, 0.2], dtype=torch.float64) if with_sinks else None
    out, w = swa(q, k, v, window, sinks)
    want_out, want_w = by_loops(q, k, v, window, sinks)
    torch.testing.assert_close(w, want_w)
    torch.testing.assert_close(out, want_out)
    sums = w.sum(-1)
    assert bool((sums < 1 - 1e-3).all()) if with_sinks else torch.allclose(sums, torch.ones_like(sums))


def test_without_sinks_it_is_sdpa_with_the_band_as_its_mask():
    q, k, v = qkv(2, 3, 6, 11, 8)
    band = visible(6, 11, 4)
    out, _ = swa(q, k, v, 4)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=band))


@pytest.mark.parametrize("with_sinks", [False, True])
def test_the_variant_with_default_knobs_is_the_model_answer(with_sinks):
    q, k, v = qkv(2, 3, 6, 9, 8, seed=1)
    sinks = torch.tensor([0.3, 2.0, -1.0], dtype=torch.float64) if with_sinks else None
    for got, want in zip(window_attention(q, k, v, 3, sinks), swa(q, k, v, 3, sinks)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("knobs", [WindowKnobs(extra=1), WindowKnobs(extra=-1), WindowKnobs(ahead="window"),
                                   WindowKnobs(itself=False, extra=1), WindowKnobs(origin="start"),
                                   WindowKnobs(extra=None, ahead="all"), WindowKnobs(sink="ignored"),
                                   WindowKnobs(sink="scaled"), WindowKnobs(sink="unshifted")])
def test_every_window_knob_changes_the_outputs(knobs):
    q, k, v = qkv(2, 3, 6, 9, 8, seed=2)
    sinks = torch.tensor([0.3, 2.0, -1.0], dtype=torch.float64)
    right = window_attention(q, k, v, 3, sinks)
    wrong = window_attention(q, k, v, 3, sinks, wk=knobs)
    assert not torch.allclose(torch.nan_to_num(wrong[1]), right[1]), knobs
    assert knobs != RIGHT_WINDOW


def test_the_hugging_face_window_lets_window_plus_one_keys_through():
    seen = visible(1, 10, 4, WindowKnobs(extra=1))
    assert seen.sum() == 5 and seen[0, -5:].all()
    assert visible(1, 10, 4).sum() == 4


def test_a_slug_is_said_in_the_exercises_own_words_where_the_general_ones_would_mislead():
    from attn_drill import findings

    general = findings.make("causal-diagonal")
    windowed = findings.in_exercise(findings.make("causal-diagonal"), "sliding-window")
    assert "window" in windowed.title and "window" in windowed.fix and "window" not in general.fix
    assert findings.in_exercise(findings.make("causal-diagonal"), "masks").fix == general.fix
