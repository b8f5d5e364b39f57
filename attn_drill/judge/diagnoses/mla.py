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
    c_kv, k_pe = (t.detach().double().cpu() for t in o.outputs[1:3])
    want = variants_mla.run(case.params, case.inputs["x"], case.config, case.dims["steps"],
                            None if own_cache(case) else (case.inputs["c_past"], case.inputs["pe_past"]))
    c_raw, pe_raw = raw_latent(case)
    said = []
    if c_kv.shape == want[1].shape and closeness(c_kv, want[1]) > MATCH:
        said.append("c_kv is the latent before kv_norm (W_kv_a's first kv_rank features as they come)"
                    if closeness(c_kv[:, past:], c_raw) <= MATCH else "c_kv holds other numbers than kv_norm's output")
    if k_pe.shape == want[2].shape and closeness(k_pe, want[2]) > MATCH:
        said.append("k_pe is the rope key before RoPE" if closeness(k_pe[:, past:], pe_raw) <= MATCH
                    else "k_pe holds other numbers than the rotated rope key")
    return "; ".join(said) or None


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
            return f"fed the reference's cache ({o.case.label}), your code raises {load.describe(o.error)}"
        err = closeness(o.outputs[0], ref[0])
        if err > MATCH:
            return f"fed the reference's cache ({o.case.label}), your out is off by {err:.2g} (relative L2)"
    return ""


@diagnosis("mla-cache-expanded", MLA)
def cache_expanded(check):
    """The known forms by their variants; any other cache that only the file itself can read, from the outputs."""
    found = first(check, "mla-cache-expanded", [
        (MLAKnobs(cache="raw"), "the cache holds the latent before kv_norm, normalised again where it is read"),
        (MLAKnobs(cache="unrotated"), "the cache holds the rope key before RoPE, turned where it is read")])
    if found:
        return found
    own = outputs_right_on_own_cache(check)
    held = next(filter(None, (cache_holds(o) for o in own)), None)
    if not own or held is None:
        return None
    evidence = (f"your out is right on each of the {len(own)} cases that feed your own cache back, but the cache you "
                f"return is not the contract's: {held} ({own[0].case.label})")
    tail = given_cache_evidence(check)
    return findings.make("mla-cache-expanded", evidence + (f"; {tail}" if tail else ""), score=0.95)


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
        got = tuple(tuple(t.shape) for t in o.outputs[1:3])
        if got != tuple(tuple(t.shape) for t in ref[1:3]):
            shapes = shapes or (o, got)
    if len(own) < 2 or shapes is None:
        return None
    o, (a, b) = shapes
    dims = o.case.dims
    H, Tk = dims["H"], dims["Tk"]
    heads = {(dims["B"], H, Tk, dims["d_nope"] + dims["d_rope"]): "every head's key", (dims["B"], H, Tk, dims["d_v"]):
             "every head's value", (dims["B"], Tk, H, dims["d_nope"] + dims["d_rope"]): "every head's key",
             (dims["B"], Tk, H, dims["d_v"]): "every head's value"}
    what = [heads[s] for s in (a, b) if s in heads]
    said = f" ({' and '.join(what)}, {H} heads a token)" if what else ""
    return findings.make("mla-cache-expanded", f"{symptom.evidence}: your out is right on each of the {len(own)} "
                         f"cases that feed your own cache back, but the cache you return is {a} and {b}{said}, not "
                         f"the latent and the rope key", score=1.5)


SHAPE_CAUSES["mla"] = per_head_cache


# --- the latent, the layouts, RoPE --------------------------------------------------------------------------

@diagnosis("mla-latent-not-normalised", MLA)
def latent_not_normalised(check):
    return first(check, "mla-latent-not-normalised", [
        (MLAKnobs(latent="raw"), "kv_norm skipped: W_kv_b rebuilds the keys and values from the raw latent"),
        (MLAKnobs(latent="twice"), "kv_norm applied twice to the latent"),
        (MLAKnobs(latent="reread"), "kv_norm applied again to the cached latent where it is read (the cache holds it "
         "normalised already)")])


@diagnosis("mla-kv-layout", MLA)
def kv_layout(check):
    return first(check, "mla-kv-layout", [
        (MLAKnobs(kv_b="blocked"), "W_kv_b's output read as [all heads' k_nope | all heads' v], not [k_nope | v] "
         "per head"),
        (MLAKnobs(q="blocked"), "W_q's output read as [all heads' q_nope | all heads' q_pe], not [q_nope | q_pe] "
         "per head"),
        (MLAKnobs(kv_a="swapped"), "W_kv_a's output read as [k_pe | c_kv], not [c_kv | k_pe]")])


