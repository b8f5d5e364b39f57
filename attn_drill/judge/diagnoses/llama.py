"""Mistakes of the LLaMA block (llama-block): the norm, the gated feed-forward, the block's wiring, and the
attention inside it (RoPE, the kv heads, the scale, the causal mask).

The block returns only its output, so each mistake is a knob of variants/llama.py held to the user's outputs on
every case; the scale is fitted (the one factor that reproduces the outputs), never guessed from a list.
"""

from __future__ import annotations

from attn_drill.judge.diagnoses import diagnosis, fitted_scale
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.llama import LlamaKnobs

LLAMA = ("llama-block",)



@diagnosis("rmsnorm-mean-subtracted", LLAMA)
def rmsnorm_mean(check):
    return first(check, "rmsnorm-mean-subtracted", [
        (LlamaKnobs(norm="mean"), "RMSNorm with the mean subtracted first, as LayerNorm does"),
        (LlamaKnobs(norm="var"), "x / sqrt(var(x) + eps): the variance (centred) in place of the mean square")])


@diagnosis("rmsnorm-eps-misplaced", LLAMA)
def rmsnorm_eps(check):
    return first(check, "rmsnorm-eps-misplaced", [
        (LlamaKnobs(norm="eps_outside"), "x / (sqrt(mean(x^2)) + eps): eps added outside the square root"),
        (LlamaKnobs(norm="no_eps"), "x / sqrt(mean(x^2)): no eps at all")])


@diagnosis("swiglu-gate-swapped", LLAMA)
def swiglu_swapped(check):
    return first(check, "swiglu-gate-swapped", [(LlamaKnobs(gate="swapped"),
                 "w2(w1(x) * silu(w3(x))): SiLU on the up projection w3, not on the gate w1")])


@diagnosis("swiglu-wrong-activation", LLAMA)
def swiglu_activation(check):
    return first(check, "swiglu-wrong-activation", [
        (LlamaKnobs(gate=g), f"w2({name}(w1(x)) * w3(x)): {name} in place of SiLU")
        for g, name in (("relu", "relu"), ("gelu", "gelu"), ("gelu_tanh", "gelu (tanh)"), ("sigmoid", "sigmoid"),
                        ("none", "no activation,"))])


@diagnosis("missing-residual", LLAMA)
def missing_residual(check):
    return first(check, "missing-residual", [
        (LlamaKnobs(residual="no_attn"), "h = attn(attn_norm(x)): the attention's output replaces x"),
        (LlamaKnobs(residual="no_ffn"), "out = ffn(ffn_norm(h)): the feed-forward's output replaces h")])


@diagnosis("norm-placement", LLAMA)
def norm_placement(check):
    return first(check, "norm-placement", [(LlamaKnobs(placement="post"),
                 "post-norm: h = attn_norm(x + attn(x)); out = ffn_norm(h + ffn(h)), where LLaMA normalises each "
                 "sub-layer's input")])


@diagnosis(("rope-interleaved", "rope-wrong-direction", "rope-positions-ignored"), LLAMA)
def rope(check):
    return first(check, "rope-interleaved", [
        (LlamaKnobs(attn=Knobs(rope_pairs="interleaved")),
         "RoPE on adjacent pairs (2i, 2i + 1), Meta's original LLaMA layout (another project's convention)")]) or \
        first(check, "rope-wrong-direction", [(LlamaKnobs(attn=Knobs(rope_sign=-1)), "RoPE turning by -theta")]) or \
        first(check, "rope-positions-ignored", [(LlamaKnobs(attn=Knobs(rope_positions="arange")),
                                                 "RoPE at positions 0 .. T-1, not the positions given")])


@diagnosis("rope-wrong-frequencies", LLAMA)
def rope_frequencies(check):
    return first(check, "rope-wrong-frequencies", [
        (LlamaKnobs(attn=Knobs(rope_freqs=how)), f"RoPE's angle per pair {said}")
        for how, (said, _) in rope_fit.FREQUENCIES.items() if how != "ok"])


@diagnosis("kv-repeat-order", LLAMA)
def kv_repeat(check):
    return first(check, "kv-repeat-order", [(LlamaKnobs(attn=Knobs(kv_repeat="tile")),
                 "kv heads tiled with repeat: query head h reads kv head h % Hkv, not h // (H // Hkv)")])


@diagnosis(("causal-diagonal", "missing-causal-mask"), LLAMA)
def causal(check):
    return first(check, "missing-causal-mask", [(LlamaKnobs(causal="none"), "no causal mask: every token sees "
                                                 "the later ones")]) or \
        first(check, "causal-diagonal", [
            (LlamaKnobs(causal="no-diagonal"), "a causal mask that hides the diagonal (j < i)"),
            (LlamaKnobs(causal="no-diagonal", fill="min"), "a causal mask that hides the diagonal (j < i), filled "
             "with finfo.min: the first token, left no key, spreads its weight over all of them"),
            (LlamaKnobs(causal="one-future"), "a causal mask that shows one later token (j <= i + 1)")])


@diagnosis("softmax-wrong-dim", LLAMA)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(LlamaKnobs(attn=Knobs(softmax_dim=-2)),
                                               "the softmax over the queries (dim=-2)")])


@diagnosis(("missing-scale", "wrong-scale"), LLAMA)
def scale(check):
    """The one factor s for which the block with scores * s reproduces the outputs, on every case."""
    return fitted_scale(check, lambda s: LlamaKnobs(attn=Knobs(scale=s)))
