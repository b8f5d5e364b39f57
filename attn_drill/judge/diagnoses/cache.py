"""kv-cache mistakes. Each is named by a variant of cached attention (variants/cache.py) that reproduces the user's
outputs and returned cache on every case, or all but one; the evidence adds what the cache itself shows
(probes/cache.py): the axis it was joined on, the positions and angles its keys are turned by.

Which diagnoses are worth trying follows from the cache: mistakes inside attention (scale, softmax, causal
mask, merge, W_o, kv-head order) leave it right; RoPE mistakes change its keys and not its values.
"""

from __future__ import annotations

import math

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge.probes import cache as cache_probes, rope as rope_fit
from attn_drill.judge import load
from attn_drill.judge.variants import cache as variants_cache
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import (LOCATORS, SHAPE_CAUSES, MATCH, RESHAPES, SCORES, diagnosis, first_outcome,
                                        fit_log, line_of, match, ran_and_differs, variant_finding)
from attn_drill.judge.variants.cache import SCALES, CacheKnobs, scale_of, scale_said

KV = ("kv-cache",)
SOFTMAX = {"softmax", "_softmax", "exp"}
TRIANGLES = {"tril", "triu", "tril_", "triu_"}
ROPE = {"cos", "sin", "polar", "view_as_complex"}
FREQS = {"pow", "__pow__", "__rpow__", "float_power", "exp"}


def causal_line(check) -> int | None:
    """The user's line that builds the triangle, else the one that applies a mask."""
    o = first_outcome(check)
    return line_of(o, TRIANGLES) or line_of(o, {"masked_fill", "masked_fill_", "where", "le", "ge", "lt", "gt",
                                                "__le__", "__ge__", "__lt__", "__gt__"})


def cache_state(check) -> tuple[int, int, int]:
    """(cases whose returned k is right, whose v is right, of how many)."""
    k_ok = v_ok = 0
    for o, ref in zip(check.outcomes, check.refs):
        if o.outputs is not None:
            k_ok += closeness(o.outputs[1], ref[1]) <= MATCH
            v_ok += closeness(o.outputs[2], ref[2]) <= MATCH
    return k_ok, v_ok, len(check.outcomes)


def cache_right(check) -> bool:
    k_ok, v_ok, n = cache_state(check)
    return min(k_ok, v_ok) >= n - 1


def keys_only_wrong(check) -> bool:
    k_ok, v_ok, n = cache_state(check)
    return v_ok >= n - 1 and k_ok < n


def explains(check, knobs: CacheKnobs) -> bool:
    """The variant reproduces every case, or all but one, and some case tells it from the reference."""
    matched, telling, _, example, _ = match(check, knobs)
    return telling > 0 and example is not None and matched >= len(check.outcomes) - 1


# --- inside attention: the cache is right -----------------------------------------------------------------

@diagnosis(("missing-scale", "wrong-scale"), KV)
def scale(check):
    """Fit the factor on the scores that reproduces the one-call case; name it; confirm it on every case."""
    if not cache_right(check):
        return None
    fitted = fit_scale(check)
    if fitted is None:
        return None
    s, dims = fitted
    want = scale_of(CacheKnobs(), dims)
    if abs(s - want) <= 1e-3 * want:
        return None
    line = line_of(first_outcome(check), SCORES)
    expected = t("evidence.cache.diagnoses_cache.scale_expected", want=want, d=dims['d'], D=dims['D'])
    for rule in SCALES:
        value = scale_of(CacheKnobs(scale=rule), dims)
        if abs(value - s) <= 1e-3 * value:
            slug = "missing-scale" if rule == "1" else "wrong-scale"
            said = (scale_said(rule) if rule == "1" else
                    t("evidence.cache.diagnoses_cache.scale_value", value=value, said=scale_said(rule)))
            f = variant_finding(check, slug, CacheKnobs(scale=rule),
                                t("evidence.cache.diagnoses_cache.effective_scale", said=said, expected=expected),
                                line)
            if f:
                return f
    return variant_finding(check, "wrong-scale", CacheKnobs(scale=s),
                           t("evidence.cache.diagnoses_cache.effective_scale_fitted", s=s, expected=expected), line)


