"""Name the mistake: one small function per diagnosis, registered with @diagnosis(slugs, exercises).

Each diagnosis looks at what the user's code did on the check's cases (outputs, exceptions, traced calls)
and returns a finding with evidence, or None. Variants of the reference that reproduce the user's outputs
are the main evidence; probes (the effective scale, hooks on the projections) add to it.

The diagnoses live by family in this package; the import at the bottom registers them, in the order they
run (the findings are then sorted by level and score, ties keeping that order).
"""

from __future__ import annotations

import importlib
import math
from typing import Callable

from attn_drill import findings
from attn_drill.judge import localise, pictures
from attn_drill.judge.compare import closeness
from attn_drill.i18n import t
from attn_drill.report import Finding

REGISTRY: list[tuple[tuple[str, ...], tuple[str, ...] | None, Callable]] = []


def diagnosis(slugs: str | tuple[str, ...], exercises: tuple[str, ...] | None):
    """Register a diagnosis that names one of `slugs` (one slug, or a tuple of them) for these exercises
    (None: every exercise). tests/test_diagnoses_registry.py holds the slugs to the wording and the corpus."""
    def register(fn):
        REGISTRY.append(((slugs,) if isinstance(slugs, str) else tuple(slugs), exercises, fn))
        return fn
    return register


SYMPTOMS = ("exception", "nan-output")  # what a mistake does on some cases, not what the mistake is


def diagnose(check) -> list[Finding]:
    """Every diagnosis that applies to this exercise, run on a failed values stage. A cause outranks its symptom:
    a known mistake that reproduces every case (the ones that raised or gave NaN included) is the one error, the
    exception or NaN its evidence."""
    out = []
    for _, exercises, fn in REGISTRY:
        if exercises is None or check.spec.id in exercises:
            found = contained(fn, check, out)
            if isinstance(found, list):  # two mistakes at once: both findings
                out += found
            elif found:
                out.append(found)
    from attn_drill.judge.diagnoses import pairs

    causes = [f for f in out if f.level == "error" and f.slug not in SYMPTOMS and f.score >= 0.9]
    if not causes:  # no single mistake explains it: two at once?
        causes = contained(pairs.pair, check, out) or []
        out += causes
    elif check.spec.id in pairs.LAYERS:  # a mistake found inside a sub-layer may not be the layer's only one
        out += contained(pairs.second, check, out, max(causes, key=lambda f: f.score)) or []
    departed = False  # the cause was seen only on the cases where the code runs
    if not causes and any(f.slug in SYMPTOMS for f in out):  # only a symptom: where the code runs, a cause?
        found = contained(departure_cause, check, out)
        causes, departed = ([found], True) if found else ([], False)
        out += causes
    symptoms = [f for f in out if f.slug in SYMPTOMS]
    if causes and symptoms:
        cause = max(causes, key=lambda f: f.score)
        for f in symptoms:
            out.remove(f)
            # a variant that reproduces the cases that raised explains them; a departure seen where the code runs
            # explains them only when they raise at the departing line (else it is another mistake, said as one)
            same = not departed or (f.line is not None and f.line == cause.line)
            said = "evidence.attention.diagnoses." + ("same_mistake" if same else "also") + (
                "_raises" if f.slug == "exception" else "_nan")
            sep = t("evidence.attention.diagnoses.symptom_sep")  # what follows the exception's text (generic.py)
            if f.evidence.split(sep, 1)[0].rstrip(" ，") not in cause.evidence:  # not said already (raises_too)
                cause.evidence += t(said, evidence=f.evidence)
        cause.score = max(cause.score, 1.0)
    if not any(f.level == "error" and f.score >= 0.5 for f in out):
        out.append(values_mismatch(check, out))
    else:
        contained(line_from_departure, check, out, out)
    return [findings.in_exercise(f, check.spec.id) for f in out]


