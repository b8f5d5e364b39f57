"""Mistakes of multi-head latent attention (mla): the latent and its norm, the per-head layouts, where RoPE goes,
the cache, and the attention inside (scale, causal mask, softmax, the RoPE family).

The module returns its output and its cache over a case's calls (and the checker's lone RMSNorm call), so each
mistake is a knob of variants/mla.py held to all of them on every case; the scale is fitted. A cache in another
form than the contract's is also read off directly: the outputs are right on every case fed the file's own cache,
the returned cache is not (a shape of per-head keys and values, the latent before the norm, the rope key before
RoPE), and a case that starts from the reference's cache then goes wrong (its evidence).
"""

from __future__ import annotations

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import load
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import MATCH, SHAPE_CAUSES, diagnosis, fitted_scale
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.variants import mla as variants_mla
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.mla import MLAKnobs

MLA = ("mla",)



# --- the cache ---------------------------------------------------------------------------------------------

def own_cache(case) -> bool:
    """The case starts from no cache: every call gets the cache the file's own previous call returned."""
    return "c_past" not in case.inputs


def raw_latent(case):
    """(c_kv before kv_norm, k_pe before RoPE), (B, T, r) and (B, T, dr), of the case's new tokens."""
    return variants_mla.latent(case.params, case.inputs["x"], case.config, MLAKnobs())


def cache_holds(o) -> str | None:
    """What the cache the user returned holds for the new tokens, in words, when it is not the contract's."""
    if o.outputs is None:
        return None
    case, past = o.case, o.case.dims["T_past"]
    c_kv, k_pe = (x.detach().double().cpu() for x in o.outputs[1:3])
    want = variants_mla.run(case.params, case.inputs["x"], case.config, case.dims["steps"],
                            None if own_cache(case) else (case.inputs["c_past"], case.inputs["pe_past"]))
    c_raw, pe_raw = raw_latent(case)
    said = []
    if c_kv.shape == want[1].shape and closeness(c_kv, want[1]) > MATCH:
        said.append(t("evidence.modern.diagnoses_mla.c_kv_raw") if closeness(c_kv[:, past:], c_raw) <= MATCH
                    else t("evidence.modern.diagnoses_mla.c_kv_other"))
    if k_pe.shape == want[2].shape and closeness(k_pe, want[2]) > MATCH:
        said.append(t("evidence.modern.diagnoses_mla.k_pe_raw") if closeness(k_pe[:, past:], pe_raw) <= MATCH
                    else t("evidence.modern.diagnoses_mla.k_pe_other"))
    return t("evidence.modern.diagnoses_mla.sep").join(said) or None


def outputs_right_on_own_cache(check) -> list:
    """The cases fed the file's own cache, when out is right on every one of them (two at least); else []."""
    own = [(o, ref) for o, ref in zip(check.outcomes, check.refs) if own_cache(o.case)]
    if len(own) < 2 or any(o.outputs is None or closeness(o.outputs[0], ref[0]) > MATCH for o, ref in own):
        return []
    return [o for o, _ in own]


def given_cache_evidence(check) -> str:
    """What the case that starts from the reference's cache did, in words ("" when it is right)."""
    for o, ref in zip(check.outcomes, check.refs):
        if own_cache(o.case):
            continue
        if o.outputs is None:
            return t("evidence.modern.diagnoses_mla.given_raises", label=o.case.label, error=load.describe(o.error))
        err = closeness(o.outputs[0], ref[0])
        if err > MATCH:
            return t("evidence.modern.diagnoses_mla.given_off", label=o.case.label, err=err)
    return ""


@diagnosis("mla-cache-expanded", MLA)
def cache_expanded(check):
    """The known forms by their variants; any other cache that only the file itself can read, from the outputs."""
    found = first(check, "mla-cache-expanded", [
        (MLAKnobs(cache="raw"), t("evidence.modern.diagnoses_mla.cache_raw")),
        (MLAKnobs(cache="unrotated"), t("evidence.modern.diagnoses_mla.cache_unrotated"))])
    if found:
        return found
    own = outputs_right_on_own_cache(check)
    held = next(filter(None, (cache_holds(o) for o in own)), None)
    if not own or held is None:
        return None
    evidence = t("evidence.modern.diagnoses_mla.cache_not_contract", n=len(own), held=held, label=own[0].case.label)
    tail = given_cache_evidence(check)
    if tail:
        evidence = t("evidence.modern.diagnoses_mla.then", first=evidence, second=tail)
    return findings.make("mla-cache-expanded", evidence, score=0.95)


def per_head_cache(check, symptom):
    """The shapes stage's wrong c_kv or k_pe, when out is right on every case fed the file's own cache: per-head
    keys and values (or any other shape) kept where the latent belongs, the wrong shape its evidence."""
    own, shapes = [], None
    for o in check.outcomes:
        if not own_cache(o.case) or o.outputs is None:
            continue
        ref = check.spec.unpack(check.spec.reference(o.case)[0])
        if o.outputs[0].shape != ref[0].shape or closeness(o.outputs[0], ref[0]) > MATCH:
            return None
        own.append(o)
        got = tuple(tuple(x.shape) for x in o.outputs[1:3])
        if got != tuple(tuple(x.shape) for x in ref[1:3]):
            shapes = shapes or (o, got)
    if len(own) < 2 or shapes is None:
        return None
    o, (a, b) = shapes
    dims = o.case.dims
    H, Tk = dims["H"], dims["Tk"]
    key, value = t("evidence.modern.diagnoses_mla.every_key"), t("evidence.modern.diagnoses_mla.every_value")
    heads = {(dims["B"], H, Tk, dims["d_nope"] + dims["d_rope"]): key, (dims["B"], H, Tk, dims["d_v"]): value,
             (dims["B"], Tk, H, dims["d_nope"] + dims["d_rope"]): key, (dims["B"], Tk, H, dims["d_v"]): value}
    what = [heads[s] for s in (a, b) if s in heads]
    said = t("evidence.modern.diagnoses_mla.heads_a_token", what=t("evidence.modern.diagnoses_mla.and").join(what),
             H=H) if what else ""
    return findings.make("mla-cache-expanded", t("evidence.modern.diagnoses_mla.per_head_cache",
                                                 symptom=symptom.evidence, n=len(own), a=a, b=b, said=said),
                         score=1.5)


