"""RoPE mistakes, read off the output: which features turn together, which way, at what frequencies, and
whether the angles follow the given positions (probes/rope.py does the reading; this names what it finds).

Each case's output is fitted as pair rotations; then every combination of the known slips (direction,
positions, frequency formula) is tried on the fitted angles, and the one that explains the most cases is
the verdict. A slip is named when the verdict explains all cases, or all but one (a second mistake).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge.probes import rope as rope_fit
from attn_drill.judge.compare import closeness, unravel
from attn_drill.judge.diagnoses import LOCATORS, MATCH, diagnosis, exactly, failed, line_of, match
from attn_drill.judge.probes.rope import ANGLE_TOL, FREQUENCIES, Rotation
from attn_drill.judge.variants.attention import Knobs

# (positions, sign, frequency formula), the right one first, then by how many slips they combine
COMBOS = sorted(((where, sign, how) for where in ("given", "arange") for sign in (1, -1) for how in FREQUENCIES),
                key=lambda c: (c[0] != "given") + (c[1] != 1) + (c[2] != "ok"))
POWERS = {"pow", "__pow__", "__rpow__", "float_power", "exp"}


@dataclass
class Reading:
    """What one case's output says about the user's RoPE."""

    outcome: object
    rot: Rotation | None = None  # None: the output is not x with features turned in pairs
    explains: set = field(default_factory=set)  # the COMBOS that reproduce the angles of this case
    _fits: dict = field(default_factory=dict)

    @property
    def case(self):
        return self.outcome.case

    def positions(self, where: str = "given") -> torch.Tensor:
        return rope_fit.positions_as(self.case.inputs["positions"], where)

    def fitted(self, where: str = "given"):
        """(frequencies (P,), misfit (P,)) fitted to the angles against these positions."""
        if where not in self._fits:
            self._fits[where] = rope_fit.fit_frequencies(self.rot, self.positions(where))
        return self._fits[where]


def read(outcome) -> Reading:
    reading = Reading(outcome)
    if outcome.outputs is None:
        return reading
    case = outcome.case
    reading.rot = rope_fit.fit_rotation(case.inputs["x"], outcome.outputs[0])
    if reading.rot is None or not reading.rot.is_rotation or reading.rot.layout == "other":
        return reading
    d, base = case.dims["d"], case.dims["base"]
    for where, sign, how in COMBOS:
        omega = sign * rope_fit.frequencies(d, base, how)
        if float(rope_fit.misfit_of(reading.rot, reading.positions(where), omega).max()) <= ANGLE_TOL:
            reading.explains.add((where, sign, how))
    return reading


@dataclass
class Verdict:
    check: object
    readings: list[Reading]
    layout: str | None  # the pairing every rotated case shows (all but one may differ), or None
    combo: tuple | None  # (positions, sign, formula) that explains all cases but at most one; formula "fitted"
    #                      (sign 0): the angles are some other frequency times those positions
    explained: int = 0  # how many cases the combo explains
    where_it_runs: bool = False  # readings are the cases where the user's code ran (it raised on the others)

    @property
    def n(self) -> int:
        return len(self.readings)

    def explains(self, r: Reading) -> bool:
        if self.combo is None or r.rot is None:
            return False
        if self.combo[2] == "fitted":
            return float(r.fitted(self.combo[0])[1].max()) <= ANGLE_TOL
        return self.combo in r.explains

    def example(self, telling=lambda r: True) -> Reading | None:
        """The first explained case where the slip shows."""
        return next((r for r in self.readings if self.explains(r) and telling(r)), None)

    def reproduced(self) -> str:
        """Evidence tail: RoPE with the verdict's slips (named ones only) against the user's outputs."""
        where, sign, how = self.combo
        if how == "fitted":
            return ""
        knobs = Knobs(rope_pairs=self.layout, rope_sign=sign, rope_positions=where, rope_freqs=how)
        matched, _, worst, _, _ = match(self.check, knobs, every=True, ran_only=self.where_it_runs)
        if self.where_it_runs:
            return t("evidence.cache.diagnoses_rope.reproduced_where_it_runs", slips=self.slips(),
                     exactly=exactly(worst), matched=matched)
        return t("evidence.cache.diagnoses_rope.reproduced", slips=self.slips(), exactly=exactly(worst),
                 matched=matched, n=self.n)

    def slips(self) -> str:
        where, sign, how = self.combo
        said = [t("evidence.cache.diagnoses_rope.slip_pairs")] if self.layout == "interleaved" else []
        said += [t("evidence.cache.diagnoses_rope.slip_negated")] if sign == -1 else []
        said += [t("evidence.cache.diagnoses_rope.slip_positions")] if where == "arange" else []
        said += ([t("evidence.cache.diagnoses_rope.slip_formula", formula=FREQUENCIES[how][0].split(":")[0])]
                 if how not in ("ok", "fitted") else [])
        return t("finding.and").join(said)


def verdict(check) -> Verdict:
    """One verdict per check, shared by the four diagnoses and the values-mismatch line."""
    v = getattr(check, "rope_verdict", None)
    if v is None:
        v = check.rope_verdict = _judge(check)
    return v


def _judge(check) -> Verdict:
    readings = [read(o) for o in check.outcomes]
    v = _judge_on(check, readings)
    ran = [r for r, o in zip(readings, check.outcomes) if not failed(o)]
    if v.combo is None and 2 <= len(ran) < len(readings):  # the slip seen where the code runs: all of those
        w = _judge_on(check, ran)
        if w.combo is not None and w.explained == len(ran):
            w.where_it_runs = True
            return w
    return v


def _judge_on(check, readings: list) -> Verdict:
    n = len(readings)
    rotated = [r for r in readings if r.rot is not None and r.rot.is_rotation and r.rot.layout != "other"]
    layouts = {r.rot.layout for r in rotated}
    if len(layouts) != 1 or len(rotated) < max(n - 1, 1):
        return Verdict(check, readings, None, None)
    v = Verdict(check, readings, layouts.pop(), None)
    for c in COMBOS:
        k = sum(c in r.explains for r in readings)
        if k > v.explained:
            v.combo, v.explained = c, k
    if v.explained >= n - 1:
        return v
    v.combo, v.explained = None, 0
    for where in ("given", "arange"):  # frequencies of no known form: fit them case by case
        k = sum(float(r.fitted(where)[1].max()) <= ANGLE_TOL for r in rotated)
        if k >= max(n - 1, 1) and k > v.explained:
            v.combo, v.explained = (where, 0, "fitted"), k
    return v


# --- the four slips ---------------------------------------------------------------------------------------

def _finding(v: Verdict, slug: str, r: Reading, evidence: str, count: int, line=None):
    tail = v.reproduced() if v.combo else ""
    return findings.make(slug, t("evidence.cache.diagnoses_rope.finding", evidence=evidence, case=r.case.label,
                                 tail=tail), line=line, score=count / v.n)


@diagnosis("rope-interleaved", ("rope",))
def interleaved(check):
    v = verdict(check)
    if v.layout != "interleaved":
        return None
    shown = [r for r in v.readings if r.rot is not None and r.rot.layout == "interleaved" and r.case.dims["d"] > 2]
    if not shown:
        return None  # with d = 2 both layouts are one pair: nothing to tell
    r = shown[0]
    d = r.case.dims["d"]
    got = ", ".join(f"(x{a}, x{b})" for a, b in r.rot.pairs[:3])
    want = ", ".join(f"(x{a}, x{b})" for a, b in rope_fit.half_pairs(d)[:3])
    count = sum(r.rot is not None and r.rot.layout == "interleaved" for r in v.readings)
    return _finding(v, "rope-interleaved", r, t("evidence.cache.diagnoses_rope.interleaved", got=got, want=want, d=d),
                    count)


@diagnosis("rope-wrong-direction", ("rope",))
def wrong_direction(check):
    v = verdict(check)
    if not v.combo or v.combo[1] != -1:
        return None
    r = v.example()
    where, _, how = v.combo
    omega = rope_fit.frequencies(r.case.dims["d"], r.case.dims["base"], how)
    tok, p, i = _showcase(r, r.positions(where), omega)
    a, b = r.rot.pairs[i]
    got, want = float(r.rot.angles[(0, 0, tok, i)]), p * float(omega[i])
    yours = "" if how == "ok" else t("evidence.cache.diagnoses_rope.at_your_frequency")
    return _finding(v, "rope-wrong-direction", r, t("evidence.cache.diagnoses_rope.other_way", a=a, b=b, t=tok, p=p,
                                                    got=got, want=_mod(want), w=float(omega[i]), yours=yours),
                    v.explained)


@diagnosis("rope-positions-ignored", ("rope",))
def positions_ignored(check):
    v = verdict(check)
    if not v.combo or v.combo[0] != "arange":
        return None
    r = v.example()
    _, sign, how = v.combo
    omega = (r.fitted("arange")[0] if how == "fitted"
             else sign * rope_fit.frequencies(r.case.dims["d"], r.case.dims["base"], how))
    tok, p, i = _showcase(r, r.positions("arange"), omega, other=r.positions("given"))
    w = float(omega[i])
    got = float(r.rot.angles[(0, 0, tok, i)])
    return _finding(v, "rope-positions-ignored", r, t("evidence.cache.diagnoses_rope.follow_arange", t=tok, p=p, i=i,
                                                      got=got, w=w, want=_mod(p * w)), v.explained)


@diagnosis("rope-wrong-frequencies", ("rope",))
def wrong_frequencies(check):
    v = verdict(check)
    if not v.combo or v.combo[2] == "ok":
        return None
    where, sign, how = v.combo

    def telling(r):  # 10000 ** (-2i/d) is right where the base is the default: such a case shows nothing
        d, base = r.case.dims["d"], r.case.dims["base"]
        return how == "fitted" or not torch.allclose(rope_fit.frequencies(d, base, how), rope_fit.frequencies(d, base))

    r = v.example(telling)
    if r is None:
        return None
    d, base = r.case.dims["d"], r.case.dims["base"]
    want = rope_fit.frequencies(d, base)
    if how == "fitted":
        got, what = r.fitted(where)[0], t("evidence.cache.diagnoses_rope.no_usual_slip")
    else:
        got = rope_fit.frequencies(d, base, how)
        what = t("evidence.cache.diagnoses_rope.your_frequencies", said=rope_fit.frequency_said(how))
    i = int((got.log() - want.log()).abs().argmax()) if bool((got > 0).all()) else int((got - want).abs().argmax())
    a, b = r.rot.pairs[i]
    return _finding(v, "rope-wrong-frequencies", r, t("evidence.cache.diagnoses_rope.pair_turns", i=i, a=a, b=b,
                                                      got=float(got[i]), want=float(want[i]), base=base, d=d,
                                                      what=what), v.explained,
                    line=line_of(r.outcome, POWERS))


def _showcase(r: Reading, positions, omega, other=None) -> tuple[int, int, int]:
    """(token, position, pair) of batch 0, head 0 that shows a slip plainly: an angle between 0.2 and 3 rad, so
    that no multiple of 2 pi hides its sign (and, with `other`, a token whose two positions differ)."""
    row = positions[0] if positions.dim() == 2 else positions
    given = row if other is None else (other[0] if other.dim() == 2 else other)
    best = None
    for tok, (pos, shown) in enumerate(zip(row.tolist(), given.tolist())):
        if not bool(r.rot.valid[(0, 0, tok)]) or (other is not None and (pos == shown or pos == 0)):
            continue
        for i in range(len(omega)):
            angle = abs(shown * float(omega[i]))
            if best is None or (0.2 < angle < 3.0 and not best[0]):
                best = (0.2 < angle < 3.0, tok, shown, i)
    return (0, int(given[0]), 0) if best is None else best[1:]


def _mod(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


# --- what the fit says when no slip explains it (the values-mismatch line) --------------------------------

def describe(check) -> str:
    v = verdict(check)
    r = next((r for r in v.readings if r.outcome.outputs is not None and not _matches(check, r)), None)
    if r is None:
        return ""
    rot = r.rot
    if rot is None:
        return t("evidence.cache.diagnoses_rope.not_pairs")
    if not rot.is_rotation:
        return _stretched(r)
    pairs = {"half": "(i, i + d/2)", "interleaved": "(2i, 2i+1)"}.get(
        rot.layout, ", ".join(f"(x{a}, x{b})" for a, b in rot.pairs[:3]) + ", ...")
    seen = t("evidence.cache.diagnoses_rope.seen", pairs=pairs)
    if rot.layout == "other":
        return t("evidence.cache.diagnoses_rope.other_pairs", seen=seen)
    heads = _heads_differ(r)
    if heads:
        return t("evidence.cache.diagnoses_rope.seen_but", seen=seen, heads=heads)
    if ("given", 1, "ok") in r.explains:
        return t("evidence.cache.diagnoses_rope.within_tolerance", seen=seen, tol=ANGLE_TOL) + (
            t("evidence.cache.diagnoses_rope.pairs_slip") if rot.layout != "half"
            else t("evidence.cache.diagnoses_rope.slightly_off"))
    if r.explains:
        where, sign, how = min(r.explains, key=COMBOS.index)
        said = Verdict(check, [r], rot.layout, (where, sign, how)).slips()
        return t("evidence.cache.diagnoses_rope.fits_this_case", seen=seen, said=said)
    omega = rope_fit.frequencies(r.case.dims["d"], r.case.dims["base"])
    pos = r.positions("given")
    row = (pos[0] if pos.dim() == 2 else pos).double()
    off = rope_fit.wrap(rot.angles[0, 0] - row[:, None] * omega).abs()  # (T, P): batch 0, head 0
    off = torch.where(rot.valid[0, 0][:, None], off, torch.zeros(()))
    tok, i = unravel(int(off.argmax()), off.shape)
    p = int(row[tok])
    return t("evidence.cache.diagnoses_rope.angles_off", seen=seen, i=i, t=tok, p=p,
             got=float(rot.angles[0, 0, tok, i]), want=_mod(p * float(omega[i])), w=float(omega[i]))


def _heads_differ(r: Reading) -> str:
    """Every head of a token must turn by the same angles: say where two heads do not."""
    angles, valid = r.rot.angles, r.rot.valid  # (B, H, T, P), (B, H, T)
    if angles.dim() != 4 or angles.size(1) < 2:
        return ""
    gap = rope_fit.wrap(angles - angles[:, :1]).abs().amax(-1)  # (B, H, T): against head 0
    gap = torch.where(valid & valid[:, :1], gap, torch.zeros(()))
    if float(gap.max()) <= ANGLE_TOL:
        return ""
    b, h, tok = unravel(int(gap.argmax()), gap.shape)
    return t("evidence.cache.diagnoses_rope.heads_differ", h=h, b=b, t=tok, got=float(angles[b, h, tok, 0]),
             head0=float(angles[b, 0, tok, 0]))


def _stretched(r: Reading) -> str:
    x, out = r.case.inputs["x"].double(), r.outcome.outputs[0].detach().double().cpu()
    a, b = zip(*r.rot.pairs)
    before = (x[..., list(a)] ** 2 + x[..., list(b)] ** 2).sqrt()
    after = (out[..., list(a)] ** 2 + out[..., list(b)] ** 2).sqrt()
    change = torch.nan_to_num((after - before).abs() / before.clamp_min(1e-12), nan=0.0)
    idx = unravel(int(change.argmax()), change.shape)
    pa, pb = r.rot.pairs[idx[-1]]
    return t("evidence.cache.diagnoses_rope.stretched", a=pa, b=pb, batch=idx[0], head=idx[1], token=idx[2],
             before=float(before[idx]), after=float(after[idx]))


def _matches(check, r: Reading) -> bool:
    i = check.outcomes.index(r.outcome)
    return all(closeness(a, b) <= MATCH for a, b in zip(r.outcome.outputs, check.refs[i]))


LOCATORS["rope"] = describe  # what the fit reads off the first failing case: pairs, lengths, angles