# the kind of step where each mistake makes its first wrong tensor, where that is one kind (None: any kind)
STEP_OF = {"missing-output-projection": "output projection", "wrong-projection": "projection",
           # (the scores too, a factor off, when the code scales the queries before the product)
           "softmax-wrong-dim": "softmax", "missing-scale": ("scale", "scores"), "wrong-scale": ("scale", "scores"),
           "wrong-head-split": "head split", "wrong-head-merge": "merge", "kv-repeat-order": "kv repeat",
           **{slug: "mask" for slug in ("mask-inverted", "mask-fill-zero", "causal-diagonal", "padding-off-by-one",
                                        "mask-head-broadcast")},
           # (or the positions the causal mask compares, where the spec keeps them as steps: flash's block keys)
           "causal-misaligned": ("mask", "causal mask", "positions"),
           # a mask left out, or made and never used: the first wrong tensor is the softmax of the scores as they are
           **{slug: ("mask", "softmax") for slug in ("missing-causal-mask", "mask-ignored")},
           # the sink's first wrong tensor is whatever step it joins wrongly (the scores, the softmax, the weights)
           "sink-ignored": None, "sink-misapplied": None,
           # a norm or a feed-forward written wrong makes its first wrong tensor inside the helper, whatever its kind
           **{slug: None for slug in ("rmsnorm-mean-subtracted", "rmsnorm-eps-misplaced", "swiglu-gate-swapped",
                                      "swiglu-wrong-activation")},
           # mla (a tuple: any of these kinds): a layout departs at a head split, the latent's norm at the norm
           "mla-kv-layout": ("head split",), "mla-latent-not-normalised": ("norm", "projection"),
           # (or q's head split, made from q turned whole, or from the halves of q_nope turned where q_pe's belong)
           "mla-rope-misplaced": ("frequencies", "angles", "pairs", "rotation", "head split"),
           # RoPE's own: the frequencies, the angles from the positions, the pairs, the turn
           "rope-wrong-frequencies": ("frequencies",), "rope-positions-ignored": ("positions", "angles"),
           "rope-interleaved": ("pairs", "rotation"), "rope-wrong-direction": ("rotation", "pairs"),
           # alibi: the slopes, the bias made from them, or the step that applies it to the scores (the model
           # answer's `scores = q @ k^T / sqrt(d) - penalty`: a step of no kind of its own)
           "alibi-slopes": ("slopes", "bias"), "alibi-sign": ("bias", "step"), "alibi-key-only": ("bias", "step"),
           "alibi-bias-scaled": ("bias", "scale", "step"),
           # linear-attention: the feature map, the normaliser, the sums
           # (a feature map written as a helper is its `return`: a step the reference names by variable only)
           "linear-feature-map": ("feature map", "step"), "linear-no-normaliser": ("normaliser", "numerator"),
           # a leak is a sum over the wrong keys: the localiser's first differing tensor is seldom the sum itself
           # (a chunked scan, a column of ones carrying z), so only a running sum made whole gives its line
           # (RELATION_OF)
           "linear-causal-leak": ("sums",),
           # attention-backward: the gradient the mistake makes wrong first
           "softmax-backward-no-rowsum": ("dS",), "backward-missing-scale": ("dq", "dk"),
           # (a product of dS or P with a transposed operand: a matmul after the softmax, as a weighted sum is)
           "backward-transposed": ("dv", "dP", "dq", "dk", "weighted sum"),
           # flash: the accumulator, or the factor that should have rescaled it; the final division by the sum
           "online-softmax-no-rescale": ("accumulator", "rescale factor"),
           "online-softmax-no-normalise": ("normalisation",),
           # a block's residual: the add left out, placed where the code hands the sub-layer's output on
           "missing-residual": ("step",),
           # paged-attention: where a token is read from, which tokens are attended; an index built in a form the
           # model answer lacks (one flat slot number) shows first in the tokens it reads, the blocks read whole and
           # then laid out slot-major in the tokens repeated for the heads (in another order, RELATION_OF)
           "paged-block-index": ("blocks", "slots", "tokens read", "kv repeat"),
           "paged-table-ignored": ("blocks", "tokens read"),
           "paged-length-ignored": ("lengths", "mask")}


