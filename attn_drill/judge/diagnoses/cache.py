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
from attn_drill.judge.probes import cache as cache_probes, rope as rope_fit
from attn_drill.judge import load
from attn_drill.judge.variants import cache as variants_cache
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import (LOCATORS, SHAPE_CAUSES, MATCH, RESHAPES, SCORES, diagnosis, first_outcome, fit_log, line_of, match,
                                        ran_and_differs,
                                        variant_finding)
from attn_drill.judge.variants.cache import SCALES, CacheKnobs, scale_of

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
    expected = f"expected {want:.4g} = 1/sqrt({dims['d']}) (d_model={dims['D']})"
    for rule, (said, _) in SCALES.items():
        value = scale_of(CacheKnobs(scale=rule), dims)
        if abs(value - s) <= 1e-3 * value:
            slug = "missing-scale" if rule == "1" else "wrong-scale"
            said = "1 (no scale)" if rule == "1" else f"{value:.4g} = {said}"
            f = variant_finding(check, slug, CacheKnobs(scale=rule), f"your effective scale is {said}, {expected}",
                                line)
            if f:
                return f
    return variant_finding(check, "wrong-scale", CacheKnobs(scale=s),
                           f"your effective scale is {s:.4g} (fitted), {expected}", line)


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
    line = line_of(first_outcome(check), SOFTMAX)
    for dim, fills, how in ((-2, ("-inf",), "softmax over the queries (dim=-2)"),
                            (1, ("-inf", "min", "bias"), "softmax over the heads (dim=1, also what softmax with no "
                                                          "dim= picks for 4-D scores)"),
                            (0, ("-inf", "min", "bias"), "softmax over the batch (dim=0)")):
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
    tries = [("no-diagonal", fill, "each token hidden from itself: new token i sees keys j < T_past + i, "
              "so the first token of a sequence sees nothing") for fill in ("-inf", "min", "bias", "zero")]
    tries.append(("one-future", "-inf", "each token also sees the next one: new token i sees keys j <= T_past + i + 1"))
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
            which = f"the first of {n} new tokens" if n > 1 else "the one new token"
            said = f"; e.g. after {past} cached tokens, {which} (position {past}) sees key 0 only, not keys 0..{past}"
        how = ("the causal mask aligned top-left: new token i sees keys j <= i, not j <= T_past + i"
               + (", in calls of more than one token (one new token sees every key)" if causal != "top-left" else "")
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
                           "heads merged with reshape(B, T, D) straight from (B, H, T, d); your cache is right, so "
                           "the split is too", line=line_of(first_outcome(check), RESHAPES, last=True))


@diagnosis("missing-output-projection", KV)
def missing_output_projection(check):
    if not cache_right(check):
        return None
    return variant_finding(check, "missing-output-projection", CacheKnobs(out_proj=False),
                           "the merged heads returned as they are, without W_o")


