"""The stages of a check, in order, each gating the next: load, api, shapes, values, gradients, dtypes, device."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from attn_drill import findings
from attn_drill.judge import calls, diagnoses, load, probes
from attn_drill.judge.compare import TOL, diff, where
from attn_drill.judge.specs import SPECS
from attn_drill.process import tamper
from attn_drill.process.tamper import changed_since, snapshot
from attn_drill.report import FAIL, PASS, SKIP, STAGES, WARN, Report, Stage


class Stop(Exception):
    """A stage failed: the rest are skipped."""


class Check:
    def __init__(self, path: Path, exercise: str, seed: int, emit=lambda stage: None):
        self.path, self.spec, self.seed, self.emit = path, SPECS[exercise], seed, emit
        self.report = Report(exercise, str(path), seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.cases = self.spec.cases(self.gen)
        self.target = None
        self.outcomes: list[calls.Outcome] = []

    def run(self) -> Report:
        start = time.perf_counter()
        self.torch_before = snapshot()
        stages = [self.load, self.api, self.shapes, self.values, self.gradients, self.dtypes, self.device]
        for i, stage in enumerate(stages):
            try:
                status, detail = stage()
            except Stop as stop:
                status, detail = FAIL, str(stop)
            self.stage(STAGES[i], status, detail)
            if status == FAIL:
                for name in STAGES[i + 1:]:
                    self.stage(name, SKIP, "skipped: an earlier stage failed")
                break
        self.report.seconds = time.perf_counter() - start
        self.report.sort_findings()
        return self.report

    def stage(self, name, status, detail):
        s = Stage(name, status, detail)
        self.report.stages.append(s)
        self.emit(s)

    def add(self, finding):
        self.report.findings.append(finding)

    def fail(self, finding, detail=None):
        self.add(finding)
        raise Stop(detail or finding.title)

    def guard(self, outcome: calls.Outcome) -> None:
        """After every call of user code: torch unchanged, nothing forbidden ran."""
        changed = changed_since(self.torch_before)
        if changed:
            self.fail(tamper.finding(changed, "your code replaced"))
        t = outcome.tracer
        if t and t.forbidden_calls:
            name, line = t.forbidden_calls[0]
            where_ = f" at your line {line}" if line else ""
            self.fail(findings.make("forbidden-builtin", f"{name} ran{where_} ({outcome.case.label})",
                                    line=line, score=2.0, name=name))

    # --- stages ------------------------------------------------------------------------------

    def load(self):
        module, bad = load.load(self.path, self.spec.id)
        if bad:
            self.fail(bad)
        changed = changed_since(self.torch_before)
        if changed:
            self.fail(tamper.finding(changed, "importing your file replaced"))
        self.module = module
        return PASS, "the file imports"

    def api(self):
        target, bad = self.spec.resolve(self.module)
        if bad:
            self.fail(bad)
        self.target = target
        if hasattr(self.spec, "build"):  # a module: construct it once and look at its layers
            case = self.cases[0]
            try:
                _, bad = self.spec.build(target, case, torch.float64)
            except BaseException as e:  # noqa: BLE001
                self.fail(load.exception_finding(e, self.path, f"while constructing {self.spec.constructor(case)}"))
            if bad:
                self.fail(bad)
            return PASS, "the class, its signature and its layers are as the task says"
        return PASS, "the function exists with the right signature"

    def shapes(self):
        for case in self.cases:
            outcome = calls.run(self.spec, self.target, case, self.path)
            self.guard(outcome)
            self.outcomes.append(outcome)
        returned = [o for o in self.outcomes if o.error is None]
        if not returned:
            o = self.outcomes[0]
            self.fail(load.exception_finding(o.error, self.path, f"on every case, e.g. {o.case.label}"))
        for o in returned:
            bad = probes.return_type(self.spec, o)
            if bad:
                self.fail(bad)
        for o in returned:
            expected = self.spec.expected_shapes(o.case)
            for name, t in zip(self.spec.outputs, o.outputs):
                if tuple(t.shape) != expected[name]:
                    self.fail(findings.make(
                        "wrong-output-shape", f"{name} is {tuple(t.shape)}, expected {expected[name]} ({o.case.label})",
                        score=1.5, what=name, expected=str(expected[name])))
        return PASS, f"{len(returned)} of {len(self.cases)} cases returned the right shapes"

    def values(self):
        self.refs = [self.spec.unpack(self.spec.reference(c)[0]) for c in self.cases]
        first_bad = None
        for o, ref in zip(self.outcomes, self.refs):
            if o.error is not None:
                first_bad = first_bad or f"{o.case.label}: raised {load.describe(o.error)}"
                continue
            for name, got, want in zip(self.spec.outputs, o.outputs, ref):
                d = diff(got, want, TOL[torch.float64])
                if not d.ok and first_bad is None:
                    first_bad = (f"{o.case.label}: {name} differs first at ({where(d.index, self.spec.axes[name])}): "
                                 f"yours {d.got:.4g}, expected {d.want:.4g}; max abs error {d.max_abs:.3g}, "
                                 f"relative to the largest value {d.max_rel:.3g} (tolerance {TOL[torch.float64].atol:g} + "
                                 f"{TOL[torch.float64].rtol:g}*|expected|)")
        modified = probes.inputs_modified(self, failed=first_bad is not None)
        if modified:
            self.add(modified)
        if first_bad:
            if not (modified and modified.level == "error"):
                for f in diagnoses.diagnose(self):
                    self.add(f)
            raise Stop(first_bad)
        warning = probes.empty_row(self)
        note = getattr(self.spec, "pass_note", None)  # an exercise's own addition (flash: peak memory at T=4096)
        extra = f"; {note(self)}" if note else ""
        if warning:
            self.add(warning)
            return WARN, f"all {len(self.cases)} cases match; a query with no visible key gives NaN{extra}"
        return PASS, f"all {len(self.cases)} cases match the reference (float64){extra}"

    def gradients(self):
        return probes.gradients(self)

    def dtypes(self):
        return probes.dtypes(self)

    def device(self):
        return probes.device(self)


def check_file(path: Path, exercise: str, seed: int, emit=lambda stage: None) -> Report:
    return Check(path, exercise, seed, emit).run()