# mistakes placed by the departure at these kinds of step only when it differs there in this way
# (localise.RELATIONS)
# (a mask's pattern mistake, in the pattern: a mask applied where it differs otherwise, as by a fill, is no line
# for it)
PATTERN = ("hides", "shows", "hides-and-shows", "moved")
MASK_PATTERN = ("causal-diagonal", "causal-misaligned", "mask-inverted", "padding-off-by-one")  # mistakes in it
RELATION_OF = {"linear-causal-leak": {"sums": "reduced"}, "paged-block-index": {"kv repeat": "arranged"},
               **{slug: {"scores": "factor"} for slug in ("missing-scale", "wrong-scale")},
               **{slug: {"mask": PATTERN} for slug in (*MASK_PATTERN, "mask-head-broadcast")},
               "causal-misaligned": {"mask": PATTERN, "causal mask": "differs", "positions": "differs"},
               "mla-rope-misplaced": {"head split": ("differs", "called-on-other")}}


def placed(slug: str, gone) -> bool:
    """The departure can be said of mistake `slug`: at a kind of step it makes wrong, in the way it does there."""
    kinds = kinds_of(slug)
    if kinds is not None and gone.kind not in kinds:
        return False
    ways = RELATION_OF.get(slug, {}).get(gone.kind, gone.relation)
    return gone.relation in (ways if isinstance(ways, tuple) else (ways,))


# mistakes whose own line is only where the step belongs (the scores' product, for a scale; the masked_fill, for a
# mask): the departure's line, at the kind of step the mistake makes wrong, is where the wrong factor was made or
# the wrong pattern compared
PLACED_BY_DEPARTURE = {"wrong-scale", "missing-scale", *MASK_PATTERN, "mask-head-broadcast"}


def kinds_of(slug: str) -> tuple[str, ...] | None:
    """The kinds of step where `slug` makes its first wrong tensor; None: any kind, or not known."""
    kinds = STEP_OF.get(slug)
    return kinds if kinds is None or isinstance(kinds, tuple) else (kinds,)


def agrees(out: list, gone) -> bool:
    """The departure can be said beside the named mistake: it is at a kind of step that mistake makes wrong (or the
    mistake's kind is not known). A mistake confirmed by a whole variant outranks a departure the localiser found
    elsewhere, which would then be a sentence about another step."""
    errors = [f for f in out if f.level == "error"]
    top = max(errors, key=lambda f: f.score) if errors else None
    return top is None or placed(top.slug, gone)


def line_from_departure(check, out: list) -> None:
    """The named mistake with no line of its own (or only where its step belongs: PLACED_BY_DEPARTURE) gets the
    departure's, when the departure is at the kind of step that mistake makes wrong: the user's line that made the
    first tensor that differs from the reference's."""
    errors = [f for f in out if f.level == "error"]
    top = max(errors, key=lambda f: f.score) if errors else None
    if top is None or top.line is not None and top.slug not in PLACED_BY_DEPARTURE or top.slug not in STEP_OF:
        return
    gone = departure(check)
    if gone is not None and gone.line and placed(top.slug, gone):
        top.line = gone.line


def contained(fn, check, out: list, *args):
    """fn(check, *args), or None when it raises: a diagnosis that fails is our bug, not the user's mistake, and
    must not sink the verdict the others reach. It leaves an internal-error note (a warning) beside them."""
    try:
        return fn(check, *args)
    except Exception as e:  # noqa: BLE001 - any bug of ours; the user's own exceptions were caught when their code ran
        from attn_drill.judge import load

        name = getattr(fn, "__name__", "a diagnosis")
        out.append(findings.make("internal-error", t("evidence.attention.diagnoses.diagnosis_failed", name=name,
                                                     error=load.describe(e)),
                                 level=findings.WARNING, score=0.0))
        return None


# --- variants: a known mistake that reproduces the user's outputs -----------------------------

