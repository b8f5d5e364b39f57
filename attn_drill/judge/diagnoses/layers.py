"""Mistakes of the Transformer layers (encoder-layer, decoder-layer).

Two kinds, told apart by hooks on the attention sub-layers (layer_hooks.departing):
- inside an attention sub-layer: the sub-layer's outputs differ from multi-head attention's on the very inputs
  the user's layer hands it. The user's MultiHeadAttention is then checked on its own, as the mha exercise,
  and the mha diagnoses name the mistake; the finding keeps its bare slug and names the sub-layer.
- around them: a residual dropped, the norms placed otherwise, no ReLU, no causal mask or one off by one,
  cross-attention's inputs swapped, the masks misrouted or never handed on; each a knob of variants/layers.py,
  held to the user's outputs.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import calls, load
from attn_drill.judge.probes import layers as layer_hooks
from attn_drill.judge.compare import closeness
from attn_drill.judge.diagnoses import MATCH, diagnosis, first_outcome, line_of, ran_and_differs, variant_finding
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.layers import PLACEMENTS, LayerKnobs

LAYERS = ("encoder-layer", "decoder-layer")
INSIDE = ("missing-scale", "wrong-scale", "softmax-wrong-dim", "mask-inverted", "mask-ignored", "mask-after-softmax",
          "mask-head-broadcast", "wrong-head-split", "wrong-head-merge", "missing-output-projection",
          "wrong-output-shape", "nan-output", "exception",
          "scale-after-softmax", "mask-fill-zero", "wrong-projection", "projection-before-merge")


# --- inside an attention sub-layer --------------------------------------------------------------

@diagnosis(INSIDE, LAYERS)
def inside_attention(check):
    where, case = layer_hooks.departing(check)
    if not where:
        return None
    try:
        cls = type(check.spec.build(check.target, check.cases[0], torch.float64)[0].get_submodule(where[0]))
    except Exception:  # noqa: BLE001 - it was built before: user code that changes its mind
        return None
    found = mha_check(check, cls)
    if found is None:
        return None
    names = t("finding.and").join(where)
    said = (t("evidence.cache.diagnoses_layers.departs_one", names=names, case=case.label) if len(where) == 1
            else t("evidence.cache.diagnoses_layers.departs_many", names=names, case=case.label))
    found.score = max(found.score, 1.0)  # the cause of whatever the layer's cases raised or returned
    return raises_too(check, findings.in_sublayer(found, where, said))


def mha_check(check, cls):
    """The first error the mha exercise's own check finds in the user's MultiHeadAttention (the contract lets
    the checker call it on its own), or None when it passes there."""
    from attn_drill.judge import diagnoses
    from attn_drill.judge.specs import SPECS

    spec = SPECS["mha"]
    target, bad = spec.resolve(SimpleNamespace(MultiHeadAttention=cls))
    if bad:
        return None
    # the layers build their attention with bias=True: a class that never handles bias=False is right for them
    cases = [c for c in spec.cases(torch.Generator().manual_seed(check.seed)) if c.config.get("bias", True)]
    sub = SimpleNamespace(spec=spec, target=target, path=check.path, seed=check.seed, cases=cases)
    sub.outcomes = [calls.run(spec, target, c, check.path) for c in sub.cases]
    sub.refs = [spec.unpack(spec.reference(c)[0]) for c in sub.cases]
    ran = [o for o in sub.outcomes if o.outputs is not None]
    if not ran:
        o = sub.outcomes[0]
        return (load.exception_finding(o.error, check.path,
                                       t("evidence.cache.diagnoses_layers.on_every_case", case=o.case.label))
                if o.error else None)
    for o in ran:
        for name, out in zip(spec.outputs, o.outputs):
            want = spec.expected_shapes(o.case)[name]
            if tuple(out.shape) != want:
                return findings.make("wrong-output-shape",
                                     t("evidence.cache.diagnoses_layers.wrong_shape", name=name, got=tuple(out.shape),
                                       want=want, case=o.case.label), score=1.5, what=name, expected=str(want))
    if all(o.outputs is not None and all(closeness(a, b) <= MATCH for a, b in zip(o.outputs, r))
           for o, r in zip(sub.outcomes, sub.refs)):
        return None
    found = [f for f in diagnoses.diagnose(sub) if f.level == "error"]
    found.sort(key=lambda f: -f.score)
    return found[0] if found else None


# --- around the attention: the layer's own mistakes ----------------------------------------------

def raises_too(check, f, line_from_error: bool = True):
    """A mistake that also raises on some cases: the exception is its evidence, and the user's line when the
    raising line is where the mistake is (a broadcast), not where its tensor is only used (line_from_error)."""
    raised = [o for o in check.outcomes if o.error is not None]
    if f and raised:
        o = raised[0]
        if line_from_error:
            f.line = f.line or load.user_line(o.error, check.path)[0]
        f.evidence += t("evidence.cache.diagnoses_layers.raises_too", raised=len(raised), n=len(check.outcomes),
                        error=load.describe(o.error), case=o.case.label)
    return f


@diagnosis("missing-residual", LAYERS)
def missing_residual(check):
    blocks = blocks_of(check)
    for dropped in [(b,) for b in blocks] + [blocks]:
        said = t("finding.and").join(t("evidence.cache.diagnoses_layers.feed_forward") if b == "ff" else b
                                     for b in dropped)
        for when in (None, False, True):
            which = ("" if when is None else t("evidence.cache.diagnoses_layers.in_pre_ln") if when
                     else t("evidence.cache.diagnoses_layers.in_post_ln"))
            f = variant_finding(check, "missing-residual", LayerKnobs(missing_residual=dropped, residual_when=when),
                                t("evidence.cache.diagnoses_layers.no_residual", said=said, which=which),
                                sublayer=said)
            if f:
                # the forward's line that calls the first sub-layer left without its residual
                f.line = f.line or call_line(check, "ff2" if dropped[0] == "ff" else dropped[0], norm_first=when)
                return f
    return None


@diagnosis("missing-activation", LAYERS)
def missing_activation(check):
    line = line_of(first_outcome(check), {"linear"}, last=True)  # ff2, the layer's last linear
    for how, said in (("none", t("evidence.cache.diagnoses_layers.act_none")),
                      ("after", t("evidence.cache.diagnoses_layers.act_after"))):
        f = variant_finding(check, "missing-activation", LayerKnobs(activation=how), said, line=line)
        if f:
            return f
    return None


def pictured(check, f, name: str):
    """The finding with `name`'s attention weights drawn beside the reference's, on the case its evidence names."""
    if f:
        o = next((o for o in check.outcomes if o.case.label in f.evidence and o.outputs is not None), None)
        f.picture = layer_hooks.weights_picture(check, o.case, name) if o else None
    return f


@diagnosis("missing-causal-mask", ("decoder-layer",))
def missing_causal_mask(check):
    for how, said in (("none", t("evidence.cache.diagnoses_layers.causal_none")),
                      ("unless_tgt", t("evidence.cache.diagnoses_layers.causal_unless_tgt")),
                      ("or_tgt", t("evidence.cache.diagnoses_layers.causal_or_tgt"))):
        f = variant_finding(check, "missing-causal-mask", LayerKnobs(causal=how), said)
        if f:
            return pictured(check, raises_too(check, f), "self_attn")
    return None


@diagnosis("mask-ignored", LAYERS)
def mask_not_handed(check):
    """The layer never hands an attention sub-layer its mask (its MultiHeadAttention may be right)."""
    if check.spec.id == "encoder-layer":
        tries = [(LayerKnobs(attn=Knobs(mask="ignored")), "self_attn", "mask", "self.self_attn(x, x, x, mask)")]
    else:
        tries = [(LayerKnobs(route="no_memory"), "cross_attn", "memory_mask",
                  "self.cross_attn(x, memory, memory, memory_mask)"),
                 (LayerKnobs(route="no_tgt"), "self_attn", "tgt_mask",
                  "self.self_attn(x, x, x, causal & tgt_mask)")]
    for knobs, name, mask, call in tries:
        if knobs.route != "no_tgt" and handed(check, name):
            continue  # the sub-layer gets a mask and ignores it: inside_attention's to name
        f = variant_finding(check, "mask-ignored", knobs,
                            t("evidence.cache.diagnoses_layers.run_without", name=name, mask=mask))
        if f:
            f.fix = findings.not_handed_fix(call)
            return pictured(check, findings.in_sublayer(f, [name], t("evidence.cache.diagnoses_layers.never_hands",
                                                                     name=name, mask=mask)), name)
    return None


def handed(check, name: str) -> bool:
    """Does the user's layer hand sub-layer `name` a mask on the first case (which has masks)?"""
    calls_ = [c for c in layer_hooks.capture(check.spec, check.target, check.cases[0]) if c.name == name]
    return bool(calls_) and calls_[0].inputs[3] is not None