@diagnosis("kv-repeat-order", KV)
def kv_repeat_order(check):
    if not cache_right(check):
        return None
    dims = next((c.dims for c in check.cases if c.dims["H"] // c.dims["Hkv"] > 1 and c.dims["Hkv"] > 1), None)
    if dims is None:
        return None  # no case where the two orders differ: nothing to name
    H, Hkv = dims["H"], dims["Hkv"]
    tiled, want = [h % Hkv for h in range(H)], [h // (H // Hkv) for h in range(H)]
    how = (f"query head h reading kv head h % Hkv (k.repeat(1, H // Hkv, 1, 1)): with H={H}, Hkv={Hkv} the query "
           f"heads read kv heads {tiled}, expected {want}")
    return variant_finding(check, "kv-repeat-order", CacheKnobs(repeat="tile"), how,
                           line=line_of(first_outcome(check), {"repeat", "expand", "tile"}))


# --- the cache itself -----------------------------------------------------------------------------------

@diagnosis("wrong-head-split", KV)
def wrong_head_split(check):
    return variant_finding(check, "wrong-head-split", CacheKnobs(split="blocks"),
                           "heads cut as contiguous blocks: view(B, H, T, d) with no transpose (and the same for the "
                           "kv heads, so the cache is cut wrong too)", line=line_of(first_outcome(check), RESHAPES))


AXES = {0: "the batch axis", 1: "the kv-head axis", 2: "the time axis", 3: "the feature axis"}


@diagnosis("cache-wrong-axis", KV)
def cache_wrong_axis(check):
    joins, case = cache_probes.cache_joins(check)
    bad = [j for j in joins if j["dim"] != 2]
    if not bad:
        return None
    j = bad[0]
    shapes = " and ".join(str(s) for s in j["shapes"])
    where = f" at your line {j['line']}" if j["line"] else ""
    evidence = (f"torch.{j['name']} joined the given cache with the new tokens, {shapes}, along dim {j['dim']} "
                f"({AXES.get(j['dim'], 'another axis')}){where}; the cache grows along dim 2, time ({case.label})")
    raised = [o for o in check.outcomes if o.error is not None]
    if raised:
        evidence += (f"; your code raises on {len(raised)} of {len(check.outcomes)} cases, e.g. "
                     f"{load.describe(raised[0].error)}")
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
                           "RoPE on adjacent pairs (2i, 2i + 1) instead of (i, i + d/2)",
                           line=line_of(first_outcome(check), ROPE), extra=pairs_kept)


def pairs_kept(o) -> str | None:
    _, rot = rope_reading(o)
    if rot is not None and rot.layout == "interleaved" and rot.is_rotation:
        return ("in your cache each adjacent pair of key features keeps its length (it was turned), the pairs "
                "(i, i + d/2) do not")
    return None


@diagnosis("rope-wrong-direction", KV)
def rope_wrong_direction(check):
    if not keys_only_wrong(check):
        return None
    return variant_finding(check, "rope-wrong-direction", CacheKnobs(sign=-1), "RoPE turning by -theta",
                           line=line_of(first_outcome(check), ROPE), extra=turned_by)


def turned_by(o) -> str | None:
    case, rot = rope_reading(o)
    positions = cache_probes.positions(case).tolist() if case else []
    t = next((i for i, p in enumerate(positions) if p > 0), None)
    if rot is None or rot.layout != "half" or t is None:
        return None
    p = positions[t]
    a = float(torch.polar(torch.ones_like(rot.angles[..., t, 0]), rot.angles[..., t, 0]).sum().angle())
    return (f"your cached key at position {p} is turned by {a:+.3f} rad in pair 0 (which turns 1 rad per position), "
            f"expected {math.remainder(p, 2 * math.pi):+.3f}")


@diagnosis("rope-positions-ignored", KV)
def rope_positions_ignored(check):
    if not keys_only_wrong(check):
        return None
    return variant_finding(check, "rope-positions-ignored", CacheKnobs(positions="restart"),
                           "RoPE positions counted from 0 in every call instead of from T_past, the cache's length",
                           line=line_of(first_outcome(check), {"arange"}), extra=positions_seen)


def positions_seen(o) -> str | None:
    case, rot = rope_reading(o)
    if rot is None or rot.layout != "half":
        return None
    seen, want = cache_probes.turned_as(rot, case), cache_probes.positions(case).tolist()
    t = next((i for i, (s, w) in enumerate(zip(seen, want)) if s is not None and s != w), None)
    return None if t is None else f"in your cache the key of position {want[t]} is turned as position {seen[t]}"


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
            f = variant_finding(check, "rope-wrong-frequencies", CacheKnobs(freq=how), f"RoPE frequencies {said}",
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
    return (f"pair {i} of your cached keys turns {float(omega[i]):.4f} rad per position, expected "
            f"{float(want[i]):.4f} = {base:g} ** (-{2 * i}/{d})")


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
    evidence = (f"RoPE with the frequencies fitted to your cached keys reproduces your outputs on {matched} of "
                f"{len(check.outcomes)} cases, e.g. {example.case.label}")
    tail = frequency_evidence(example)
    if tail:
        evidence += "; " + tail
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
    return findings.make("cache-wrong-contents", f"call {i + 1} ({past} cached, {n} new; {o.case.label}) returns the "
                         f"right out, but the cache it returns holds {holds}", score=1.0)


def cache_holds(k, v, k_ref, v_ref, case) -> str:
    """What a returned cache holds instead of (k after RoPE, v), in words."""
    H, Hkv = case.dims["H"], case.dims["Hkv"]
    said = []
    if k.shape != k_ref.shape or v.shape != v_ref.shape:
        heads = " (the kv heads repeated for every query head)" if k.dim() == 4 and k.size(1) == H != Hkv else ""
        return f"k {tuple(k.shape)} and v {tuple(v.shape)}{heads}, not {tuple(k_ref.shape)} each"
    if cache_probes.same(k, v_ref) and cache_probes.same(v, k_ref):
        return "the values where the keys belong, and the keys where the values belong"
    if cache_probes.same(k, v_ref):
        said.append("the values in k's place")
    elif not cache_probes.same(k, k_ref):
        turned = rope_fit.rotate(k.double(), torch.arange(k.size(2)), case.config["rope_base"])
        said.append("the keys before RoPE (turning them at their positions gives the contract's k)"
                    if cache_probes.same(turned, k_ref) else "other numbers than the keys after RoPE in k")
    if not cache_probes.same(v, v_ref):
        said.append("other numbers than the values in v")
    return " and ".join(said) or "tensors of another layout"


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
    return findings.make("cache-wrong-contents", f"{symptom.evidence}: your cache is the contract's with each kv head "
                         f"repeated for its {o.case.dims['H'] // o.case.dims['Hkv']} query heads ({how} on dim 1), "
                         "kept after the repeat instead of before it", score=1.5)


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
                parts.append("the whole sequence in one call matches: the attention is right, the caching is not")
            continue
        steps_ref = check.spec.reference(o.case)[0]
        wrong = cache_probes.first_wrong_call(o.result, steps_ref)
        if wrong is None:
            continue
        i, out_ok, cache_ok = wrong
        _, n, past = cache_probes.calls_of(o.case)[i]
        said = {True: "matches", False: "differs"}
        parts.append(f"call {i + 1} ({past} cached, {n} new) goes wrong first: its out {said[out_ok]}, "
                     f"the cache it returns {said[cache_ok]}")
        given = cache_probes.replay(check, o.case, steps_ref)
        if given and all(given):
            parts.append("given the reference's cache at every call, all your outs match: the cache your calls "
                         "return is what goes wrong")
        elif given:
            parts.append(f"given the reference's cache, call {given.index(False) + 1}'s out still differs")
        break
    if cache_right(check) and explains(check, CacheKnobs(causal="none")):
        parts.append("the reference with no causal mask at all reproduces your outputs: every new token sees every "
                     "key, its own future included")
    if cache_probes.values_turned(check):
        parts.append("your cached values are turned like keys: RoPE applies to q and k only, never to v")
    return "; ".join(parts) if parts else "no call of a case could be compared"


LOCATORS["kv-cache"] = locate
