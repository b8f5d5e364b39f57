"""The layers' model answers agree with PyTorch's own nn.TransformerEncoderLayer / nn.TransformerDecoderLayer
(ReLU, no dropout, batch_first), post-LN and pre-LN; the checker's layer variants with default knobs agree with
the references, and every knob changes the outputs on the check's cases."""


import pytest
import torch

from attn_drill.judge.compare import closeness
from attn_drill.judge.specs import SPECS
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.layers import PLACEMENTS, LayerKnobs
from conftest import reference


def copy_attention(mine, theirs):
    """Our W_q, W_k, W_v, W_o into nn.MultiheadAttention's packed [W_q; W_k; W_v] and out_proj."""
    theirs.in_proj_weight.copy_(torch.cat([mine.W_q.weight, mine.W_k.weight, mine.W_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([mine.W_q.bias, mine.W_k.bias, mine.W_v.bias]))
    theirs.out_proj.weight.copy_(mine.W_o.weight)
    theirs.out_proj.bias.copy_(mine.W_o.bias)


def copy_rest(mine, theirs, norms):
    theirs.linear1.load_state_dict(mine.ff1.state_dict())
    theirs.linear2.load_state_dict(mine.ff2.state_dict())
    for i in range(1, norms + 1):
        with torch.no_grad():
            getattr(mine, f"norm{i}").weight.normal_(1.0, 0.3)  # not the default (1, 0): placement shows
            getattr(mine, f"norm{i}").bias.normal_(0.0, 0.3)
        getattr(theirs, f"norm{i}").load_state_dict(getattr(mine, f"norm{i}").state_dict())


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch(norm_first):
    torch.manual_seed(0)
    D, H, F, B, T = 12, 3, 20, 2, 5
    mine = reference("encoder_layer").EncoderLayer(D, H, F, norm_first=norm_first).double().eval()
    theirs = torch.nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True,
                                              norm_first=norm_first).double().eval()
    with torch.no_grad():
        copy_attention(mine.self_attn, theirs.self_attn)
    copy_rest(mine, theirs, 2)
    x = 3 * torch.randn(B, T, D, dtype=torch.float64)
    keep = torch.rand(B, T) < 0.7
    keep[:, 0] = True
    with torch.no_grad():  # (ours True = may attend; theirs True = ignore)
        want = theirs(x, src_key_padding_mask=~keep)
        got = mine(x, keep[:, None, :])
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    torch.manual_seed(1)
    D, H, F, B, Tq, Tk = 12, 3, 20, 2, 5, 7
    mine = reference("decoder_layer").DecoderLayer(D, H, F, norm_first=norm_first).double().eval()
    theirs = torch.nn.TransformerDecoderLayer(D, H, F, dropout=0.0, batch_first=True,
                                              norm_first=norm_first).double().eval()
    with torch.no_grad():
        copy_attention(mine.self_attn, theirs.self_attn)
        copy_attention(mine.cross_attn, theirs.multihead_attn)
    copy_rest(mine, theirs, 3)
    x, memory = 3 * torch.randn(B, Tq, D, dtype=torch.float64), torch.randn(B, Tk, D, dtype=torch.float64)
    keep = torch.rand(B, Tk) < 0.7
    keep[:, 0] = True
    causal = torch.nn.Transformer.generate_square_subsequent_mask(Tq, dtype=torch.float64)  # -inf above the diagonal
    with torch.no_grad():
        want = theirs(x, memory, tgt_mask=causal, memory_key_padding_mask=~keep)
        got = mine(x, memory, memory_mask=keep[:, None, :])
    torch.testing.assert_close(got, want)


def layer_knobs(exercise):
    blocks = ("self_attn", "ff") if exercise == "encoder-layer" else ("self_attn", "cross_attn", "ff")
    knobs = [LayerKnobs(missing_residual=(b,)) for b in blocks]
    knobs += [LayerKnobs(missing_residual=(blocks[0],), residual_when=w) for w in (False, True)]
    knobs += [LayerKnobs(placement=(p,) * len(blocks)) for p in PLACEMENTS]
    knobs += [LayerKnobs(activation="none"), LayerKnobs(activation="after"), LayerKnobs(attn=Knobs(scale=1.0)),
              LayerKnobs(attn=Knobs(mask="ignored"))]
    if exercise == "decoder-layer":
        knobs += [LayerKnobs(causal=c) for c in ("none", "unless_tgt", "diagonal", "future")]
        knobs += [LayerKnobs(cross_swapped=True)]
        knobs += [LayerKnobs(route=r) for r in ("swapped", "tgt_both", "memory_both", "no_tgt", "no_memory")]
    return knobs


@pytest.mark.parametrize("exercise", ["encoder-layer", "decoder-layer"])
def test_every_layer_knob_changes_the_outputs(exercise):
    """A variant equal to the reference on every case could never be told apart: the cases separate them (the
    placements that equal what a case asks for differ on the cases of the other norm_first)."""
    spec = SPECS[exercise]
    cases = spec.cases(torch.Generator().manual_seed(3))
    for kn in layer_knobs(exercise):
        differs = False
        for case in cases:
            try:
                var = spec.variant(case, kn)
            except RuntimeError:
                differs = True  # raises on this case's shapes, where the reference does not
                continue
            differs |= closeness(spec.reference(case)[0], var[0]) > 1e-6
        assert differs, kn


def test_the_cases_show_both_norm_placements_and_cross_attention_shapes():
    enc, dec = (SPECS[e].cases(torch.Generator().manual_seed(0)) for e in ("encoder-layer", "decoder-layer"))
    assert {c.config["norm_first"] for c in enc} == {c.config["norm_first"] for c in dec} == {False, True}
    assert any(c.dims["Tq"] != c.dims["Tk"] for c in dec) and any(c.dims["Tq"] == c.dims["Tk"] for c in dec)
    assert any(c.dims["B"] == c.dims["H"] and c.inputs["mask"] is not None for c in enc)
    # padding masks that hide keys, for both attentions
    assert any(m is not None and tuple(m.shape[1:2]) == (1,) and not bool(m.all())
               for c in dec for m in (c.inputs["tgt_mask"], c.inputs["memory_mask"]))