@diagnosis("causal-diagonal", ("decoder-layer",))
def causal_diagonal(check):
    """The causal mask one off: the diagonal hidden (query 0 then sees nothing: its row is whatever the user's
    fill makes of it, zeros, uniform or NaN) or one future key shown."""
    for how, said in (("diagonal", t("evidence.cache.diagnoses_layers.diag_hidden")),
                      ("future", t("evidence.cache.diagnoses_layers.diag_future"))):
        for attn in (Knobs(), Knobs(fill="min", empty_rows="kept")):
            f = variant_finding(check, "causal-diagonal", LayerKnobs(causal=how, attn=attn), said)
            if f:
                return pictured(check, f, "self_attn")
    return None


@diagnosis("cross-attention-swapped", ("decoder-layer",))
def cross_attention_swapped(check):
    f = variant_finding(check, "cross-attention-swapped", LayerKnobs(cross_swapped=True),
                        t("evidence.cache.diagnoses_layers.cross_swapped"),
                        line=use_that_ran(check, "cross_attn") or call_line(check, "cross_attn", inner=True))
    return raises_too(check, f, line_from_error=False)  # it raises inside the attention, not where it is called


def use_that_ran(check, attribute: str) -> int | None:
    """The line of forward() that uses self.<attribute> (calls the sub-layer, or hands it to a helper) on the first
    case the user's layer gets wrong: of the uses in the source, the one whose line ran a torch call there (the
    residual's +); None when that leaves not exactly one."""
    import ast

    try:
        tree = ast.parse(check.path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    lines = {node.lineno for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and fn.name == "forward"
             for node in ast.walk(fn) if isinstance(node, ast.Attribute) and node.attr == attribute
             and isinstance(node.value, ast.Name) and node.value.id == "self"}
    if len(lines) > 1:
        wrong = next((o for o, r in zip(check.outcomes, check.refs)
                      if o.tracer is not None and ran_and_differs(o, r)), None)  # it ran: its residual + is traced
        ran = {line for _, line in wrong.tracer.calls} if wrong else set()
        lines &= ran
    return lines.pop() if len(lines) == 1 else None


@diagnosis("mask-misrouted", ("decoder-layer",))
def mask_misrouted(check):
    for route, said in (("swapped", t("evidence.cache.diagnoses_layers.route_swapped")),
                        ("tgt_both", t("evidence.cache.diagnoses_layers.route_tgt_both")),
                        ("memory_both", t("evidence.cache.diagnoses_layers.route_memory_both"))):
        f = variant_finding(check, "mask-misrouted", LayerKnobs(route=route), said)
        if f:
            # the line that hands the wrong mask over: the call of the first sub-layer that gets one
            sub = "cross_attn" if route == "tgt_both" else "self_attn"
            f.line = call_line(check, sub)
            return pictured(check, raises_too(check, f, line_from_error=f.line is None), sub)
    return None


def call_line(check, sub: str, inner: bool = False, norm_first: bool | None = None) -> int | None:
    """The user's line that calls the sub-module `sub` (on the first case that ran and went wrong, of `norm_first`
    if given): in the layer's forward, or with `inner`, the call itself (inside a helper the forward calls)."""
    ran = [o for o, r in zip(check.outcomes, check.refs) if ran_and_differs(o, r)]
    case = next((o.case for o in ran if norm_first is None or o.case.config.get("norm_first") == norm_first),
                first_outcome(check).case)
    calls_ = layer_hooks.capture(check.spec, check.target, case, check.path)
    return next(((c.inner if inner else c.line) for c in calls_ if c.name == sub and c.line), None)


def blocks_of(check) -> tuple[str, ...]:
    return ("self_attn", "cross_attn", "ff") if check.spec.id == "decoder-layer" else ("self_attn", "ff")


# --- the norms: which placement reproduces each case ---------------------------------------------

def placement_said(place: str) -> str:
    """One of PLACEMENTS, in words."""
    return {"pre": t("evidence.cache.diagnoses_layers.place_pre"),
            "post": t("evidence.cache.diagnoses_layers.place_post"),
            "out": t("evidence.cache.diagnoses_layers.place_out"),
            "in": t("evidence.cache.diagnoses_layers.place_in")}[place]


@diagnosis("norm-placement", LAYERS)
def norm_placement(check):
    """Per case, the placement of each sub-layer's norm that reproduces the user's output; a finding when
    every case has one and some case is not the one its norm_first asks for."""
    blocks = blocks_of(check)
    outcomes = [(o, r) for o, r in zip(check.outcomes, check.refs)]
    outcomes.sort(key=lambda pair: _right(check, *pair))  # the telling cases first: most files stop at the first
    fitted = []
    for o, ref in outcomes:
        if o.outputs is None:
            return None
        asked = ("pre" if o.case.config["norm_first"] else "post",) * len(blocks)
        if _right(check, o, ref):
            fitted.append((o, asked, asked))
            continue
        combo = next((c for c in itertools.product(PLACEMENTS, repeat=len(blocks)) if c != asked
                      and _reproduces(check, o, LayerKnobs(placement=c))), None)
        if combo is None:
            return None
        fitted.append((o, asked, combo))
    wrong = [(o, asked, got) for o, asked, got in fitted if got != asked]
    if not wrong:
        return None
    o, asked, got = wrong[0]
    parts = [t("evidence.cache.diagnoses_layers.placed", block=b, said=placement_said(p))
             for b, p, a in zip(blocks, got, asked) if p != a]
    evidence = t("evidence.cache.diagnoses_layers.placement", norm_first=o.case.config['norm_first'],
                 parts=t("evidence.cache.diagnoses_layers.sep").join(parts),
                 asked=(t("evidence.cache.diagnoses_layers.asked_pre") if asked[0] == "pre"
                        else t("evidence.cache.diagnoses_layers.asked_post")),
                 case=o.case.label, n=len(fitted), wrong=len(wrong))
    kinds = {o.case.config["norm_first"] for o, _, _ in wrong}
    if len(kinds) == 1 and len({c for _, _, c in wrong}) == 1 and any(
            o.case.config["norm_first"] not in kinds for o, _, _ in fitted):
        evidence += t("evidence.cache.diagnoses_layers.right_otherwise", norm_first=not kinds.pop())
    # the norm of the first sub-layer placed wrongly: each sub-layer calls its norm once, in the sub-layers' order
    first = next(i for i, (p, a) in enumerate(zip(got, asked)) if p != a)
    norms = o.tracer.lines({"layer_norm"}) if o.tracer else []
    line = norms[first] if len(norms) == len(blocks) else line_of(o, {"layer_norm"})
    return findings.make("norm-placement", evidence, score=1.0, line=line)


def _right(check, o, ref) -> bool:
    return o.outputs is not None and closeness(o.outputs[0], ref[0]) <= MATCH


def _reproduces(check, o, knobs) -> bool:
    try:
        var = check.spec.variant(o.case, knobs)
    except RuntimeError:
        return False
    return check.spec.distance(o.outputs, var, var) <= MATCH