MATCH = 1e-4  # relative L2 distance under which two outputs are the same computation


def match(check, knobs, every: bool = False, ran_only: bool = False,
          among: set | None = None) -> tuple[int, int, float, object, int]:
    """(cases matched, cases that tell it from the reference, worst distance among the matched cases, first
    telling case: one that ran when there is one, cases matched with numbers: both ran and agree).

    Stops at the second case the variant does not reproduce: it can no longer explain all cases but one, and
    the counts are then partial (every=True counts every case, for evidence that reports them anyway).
    ran_only=True looks only at the cases where the user's code ran to finite outputs (see failed()), `among`
    only at the cases of those indices; either way, every case looked at must be reproduced."""
    matched, telling, worst, example, numbers = 0, 0, 0.0, None, 0
    seen = 0
    strict = ran_only or among is not None
    for k, (o, ref) in enumerate(zip(check.outcomes, check.refs)):
        if ran_only and failed(o) or among is not None and k not in among:
            continue
        seen += 1
        try:
            var = check.spec.variant(o.case, knobs)
        except Exception:  # noqa: BLE001 - the mistake raises on this case (a broadcast that cannot happen, a dim
            var = None  # that does not exist): the user's code raising there is what it predicts
        differs = var is None or check.spec.distance(var, ref, var) > MATCH
        if var is None or o.outputs is None:
            same = var is None and o.outputs is None
            dist = 0.0 if same else float("inf")
        else:
            dist = check.spec.distance(empty_rows_as_zeros(o.outputs, var), var, var)
            same = dist <= MATCH
        telling += differs
        if same:
            matched += 1
            numbers += o.outputs is not None
            worst = max(worst, dist)  # of what it reproduces: the case it does not is not its evidence
            if differs and (example is None or example.outputs is None and o.outputs is not None):
                example = o  # prefer a case that ran: it can be pictured
        if not every and seen - matched > (0 if strict else 1):
            break
    return matched, telling, worst, example, numbers


def ran_and_differs(o, ref) -> bool:
    """The user's code ran on this case and an output is not the reference's."""
    return o.outputs is not None and any(closeness(a, b) > MATCH for a, b in zip(o.outputs, ref))


def exactly(worst: float) -> str:
    """How closely a variant reproduces the user's outputs, in words."""
    return t("evidence.attention.diagnoses.exactly") if worst < 1e-9 else \
        t("evidence.attention.diagnoses.to_within", worst=worst)


def failed(o) -> bool:
    """The user's code raised on this case, or gave NaN or inf: a symptom, which hides what the code does."""
    import torch

    if o.outputs is None:
        return True
    return any(isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t).all())
               for t in o.outputs)


def empty_rows_as_zeros(outputs: tuple, var: tuple) -> tuple:
    """The user's outputs with NaN read as 0 where the variant has 0: a query that the mistake leaves with no
    visible key gives NaN in the user's code (softmax of all -inf) and zeros in the variant (as SDPA does)."""
    import torch

    return tuple(torch.where(torch.isnan(u) & (v == 0), torch.zeros_like(u), u)
                 if u.shape == v.shape and u.is_floating_point() else u for u, v in zip(outputs, var))


def variant_finding(check, slug: str, knobs, how: str, line: int | None = None,
                    extra: Callable[[object], str | None] | None = None, **params) -> Finding | None:
    """The finding when the variant reproduces all cases, or all but one; `extra(example outcome)` may add an
    evidence tail read off the case the evidence names."""
    n = len(check.outcomes)
    matched, telling, worst, example, numbers = match(check, knobs)
    if telling == 0 or matched < n - 1 or example is None:  # all cases, or all but one (a second mistake)
        return where_it_runs(check, slug, knobs, how, line, extra, **params)
    if numbers == 0 and any(o.outputs is not None for o in check.outcomes):
        return None  # it raises where your code raises, but not one number your code gave is reproduced
    evidence = t("evidence.attention.diagnoses.reproduces", how=how, exactly=exactly(worst), matched=matched, n=n,
                 case=example.case.label)
    return _finding(check, slug, evidence, example, line, extra, matched / n - min(worst, 0.01), **params)