def fit_scale(check) -> tuple[float, dict] | None:
    """(s, the case's dims): the factor on the scores that best reproduces the user's out on the one-call case;
    None when no factor reproduces it."""
    o = next((o for o in check.outcomes if o.outputs is not None and len(o.case.dims["steps"]) == 1
              and not o.case.dims["T_past"]), None)
    if o is None:
        return None
    c = o.case
    q, k, v = variants_cache.project(c.params, c.dims, c.config["rope_base"], c.inputs["x"], 0)  # once: s comes after

    s, err = fit_log(lambda s: closeness(variants_cache.finish(c.params, c.dims, q, k, v, scale=s), o.outputs[0]))
    return (s, o.case.dims) if err <= MATCH else None


@diagnosis("softmax-wrong-dim", KV)
def softmax_wrong_dim(check):
    if not cache_right(check):
        return None
    line = line_of(first_outcome(check), SOFTMAX, last=True)  # the attention's: RoPE's frequencies may call exp first
    for dim, fills, how in ((-2, ("-inf",), t("evidence.cache.diagnoses_cache.softmax_over_queries")),
                            (1, ("-inf", "min", "bias"), t("evidence.cache.diagnoses_cache.softmax_over_heads")),
                            (0, ("-inf", "min", "bias"), t("evidence.cache.diagnoses_cache.softmax_over_batch"))):
        for fill in fills:
            f = variant_finding(check, "softmax-wrong-dim", CacheKnobs(softmax_dim=dim, fill=fill), how, line=line)
            if f:
                return f
    return None


@diagnosis("causal-diagonal", KV)
def causal_diagonal(check):
    if not cache_right(check):
        return None
    line = causal_line(check)
    tries = [("no-diagonal", fill, t("evidence.cache.diagnoses_cache.no_diagonal"))
             for fill in ("-inf", "min", "bias", "zero")]
    tries.append(("one-future", "-inf", t("evidence.cache.diagnoses_cache.one_future")))
    for causal, fill, how in tries:
        f = variant_finding(check, "causal-diagonal", CacheKnobs(causal=causal, fill=fill), how, line=line)
        if f:
            return f
    return None


@diagnosis("causal-misaligned", KV)
def causal_misaligned(check):
    if not cache_right(check):
        return None
    line = causal_line(check)
    for causal, cond in (("top-left", lambda n: True), ("top-left-chunks", lambda n: n > 1)):
        example = next(((c, n, past) for c in check.cases for _, n, past in cache_probes.calls_of(c)
                        if past > 0 and cond(n)), None)
        said = ""
        if example:
            c, n, past = example
            which = (t("evidence.cache.diagnoses_cache.first_of_new", n=n) if n > 1
                     else t("evidence.cache.diagnoses_cache.one_new"))
            said = t("evidence.cache.diagnoses_cache.top_left_example", past=past, which=which)
        how = (t("evidence.cache.diagnoses_cache.top_left")
               + (t("evidence.cache.diagnoses_cache.top_left_chunks") if causal != "top-left" else "")
               + said)
        f = variant_finding(check, "causal-misaligned", CacheKnobs(causal=causal), how, line=line)
        if f:
            return f
    return None


@diagnosis("wrong-head-merge", KV)
def wrong_head_merge(check):
    if not cache_right(check):
        return None
    return variant_finding(check, "wrong-head-merge", CacheKnobs(merge="blocks"),
                           t("evidence.cache.diagnoses_cache.merge_blocks"),
                           line=line_of(first_outcome(check), RESHAPES, last=True))


@diagnosis("missing-output-projection", KV)
def missing_output_projection(check):
    if not cache_right(check):
        return None
    return variant_finding(check, "missing-output-projection", CacheKnobs(out_proj=False),
                           t("evidence.cache.diagnoses_cache.no_output_projection"))


