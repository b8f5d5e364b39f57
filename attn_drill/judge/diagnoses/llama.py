"""Mistakes of the LLaMA block (llama-block): the norm, the gated feed-forward, the block's wiring, and the
attention inside it (RoPE, the kv heads, the scale, the causal mask).

The block returns only its output, so each mistake is a knob of variants/llama.py held to the user's outputs on
every case; the scale is fitted (the one factor that reproduces the outputs), never guessed from a list.
"""

from __future__ import annotations

from attn_drill.i18n import t
from attn_drill.judge.diagnoses import diagnosis, fitted_scale, variant_finding
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.llama import LlamaKnobs

LLAMA = ("llama-block",)



@diagnosis("rmsnorm-mean-subtracted", LLAMA)
def rmsnorm_mean(check):
    return first(check, "rmsnorm-mean-subtracted", [
        (LlamaKnobs(norm="mean"), t("evidence.modern.diagnoses_llama.rmsnorm_mean")),
        (LlamaKnobs(norm="var"), t("evidence.modern.diagnoses_llama.rmsnorm_var"))])


@diagnosis("rmsnorm-eps-misplaced", LLAMA)
def rmsnorm_eps(check):
    return first(check, "rmsnorm-eps-misplaced", [
        (LlamaKnobs(norm="eps_outside"), t("evidence.modern.diagnoses_llama.eps_outside")),
        (LlamaKnobs(norm="no_eps"), t("evidence.modern.diagnoses_llama.no_eps"))])


@diagnosis("swiglu-gate-swapped", LLAMA)
def swiglu_swapped(check):
    return first(check, "swiglu-gate-swapped", [(LlamaKnobs(gate="swapped"),
                 t("evidence.modern.diagnoses_llama.gate_swapped"))])


@diagnosis("swiglu-wrong-activation", LLAMA)
def swiglu_activation(check):
    return first(check, "swiglu-wrong-activation", [
        (LlamaKnobs(gate=g), t("evidence.modern.diagnoses_llama.activation", name=name) if name else
         t("evidence.modern.diagnoses_llama.no_activation"))
        for g, name in (("relu", "relu"), ("gelu", "gelu"), ("gelu_tanh", "gelu (tanh)"), ("sigmoid", "sigmoid"),
                        ("none", None))])


@diagnosis("missing-residual", LLAMA)
def missing_residual(check):
    for which in ("attn", "ffn"):  # the title and fix say which sub-layer lost its residual
        f = variant_finding(check, "missing-residual", LlamaKnobs(residual=f"no_{which}"),
                            t(f"evidence.modern.diagnoses_llama.no_{which}_residual"),
                            sublayer=t(f"evidence.modern.diagnoses_llama.sublayer_{which}"))
        if f:
            return f
    return None


@diagnosis("norm-placement", LLAMA)
def norm_placement(check):
    return first(check, "norm-placement", [(LlamaKnobs(placement="post"),
                                            t("evidence.modern.diagnoses_llama.post_norm"))])


@diagnosis(("rope-interleaved", "rope-wrong-direction", "rope-positions-ignored"), LLAMA)
def rope(check):
    return first(check, "rope-interleaved", [
        (LlamaKnobs(attn=Knobs(rope_pairs="interleaved")), t("evidence.modern.diagnoses_llama.rope_interleaved"))]) or \
        first(check, "rope-wrong-direction", [(LlamaKnobs(attn=Knobs(rope_sign=-1)),
                                               t("evidence.modern.diagnoses_llama.rope_direction"))]) or \
        first(check, "rope-positions-ignored", [(LlamaKnobs(attn=Knobs(rope_positions="arange")),
                                                 t("evidence.modern.diagnoses_llama.rope_positions"))])


@diagnosis("rope-wrong-frequencies", LLAMA)
def rope_frequencies(check):
    return first(check, "rope-wrong-frequencies", [
        (LlamaKnobs(attn=Knobs(rope_freqs=how)),
         t("evidence.modern.diagnoses_llama.rope_frequencies", said=rope_fit.frequency_said(how)))
        for how in rope_fit.FREQUENCIES if how != "ok"])


@diagnosis("kv-repeat-order", LLAMA)
def kv_repeat(check):
    return first(check, "kv-repeat-order", [(LlamaKnobs(attn=Knobs(kv_repeat="tile")),
                 t("evidence.modern.diagnoses_llama.kv_tiled"))])


@diagnosis(("causal-diagonal", "missing-causal-mask"), LLAMA)
def causal(check):
    return first(check, "missing-causal-mask", [(LlamaKnobs(causal="none"),
                                                 t("evidence.modern.diagnoses_llama.no_causal"))]) or \
        first(check, "causal-diagonal", [
            (LlamaKnobs(causal="no-diagonal"), t("evidence.modern.diagnoses_llama.no_diagonal")),
            (LlamaKnobs(causal="no-diagonal", fill="min"), t("evidence.modern.diagnoses_llama.no_diagonal_min")),
            (LlamaKnobs(causal="one-future"), t("evidence.modern.diagnoses_llama.one_future"))])


@diagnosis("softmax-wrong-dim", LLAMA)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(LlamaKnobs(attn=Knobs(softmax_dim=-2)),
                                               t("evidence.modern.diagnoses_llama.softmax_queries"))])


@diagnosis(("missing-scale", "wrong-scale"), LLAMA)
def scale(check):
    """The one factor s for which the block with scores * s reproduces the outputs, on every case."""
    return fitted_scale(check, lambda s: LlamaKnobs(attn=Knobs(scale=s)))