def first_variant(check, slug: str, tries, extra: Callable[[object], str | None] | None = None) -> Finding | None:
    """The first of (knobs, how) whose variant reproduces the user's outputs, as a finding of `slug`."""
    for knobs, how in tries:
        f = variant_finding(check, slug, knobs, how, extra=extra)
        if f:
            return f
    return None


def fitted_scale(check, knobs_of: Callable[[float], object]) -> Finding | None:
    """The one factor s for which the variant knobs_of(s) reproduces the outputs, on every case, named by
    scale_finding (missing-scale, wrong-scale, or None at 1/sqrt(d)); None when no one factor does."""
    fitted = []
    for o in check.outcomes:
        if o.outputs is None:
            return None

        def err(s, o=o):
            var = check.spec.variant(o.case, knobs_of(s))
            return check.spec.distance(o.outputs, var, var)

        s, e = fit_log(err)
        if e > MATCH:
            return None
        fitted.append((o, s))
    return scale_finding(check, fitted, None)


def where_it_runs(check, slug: str, knobs, how: str, line, extra, **params) -> Finding | None:
    """A cause seen where the code goes wrong and runs. Either the variant reproduces every case on which the user's
    code ran to finite outputs (two at least, one of them telling), and the code raised or gave NaN on the others:
    the symptom is then the cause's evidence (diagnose() folds it in), never a finding of its own. Or the user's code
    is right on some cases (the mistake sits on a path they do not take: one branch of `if norm_first`) and the
    variant explains every case it gets wrong, two at least, with numbers on one."""
    n = len(check.outcomes)
    failing = [o for o in check.outcomes if failed(o)]
    ran = n - len(failing)
    if failing and ran >= 2:
        matched, telling, worst, example, numbers = match(check, knobs, ran_only=True)
        if matched == ran and telling and example is not None and numbers >= 2:
            evidence = t("evidence.attention.diagnoses.reproduces_where_it_runs", how=how, exactly=exactly(worst),
                         ran=ran, case=example.case.label)
            return _finding(check, slug, evidence, example, line, extra, 0.95 - min(worst, 0.01), **params)
    wrong = {k for k, (o, r) in enumerate(zip(check.outcomes, check.refs))
             if o.outputs is None or ran_and_differs(o, r)}
    if not 2 <= len(wrong) < n:
        return None
    matched, telling, worst, example, numbers = match(check, knobs, among=wrong)
    if matched < len(wrong) or not telling or example is None or numbers < 1:
        return None
    evidence = t("evidence.attention.diagnoses.reproduces_wrong_cases", how=how, wrong=len(wrong),
                 exactly=exactly(worst), case=example.case.label, right=n - len(wrong))
    return _finding(check, slug, evidence, example, line, extra, 0.92 - min(worst, 0.01), **params)


def _finding(check, slug, evidence, example, line, extra, score, **params) -> Finding:
    tail = extra(example) if extra else None
    if tail:
        evidence += t("evidence.attention.diagnoses.tail", tail=tail)
    picture = pictures.for_slug(check, slug, example)
    return findings.make(slug, evidence, line=line, score=score, picture=picture, **params)


# --- the scale ------------------------------------------------------------------------------------------

def fit_log(err: Callable[[float], float], lo: float = 1e-3, hi: float = 1e2, per_decade: int = 8,
            steps: int = 40) -> tuple[float, float]:
    """(s, err(s)): the s in [lo, hi] that minimises err, by a grid on log s, then a golden section in the
    bracket around the grid's best point (it shrinks by 0.618 a step, one new evaluation each)."""
    def f(t: float) -> float:  # err on log s
        return err(math.exp(t))

    a0, a1 = math.log(lo), math.log(hi)
    n = round((a1 - a0) / math.log(10) * per_decade)
    grid = [a0 + (a1 - a0) * j / n for j in range(n + 1)]
    i = min(range(len(grid)), key=lambda j: f(grid[j]))
    s = math.exp(golden(f, grid[max(i - 1, 0)], grid[min(i + 1, n)], steps))
    return s, err(s)