@diagnosis("kv-repeat-order", KV)
def kv_repeat_order(check):
    if not cache_right(check):
        return None
    dims = next((c.dims for c in check.cases if c.dims["H"] // c.dims["Hkv"] > 1 and c.dims["Hkv"] > 1), None)
    if dims is None:
        return None  # no case where the two orders differ: nothing to name
    H, Hkv = dims["H"], dims["Hkv"]
    tiled, want = [h % Hkv for h in range(H)], [h // (H // Hkv) for h in range(H)]
    how = t("evidence.cache.diagnoses_cache.repeat_tiled", H=H, Hkv=Hkv, tiled=tiled, want=want)
    return variant_finding(check, "kv-repeat-order", CacheKnobs(repeat="tile"), how,
                           line=line_of(first_outcome(check), {"repeat", "expand", "tile"}))


# --- the cache itself -----------------------------------------------------------------------------------

@diagnosis("wrong-head-split", KV)
def wrong_head_split(check):
    return variant_finding(check, "wrong-head-split", CacheKnobs(split="blocks"),
                           t("evidence.cache.diagnoses_cache.split_blocks"),
                           line=line_of(first_outcome(check), RESHAPES))


def axis_said(dim) -> str:
    """The cache's axis `dim`, in words."""
    return {0: t("evidence.cache.diagnoses_cache.axis_batch"), 1: t("evidence.cache.diagnoses_cache.axis_kv_head"),
            2: t("evidence.cache.diagnoses_cache.axis_time"), 3: t("evidence.cache.diagnoses_cache.axis_feature")
            }.get(dim, t("evidence.cache.diagnoses_cache.axis_other"))


@diagnosis("cache-wrong-axis", KV)
def cache_wrong_axis(check):
    joins, case = cache_probes.cache_joins(check)
    bad = [j for j in joins if j["dim"] != 2]
    if not bad:
        return None
    j = bad[0]
    shapes = t("finding.and").join(str(s) for s in j["shapes"])
    where = t("evidence.cache.diagnoses_cache.at_line", line=j['line']) if j["line"] else ""
    evidence = t("evidence.cache.diagnoses_cache.wrong_axis", name=j['name'], shapes=shapes, dim=j['dim'],
                 axis=axis_said(j['dim']), where=where, case=case.label)
    raised = [o for o in check.outcomes if o.error is not None]
    if raised:
        evidence += t("evidence.cache.diagnoses_cache.raises_on", raised=len(raised), n=len(check.outcomes),
                      error=load.describe(raised[0].error))
    return findings.make("cache-wrong-axis", evidence, line=j["line"], score=1.0)


# --- RoPE: the keys in the cache are turned wrong, the values are right ----------------------------------

def rope_reading(o):
    """(case, rotation of its cached keys) for a finding's example, or (case, None)."""
    return (o.case, cache_probes.key_rotation(o)) if o is not None else (None, None)


@diagnosis("rope-interleaved", KV)
def rope_interleaved(check):
    if not keys_only_wrong(check):
        return None
    return variant_finding(check, "rope-interleaved", CacheKnobs(pairs="adjacent"),
                           t("evidence.cache.diagnoses_cache.adjacent_pairs"),
                           line=line_of(first_outcome(check), ROPE), extra=pairs_kept)


def pairs_kept(o) -> str | None:
    _, rot = rope_reading(o)
    if rot is not None and rot.layout == "interleaved" and rot.is_rotation:
        return t("evidence.cache.diagnoses_cache.pairs_kept")
    return None


@diagnosis("rope-wrong-direction", KV)
def rope_wrong_direction(check):
    if not keys_only_wrong(check):
        return None
    return variant_finding(check, "rope-wrong-direction", CacheKnobs(sign=-1),
                           t("evidence.cache.diagnoses_cache.minus_theta"),
                           line=line_of(first_outcome(check), ROPE), extra=turned_by)


def turned_by(o) -> str | None:
    case, rot = rope_reading(o)
    positions = cache_probes.positions(case).tolist() if case else []
    tok = next((i for i, p in enumerate(positions) if p > 0), None)
    if rot is None or rot.layout != "half" or tok is None:
        return None
    p = positions[tok]
    a = float(torch.polar(torch.ones_like(rot.angles[..., tok, 0]), rot.angles[..., tok, 0]).sum().angle())
    return t("evidence.cache.diagnoses_cache.turned_by", p=p, a=a, want=math.remainder(p, 2 * math.pi))


@diagnosis("rope-positions-ignored", KV)
def rope_positions_ignored(check):
    if not keys_only_wrong(check):
        return None
    return variant_finding(check, "rope-positions-ignored", CacheKnobs(positions="restart"),
                           t("evidence.cache.diagnoses_cache.positions_restart"),
                           line=line_of(first_outcome(check), {"arange"}), extra=positions_seen)


def positions_seen(o) -> str | None:
    case, rot = rope_reading(o)
    if rot is None or rot.layout != "half":
        return None
    seen, want = cache_probes.turned_as(rot, case), cache_probes.positions(case).tolist()
    tok = next((i for i, (s, w) in enumerate(zip(seen, want)) if s is not None and s != w), None)
    return None if tok is None else t("evidence.cache.diagnoses_cache.turned_as", want=want[tok], seen=seen[tok])


@diagnosis("rope-wrong-frequencies", KV)
def rope_wrong_frequencies(check):
    """The cached keys turn at per-pair frequencies other than base ** (-2i/d): name the formula when it is one
    people write, else confirm the fitted frequencies themselves."""
    if not keys_only_wrong(check):
        return None
    reading = next((r for r in map(key_frequencies, check.outcomes) if r and differs(r[1], r[2])), None)
    if reading is None:
        return None
    case, omega, _ = reading
    line = line_of(first_outcome(check), FREQS)
    d, base = case.dims["d"], case.config["rope_base"]
    for how, (said, _) in rope_fit.FREQUENCIES.items():
        if how != "ok" and not differs(omega, rope_fit.frequencies(d, base, how), sign=False):
            f = variant_finding(check, "rope-wrong-frequencies", CacheKnobs(freq=how),
                                t("evidence.cache.diagnoses_cache.frequencies", said=rope_fit.frequency_said(how)),
                                line=line, extra=frequency_evidence)
            if f:
                return f
    return fitted_frequencies(check, line)


def key_frequencies(o):
    """(case, fitted, wanted): each pair's radians per position in the user's cached keys (half-split pairs, at the
    tokens' absolute positions) and the contract's; None when the keys are not turned that way."""
    case, rot = rope_reading(o)
    if rot is None or rot.layout != "half" or not rot.is_rotation:
        return None
    omega, misfit = rope_fit.fit_frequencies(rot, cache_probes.positions(case))
    if float(misfit.max()) > rope_fit.ANGLE_TOL:
        return None
    return case, omega, rope_fit.frequencies(case.dims["d"], case.config["rope_base"])


def differs(omega, want, sign: bool = True) -> bool:
    """Frequencies other than want (modulo 2 pi: integer positions cannot tell), nor -want (that is the direction)."""
    off = float(rope_fit.wrap(omega - want).abs().max()) > rope_fit.ANGLE_TOL
    return off and (not sign or float(rope_fit.wrap(omega + want).abs().max()) > rope_fit.ANGLE_TOL)


def frequency_evidence(o) -> str | None:
    """'pair i of your cached keys turns w rad per position, expected w0' for the pair that differs most."""
    reading = key_frequencies(o) if o is not None else None
    if reading is None:
        return None
    case, omega, want = reading
    d, base = case.dims["d"], case.config["rope_base"]
    i = int(rope_fit.wrap(omega - want).abs().argmax())
    return t("evidence.cache.diagnoses_cache.pair_turns", i=i, got=float(omega[i]), want=float(want[i]), base=base,
             two_i=2 * i, d=d)


def fitted_frequencies(check, line):
    """No formula we know of: the frequencies fitted to the cached keys, case by case, and nothing else changed,
    must reproduce the user's outputs."""
    matched, example = 0, None
    for o in check.outcomes:
        reading = key_frequencies(o)
        if reading is None:
            continue
        case, omega, want = reading
        var = check.spec.variant(case, CacheKnobs(inv_freq=tuple(omega.tolist())))
        if max(closeness(a, b) for a, b in zip(o.outputs, var)) > MATCH:
            continue
        matched += 1
        if example is None and differs(omega, want):
            example = o
    if example is None or matched < len(check.outcomes) - 1:
        return None
    evidence = t("evidence.cache.diagnoses_cache.fitted_frequencies", matched=matched, n=len(check.outcomes),
                 case=example.case.label)
    tail = frequency_evidence(example)
    if tail:
        evidence += t("evidence.cache.diagnoses_cache.sep") + tail
    return findings.make("rope-wrong-frequencies", evidence, line=line, score=matched / len(check.outcomes) - 0.01)


# --- the cache returned: right outputs, the wrong tensors kept --------------------------------------------

@diagnosis("cache-wrong-contents", KV)
def cache_wrong_contents(check):
    """On every case that goes wrong, the first call that does returns the right out and a cache that is not the
    contract's: the cache, not the attention, is the mistake. What it holds instead is said when it is known."""
    from attn_drill.judge.specs.kv_cache import Steps

    first = None
    for o, ref in zip(check.outcomes, check.refs):
        if o.outputs is not None and not ran_and_differs(o, ref):
            continue
        if o.outputs is None and "k_past" in o.case.inputs:
            continue  # it raised reading the checker's cache (the contract's): a cache of another shape of its own
        if o.outputs is None or not isinstance(o.result, Steps):
            return None
        steps_ref = check.spec.reference(o.case)[0]
        wrong = cache_probes.first_wrong_call(o.result, steps_ref)
        if wrong is None:
            return None
        if not wrong[1]:  # an out differs first: the attention itself, unless that call read the checker's cache
            if wrong[0] == 0 and "k_past" in o.case.inputs:  # (the contract's, which a cache of another kind
                continue  # misreads: the same mistake, seen from the other side)
            return None
        if wrong[2]:
            return None
        first = first or (o, wrong[0], steps_ref)
    if first is None:
        return None
    o, i, steps_ref = first
    _, n, past = cache_probes.calls_of(o.case)[i]
    (k, v), (k_ref, v_ref) = o.result[i][1], steps_ref[i][1]
    holds = cache_holds(k, v, k_ref, v_ref, o.case)
    return findings.make("cache-wrong-contents", t("evidence.cache.diagnoses_cache.call_holds", call=i + 1, past=past,
                                                   n=n, case=o.case.label, holds=holds), score=1.0)


def cache_holds(k, v, k_ref, v_ref, case) -> str:
    """What a returned cache holds instead of (k after RoPE, v), in words."""
    H, Hkv = case.dims["H"], case.dims["Hkv"]
    said = []
    if k.shape != k_ref.shape or v.shape != v_ref.shape:
        heads = (t("evidence.cache.diagnoses_cache.heads_repeated") if k.dim() == 4 and k.size(1) == H != Hkv
                 else "")
        return t("evidence.cache.diagnoses_cache.holds_shapes", k=tuple(k.shape), v=tuple(v.shape), heads=heads,
                 want=tuple(k_ref.shape))
    if cache_probes.same(k, v_ref) and cache_probes.same(v, k_ref):
        return t("evidence.cache.diagnoses_cache.holds_swapped")
    if cache_probes.same(k, v_ref):
        said.append(t("evidence.cache.diagnoses_cache.holds_values_in_k"))
    elif not cache_probes.same(k, k_ref):
        turned = rope_fit.rotate(k.double(), torch.arange(k.size(2)), case.config["rope_base"])
        said.append(t("evidence.cache.diagnoses_cache.holds_keys_before_rope")
                    if cache_probes.same(turned, k_ref) else t("evidence.cache.diagnoses_cache.holds_other_k"))
    if not cache_probes.same(v, v_ref):
        said.append(t("evidence.cache.diagnoses_cache.holds_other_v"))
    return t("finding.and").join(said) or t("evidence.cache.diagnoses_cache.holds_other_layout")


def repeated_cache(check, symptom):
    """The shapes stage's wrong k_cache or v_cache, when it is the contract's cache with its kv heads repeated for
    every query head (GQA's saving given away): cache-wrong-contents, the shape its evidence."""
    from attn_drill.judge.specs.kv_cache import Steps

    shown = None
    for o in check.outcomes:
        if o.outputs is None or not isinstance(o.result, Steps):
            continue
        H, Hkv = o.case.dims["H"], o.case.dims["Hkv"]
        k, v = o.result[-1][1]
        k_ref, v_ref = check.spec.reference(o.case)[0][-1][1]
        if k.shape == k_ref.shape and v.shape == v_ref.shape:
            continue
        g = H // Hkv
        how = next((how for how, f in (("repeat_interleave", lambda t: t.repeat_interleave(g, 1)),
                                       ("repeat", lambda t: t.repeat(1, g, 1, 1)))
                    if cache_probes.same(k, f(k_ref)) and cache_probes.same(v, f(v_ref))), None)
        if how is None:
            return None
        shown = shown or (o, how)
    if shown is None:
        return None
    o, how = shown
    return findings.make("cache-wrong-contents", t("evidence.cache.diagnoses_cache.cache_repeated",
                                                   symptom=symptom.evidence, g=o.case.dims['H'] // o.case.dims['Hkv'],
                                                   how=how), score=1.5)


SHAPE_CAUSES["kv-cache"] = repeated_cache


# --- no known mistake: say where it goes wrong -----------------------------------------------------------

def locate(check) -> str:
    """Which call goes wrong first, whether it still does given the reference's cache, and what the numbers say
    about two mistakes with no slug of their own (no causal mask at all, RoPE on the values)."""
    from attn_drill.judge.specs.kv_cache import Steps

    parts = []
    for o, ref in zip(check.outcomes, check.refs):
        if o.outputs is None or not isinstance(o.result, Steps):
            continue
        if all(closeness(a, b) <= MATCH for a, b in zip(o.outputs, ref)):
            if len(o.case.dims["steps"]) == 1 and not o.case.dims["T_past"]:
                parts.append(t("evidence.cache.diagnoses_cache.one_call_matches"))
            continue
        steps_ref = check.spec.reference(o.case)[0]
        wrong = cache_probes.first_wrong_call(o.result, steps_ref)
        if wrong is None:
            continue
        i, out_ok, cache_ok = wrong
        _, n, past = cache_probes.calls_of(o.case)[i]
        said = {True: t("evidence.cache.diagnoses_cache.matches"), False: t("evidence.cache.diagnoses_cache.differs")}
        parts.append(t("evidence.cache.diagnoses_cache.first_wrong_call", call=i + 1, past=past, n=n,
                       out=said[out_ok], cache=said[cache_ok]))
        given = cache_probes.replay(check, o.case, steps_ref)
        if given and all(given):
            parts.append(t("evidence.cache.diagnoses_cache.replay_all_match"))
        elif given:
            parts.append(t("evidence.cache.diagnoses_cache.replay_differs", call=given.index(False) + 1))
        break
    if cache_right(check) and explains(check, CacheKnobs(causal="none")):
        parts.append(t("evidence.cache.diagnoses_cache.no_causal_mask"))
    if cache_probes.values_turned(check):
        parts.append(t("evidence.cache.diagnoses_cache.values_turned"))
    return (t("evidence.cache.diagnoses_cache.sep").join(parts) if parts
            else t("evidence.cache.diagnoses_cache.nothing_compared"))


LOCATORS["kv-cache"] = locate