@diagnosis("mla-rope-misplaced", MLA)
def rope_misplaced(check):
    return first(check, "mla-rope-misplaced", [
        (MLAKnobs(rope="nope"), "RoPE on q_nope and k_nope instead of q_pe and k_pe"),
        (MLAKnobs(rope="nope_q"), "RoPE on q_nope instead of q_pe (the rope key turned as it should be)"),
        (MLAKnobs(rope="whole"), "RoPE on every feature of each head's q and k ([nope | pe] turned as one vector)"),
        (MLAKnobs(rope="whole_q"), "RoPE on every feature of each query head ([q_nope | q_pe] turned as one vector)"),
        (MLAKnobs(rope="whole_k"), "RoPE on every feature of each head's key ([k_nope | k_pe] turned as one vector)"),
        (MLAKnobs(rope="no_k"), "RoPE on q_pe only: the rope key k_pe is never turned"),
        (MLAKnobs(rope="no_q"), "RoPE on k_pe only: q_pe is never turned")])


@diagnosis("rmsnorm-mean-subtracted", MLA)
def rmsnorm_mean(check):
    return first(check, "rmsnorm-mean-subtracted", [
        (MLAKnobs(norm="mean"), "RMSNorm with the mean subtracted first, as LayerNorm does"),
        (MLAKnobs(norm="var"), "x / sqrt(var(x) + eps): the variance (centred) in place of the mean square")])


@diagnosis("rmsnorm-eps-misplaced", MLA)
def rmsnorm_eps(check):
    return first(check, "rmsnorm-eps-misplaced", [
        (MLAKnobs(norm="eps_outside"), "x / (sqrt(mean(x^2)) + eps): eps added outside the square root"),
        (MLAKnobs(norm="no_eps"), "x / sqrt(mean(x^2)): no eps at all")])


@diagnosis(("rope-interleaved", "rope-wrong-direction", "rope-positions-ignored"), MLA)
def rope(check):
    return first(check, "rope-interleaved", [
        (MLAKnobs(attn=Knobs(rope_pairs="interleaved")),
         "RoPE on adjacent pairs (2i, 2i + 1) of q_pe and k_pe, DeepSeek's official layout (another project's "
         "convention)")]) or \
        first(check, "rope-wrong-direction", [(MLAKnobs(attn=Knobs(rope_sign=-1)), "RoPE turning by -theta")]) or \
        first(check, "rope-positions-ignored", [(MLAKnobs(attn=Knobs(rope_positions="arange")),
                                                 "RoPE at positions 0 .. T_new-1 in every call, not after the cache")])


@diagnosis("rope-wrong-frequencies", MLA)
def rope_frequencies(check):
    return first(check, "rope-wrong-frequencies", [
        (MLAKnobs(attn=Knobs(rope_freqs=how)), f"RoPE's angle per pair {said}")
        for how, (said, _) in rope_fit.FREQUENCIES.items() if how != "ok"] + [
        (MLAKnobs(rope_width="head"), "RoPE's angle per pair base ** (-2i/(d_nope + d_rope)): the whole head's width "
         "in the exponent, where q_pe and k_pe are d_rope wide"),
        (MLAKnobs(rope_width="nope"), "RoPE's angle per pair base ** (-2i/d_nope): d_nope in the exponent, where q_pe "
         "and k_pe are d_rope wide")])


# --- the attention inside ----------------------------------------------------------------------------------

@diagnosis(("causal-diagonal", "missing-causal-mask", "causal-misaligned"), MLA)
def causal(check):
    return first(check, "missing-causal-mask", [
        (MLAKnobs(causal="none"), "no causal mask: every token sees the later ones"),
        (MLAKnobs(causal="first-call"), "a causal mask only on a call without a cache: a chunk of several tokens "
         "after the cache sees its own later tokens")]) or \
        first(check, "causal-misaligned", [(MLAKnobs(causal="top-left"), "a causal mask aligned top-left, "
                                            "tril() of (T_new, Tk): new token i sees keys j <= i, as if the cache "
                                            "were not there")]) or \
        first(check, "causal-diagonal", [(MLAKnobs(causal="no-diagonal"), "a causal mask that hides the query's "
                                          "own key (j < T_past + i)"),
                                         (MLAKnobs(causal="one-future"), "a causal mask that shows one later key "
                                          "(j <= T_past + i + 1)")])


@diagnosis("softmax-wrong-dim", MLA)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(MLAKnobs(attn=Knobs(softmax_dim=-2)),
                                               "the softmax over the queries (dim=-2)")])


@diagnosis(("missing-scale", "wrong-scale"), MLA)
def scale(check):
    """The one factor s for which MLA with scores * s reproduces the outputs, on every case."""
    return fitted_scale(check, lambda s: MLAKnobs(attn=Knobs(scale=s)))