def golden(f: Callable[[float], float], lo: float, hi: float, steps: int = 40) -> float:
    """The t in [lo, hi] that minimises f, by a golden section (the bracket shrinks by 0.618 a step, one new
    evaluation each)."""
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = f(a), f(b)
    for _ in range(steps):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = f(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = f(b)
    return (lo + hi) / 2


def scale_finding(check, fitted: list[tuple[object, float]], line: int | None) -> Finding | None:
    """Name the scale fitted on every case, as (outcome, s): None when it is 1/sqrt(d), missing-scale when it is
    1 on every case, else wrong-scale, said as one of the spec's scale_names when it is one."""
    o, s = fitted[0]
    d = o.case.dims["d"]
    want = d ** -0.5
    if abs(s - want) <= 1e-3 * want:
        return None
    expected = t("evidence.attention.diagnoses.scale_expected", want=want, d=d, case=o.case.label)
    if all(abs(s_ - 1.0) < 1e-3 for _, s_ in fitted):
        return findings.make("missing-scale", t("evidence.attention.diagnoses.scale_missing", scale=s,
                                                expected=expected), line=line, score=1.0)
    names = [n for n, v in check.spec.scale_names(o.case).items() if abs(v - s) <= 1e-3 * max(v, 1e-3)]
    said = f" = {names[0]}" if names else ""
    return findings.make("wrong-scale", t("evidence.attention.diagnoses.scale_wrong", scale=s, said=said,
                                          expected=expected), line=line, score=1.0)


def line_of(o, names: set[str], last: bool = False) -> int | None:
    return o.tracer.first_line(names, last=last) if o and o.tracer else None


def first_outcome(check):
    return next((o for o in check.outcomes if o.error is None), check.outcomes[0])


SCORES = {"matmul", "__matmul__", "einsum", "bmm", "baddbmm"}
MASKING = {"masked_fill", "masked_fill_", "where", "__add__", "__iadd__", "add"}
RESHAPES = {"view", "reshape", "flatten", "permute", "transpose"}


LOCATORS: dict[str, Callable] = {}  # exercise id -> where its computation departs, in words (families add theirs)


def locate(check) -> str:
    """Where the user's computation departs from the reference, in words: the family's own locator, else the
    module spec's hooks on its layers; "" when neither can say."""
    own = LOCATORS.get(check.spec.id) or getattr(check.spec, "locate", None)
    return own(check) if own else ""


def departure(check):
    """Where the user's computation first departs from the reference (localise.py), on the first case that ran and
    differs; computed once per check. None when nothing ran or the reference's steps cannot say."""
    if not hasattr(check, "_departure"):
        o = _departing_outcome(check)
        check._departure = None
        if o is not None and getattr(check, "target", None) is not None and getattr(check.spec, "localise", True):
            from attn_drill import paths

            case = check.spec.localised(o.case) if hasattr(check.spec, "localised") else o.case
            check._departure = localise.locate(check.spec, check.target, case, check.path,
                                               paths.REFERENCE / check.spec.file)
            cached = _cached_case(check) if check._departure is None else None
            if cached is not None:  # a mistake that shows only with a cache: a case that starts from one
                check._departure = localise.locate(check.spec, check.target, cached, check.path,
                                                   paths.REFERENCE / check.spec.file)
    return check._departure


def _cached_case(check):
    """A differing case that starts from a cache, as the spec has the localiser trace it (Spec.localised_cached);
    None when the spec has none or no such case differs."""
    if not hasattr(check.spec, "localised_cached"):
        return None
    cases = (check.spec.localised_cached(o.case) for o, r in zip(check.outcomes, check.refs)
             if ran_and_differs(o, r) and not failed(o))
    return next((c for c in cases if c is not None), None)


def _departing_outcome(check):
    """The first case whose outputs differ, one that ran to finite outputs first (NaN hides what the code does)."""
    differing = [o for o, r in zip(check.outcomes, check.refs) if ran_and_differs(o, r)]
    return next((o for o in differing if not failed(o)), differing[0] if differing else None)


SHAPE_CAUSES: dict[str, Callable] = {}  # exercise id -> a known mistake that explains a wrong shape (families add theirs)


def shape_cause(check, symptom: Finding) -> Finding | None:
    """The known mistake behind a wrong output shape, with the shape as its evidence; None when none is known."""
    own = SHAPE_CAUSES.get(check.spec.id)
    return own(check, symptom) if own else None


def values_mismatch(check, out: list) -> Finding:
    """No known mistake explains the outputs: where they first depart, when the localiser can say (an account
    that fails leaves a note in `out` and the finding without it)."""
    o = _departing_outcome(check) or first_outcome(check)  # the case the departure is found on
    gone = contained(departure, check, out)
    where_ = "" if gone else contained(locate, check, out) or ""  # the hooks' account
    extra = t("evidence.attention.diagnoses.tail", tail=gone.said()) if gone else ""
    extra += t("evidence.attention.diagnoses.tail", tail=where_) if where_ else ""
    evidence = t("evidence.attention.diagnoses.first_differing", case=o.case.label, extra=extra)
    named = departure_names(check, gone)
    if named:
        return findings.make(named, evidence, line=gone.line, score=0.6, **gone.params)
    if gone:
        fix = findings.step_fix(gone.kind)
        return findings.make("values-mismatch", evidence, score=0.1, line=gone.line, step=gone.step, fix=fix)
    return findings.make("values-mismatch", evidence, score=0.1, step=t("evidence.attention.diagnoses.no_step"),
                         fix=findings.step_fix("step"))


# (the kind of step where the computation departs, how it differs there) -> the mistake that is. The right numbers
# in another arrangement at a step that only arranges them can be no other; a softmax whose rows are not the
# keys' is over the wrong axis; a mask step that keeps hidden scores finite fills them with a modest value; one
# that hides as many keys per query as the reference's, but others, has the positions wrong (in a causal exercise).
# RoPE's frequencies are made from d and the base alone: any other numbers there are other frequencies.
NAMED = {("head split", "arranged"): "wrong-head-split", ("merge", "arranged"): "wrong-head-merge",
         ("kv repeat", "arranged"): "kv-repeat-order", ("softmax", "other-rows"): "softmax-wrong-dim",
         ("mask", "filled"): "mask-fill-zero", ("mask", "moved"): "causal-misaligned",
         **{("frequencies", how): "rope-wrong-frequencies" for how in ("differs", "factor")}}


def departure_names(check, gone) -> str | None:
    """The slug the departure itself names, when the exercise can have that mistake; None otherwise."""
    if gone is None:
        return None
    from attn_drill import catalogue

    slug = NAMED.get((gone.kind, gone.relation))
    ex = catalogue.get(check.spec.id)
    return slug if ex is not None and slug in ex.mistakes else None


def departure_cause(check) -> Finding | None:
    """When the code only raised or gave NaN (no cause found), the departure on a case where it ran to finite
    outputs may name the mistake: then it is the cause, and the symptom its evidence."""
    o = _departing_outcome(check)  # the case departure() looks at: it must have run to finite outputs
    if o is None or failed(o):
        return None
    gone = departure(check)
    named = departure_names(check, gone)
    if not named:
        return None
    return findings.make(named, t("evidence.attention.diagnoses.departure_cause", case=o.case.label,
                                  said=gone.said()), line=gone.line, score=0.9, **gone.params)


for _family in ("attention", "modules", "dims", "relpos", "softmax", "masks", "rope", "cache", "flash", "window",
                "llama", "mla", "alibi", "linear", "backward", "paged", "layers", "misplaced", "generic"):
    importlib.import_module(f"{__name__}.{_family}")  # registers its diagnoses: the order they run in