SHAPE_CAUSES["mla"] = per_head_cache


# --- the latent, the layouts, RoPE --------------------------------------------------------------------------

@diagnosis("mla-latent-not-normalised", MLA)
def latent_not_normalised(check):
    return first(check, "mla-latent-not-normalised", [
        (MLAKnobs(latent="raw"), t("evidence.modern.diagnoses_mla.latent_raw")),
        (MLAKnobs(latent="twice"), t("evidence.modern.diagnoses_mla.latent_twice")),
        (MLAKnobs(latent="reread"), t("evidence.modern.diagnoses_mla.latent_reread"))])


@diagnosis("mla-kv-layout", MLA)
def kv_layout(check):
    return first(check, "mla-kv-layout", [
        (MLAKnobs(kv_b="blocked"), t("evidence.modern.diagnoses_mla.kv_b_blocked")),
        (MLAKnobs(q="blocked"), t("evidence.modern.diagnoses_mla.q_blocked")),
        (MLAKnobs(kv_a="swapped"), t("evidence.modern.diagnoses_mla.kv_a_swapped"))])


@diagnosis("mla-rope-misplaced", MLA)
def rope_misplaced(check):
    return first(check, "mla-rope-misplaced", [
        (MLAKnobs(rope=how), t(f"evidence.modern.diagnoses_mla.rope_{how}"))
        for how in ("nope", "nope_q", "whole", "whole_q", "whole_k", "no_k", "no_q")])


@diagnosis("rmsnorm-mean-subtracted", MLA)
def rmsnorm_mean(check):
    return first(check, "rmsnorm-mean-subtracted", [
        (MLAKnobs(norm="mean"), t("evidence.modern.diagnoses_llama.rmsnorm_mean")),
        (MLAKnobs(norm="var"), t("evidence.modern.diagnoses_llama.rmsnorm_var"))])


@diagnosis("rmsnorm-eps-misplaced", MLA)
def rmsnorm_eps(check):
    return first(check, "rmsnorm-eps-misplaced", [
        (MLAKnobs(norm="eps_outside"), t("evidence.modern.diagnoses_llama.eps_outside")),
        (MLAKnobs(norm="no_eps"), t("evidence.modern.diagnoses_llama.no_eps"))])


@diagnosis(("rope-interleaved", "rope-wrong-direction", "rope-positions-ignored"), MLA)
def rope(check):
    return first(check, "rope-interleaved", [
        (MLAKnobs(attn=Knobs(rope_pairs="interleaved")), t("evidence.modern.diagnoses_mla.rope_interleaved"))]) or \
        first(check, "rope-wrong-direction", [(MLAKnobs(attn=Knobs(rope_sign=-1)),
                                               t("evidence.modern.diagnoses_llama.rope_direction"))]) or \
        first(check, "rope-positions-ignored", [(MLAKnobs(attn=Knobs(rope_positions="arange")),
                                                 t("evidence.modern.diagnoses_mla.rope_positions"))])


@diagnosis("rope-wrong-frequencies", MLA)
def rope_frequencies(check):
    return first(check, "rope-wrong-frequencies", [
        (MLAKnobs(attn=Knobs(rope_freqs=how)),
         t("evidence.modern.diagnoses_llama.rope_frequencies", said=rope_fit.frequency_said(how)))
        for how in rope_fit.FREQUENCIES if how != "ok"] + [
        (MLAKnobs(rope_width="head"), t("evidence.modern.diagnoses_mla.rope_width_head")),
        (MLAKnobs(rope_width="nope"), t("evidence.modern.diagnoses_mla.rope_width_nope"))])


# --- the attention inside ----------------------------------------------------------------------------------

@diagnosis(("causal-diagonal", "missing-causal-mask", "causal-misaligned"), MLA)
def causal(check):
    return first(check, "missing-causal-mask", [
        (MLAKnobs(causal="none"), t("evidence.modern.diagnoses_llama.no_causal")),
        (MLAKnobs(causal="first-call"), t("evidence.modern.diagnoses_mla.causal_first_call"))]) or \
        first(check, "causal-misaligned", [(MLAKnobs(causal="top-left"),
                                            t("evidence.modern.diagnoses_mla.causal_top_left"))]) or \
        first(check, "causal-diagonal", [(MLAKnobs(causal="no-diagonal"),
                                          t("evidence.modern.diagnoses_mla.causal_no_diagonal")),
                                         (MLAKnobs(causal="one-future"),
                                          t("evidence.modern.diagnoses_mla.causal_one_future"))])


@diagnosis("softmax-wrong-dim", MLA)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(MLAKnobs(attn=Knobs(softmax_dim=-2)),
                                               t("evidence.modern.diagnoses_llama.softmax_queries"))])


@diagnosis(("missing-scale", "wrong-scale"), MLA)
def scale(check):
    """The one factor s for which MLA with scores * s reproduces the outputs, on every case."""
    return fitted_scale(check, lambda s: MLAKnobs(attn=Knobs(scale=s)))
