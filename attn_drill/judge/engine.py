"""The stages of a check, in order, each gating the next: load, api, shapes, values, gradients, dtypes, device."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from attn_drill import findings
from attn_drill.judge import audit, calls, diagnoses, forgery, load
from attn_drill.judge.probes import generic as probes
from attn_drill.judge.compare import TOL, diff, where
from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.base import load_references
from attn_drill.judge import tamper
from attn_drill.judge.tamper import snapshot
from attn_drill.report import FAIL, NOT_STARTED, PASS, SKIP, STAGES, WARN, Report, Stage


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

    def arm(self) -> None:
        audit.arm(self.path, load_references())  # from here on, the file's code may not reach into the checker
        audit.take()
        self.torch_before = snapshot()
        self.ledger = forgery.Ledger(cache_ok=not self.spec.float_inputs)
        for case in self.cases:
            self.ledger.checker(case.inputs.values(), f"the checker's own inputs for {case.label}")

    def run(self) -> Report:
        start = time.perf_counter()
        self.arm()
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
        self.last_look()
        self.report.seconds = time.perf_counter() - start
        self.report.sort_findings()
        return self.report

    def on_gpu(self, device: str, name: str) -> Report:
        """The device stage's GPU half, in a process that initialised the GPU itself (process/gpu.py): the file is
        loaded and built again, then its first case runs on `device` (`name` in words). A report with that one
        stage, which the runner folds into the CPU check's report."""
        start = time.perf_counter()
        self.arm()
        try:
            self.load()
            self.api()
            status, detail = probes.on_gpu(self, device, name)
        except Stop as stop:
            status, detail = FAIL, str(stop)
        self.stage("device", status, detail)
        self.last_look()
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

    def tampered(self, what: str, deep: bool = False, label: str = ""):
        """torch-modified or checker-reached for what the user's code did so far (what tamper.py put back, what
        the audit hook stopped), or None."""
        changed = tamper.changed_since(self.torch_before, deep=deep)  # tamper's, not a name the user can swap here
        modified, reached = forgery.take_hits()
        changed += [what_ for _, what_, _ in modified]
        if changed:
            return tamper.finding(changed, what)
        if reached:
            return forgery.reached(reached, label)
        return None

    def guard(self, outcome: calls.Outcome) -> None:
        """After every call of user code: torch and the checker unchanged and unreached, the outputs computed
        for this call, nothing forbidden ran."""
        bad = self.tampered("your code replaced", label=outcome.case.label)
        if bad:
            self.fail(bad)
        if outcome.outputs is not None:
            bad = self.ledger.call(outcome, self.spec.outputs) or probes.elsewhere(self.spec, outcome)
            if bad:
                self.fail(bad)
        t = outcome.tracer
        if t and t.forbidden_calls:
            name, line = t.forbidden_calls[0]
            where_ = f" at your line {line}" if line else ""
            self.fail(findings.make("forbidden-builtin", f"{name} ran{where_} ({outcome.case.label})",
                                    line=line, score=2.0, name=name))

    def todo_left(self, error: BaseException) -> None:
        """Stop as not started (no finding) when `error` is the file's own `raise NotImplementedError`: the
        skeleton's TODO bodies raise it, and a mistake of the user's would not. Raised by torch or a library, or
        by a `raise` that is not the innermost frame, it stays an `exception` finding."""
        import traceback

        if not isinstance(error, NotImplementedError):
            return
        frames = traceback.extract_tb(error.__traceback__)
        last = frames[-1] if frames else None
        if last is None or Path(last.filename).resolve() != Path(self.path).resolve():
            return
        if (last.line or "").strip().startswith("raise NotImplementedError"):
            raise Stop(f"{NOT_STARTED} (your line {last.lineno} still raises NotImplementedError)")

    # --- stages ------------------------------------------------------------------------------

    def load(self):
        read: dict = {}
        module, bad = load.load(self.path, self.spec.id, read)
        self.report.digest = read.get("digest", "")  # the bytes judged: record.py keeps only those
        forged = self.tampered("importing your file replaced", deep=True, label="while importing the file")
        if forged:
            self.fail(forged)
        if bad:
            self.fail(bad)
        source, _ = load.read_source(self.path)
        imported = forgery.imports_checker(source, self.path)
        named = forgery.checker_names(module)
        if imported or named:
            line, text = imported or (None, "")
            where = f"line {line}: {text}" if imported else named
            self.fail(findings.make("checker-reached", f"your file imports attn_drill, the checker itself ({where})",
                                    line=line, score=2.0))
        self.module = module
        return PASS, "the file imports"

    def last_look(self) -> None:
        """After the last stage: what only the deep check sees (a kernel registered underneath torch), and what
        the user's code did since its last call (a thread). Reported unless the check already failed for it."""
        forged = self.tampered("your code replaced", deep=True)
        if forged and not any(f.slug in ("torch-modified", "checker-reached") for f in self.report.findings):
            self.add(forged)

    def keep_reference(self, outputs, case, dtype=torch.float64) -> None:
        """The reference's outputs: no output of the user's may share their memory."""
        label = "" if dtype == torch.float64 else f" ({str(dtype).replace('torch.', '')})"
        self.ledger.checker(outputs, f"the reference's output for {case.label}{label}")

    def api(self):
        target, bad = self.spec.resolve(self.module)
        if bad:
            self.fail(bad)
        own = forgery.provenance(target)
        if own:
            self.fail(findings.make("checker-reached", f"{own}: the checker cannot check itself", score=2.0))
        self.target = target
        if hasattr(self.spec, "build"):  # a module: construct it once and look at its layers
            case = self.cases[0]
            try:
                _, bad = self.spec.build(target, case, torch.float64)
            except BaseException as e:  # noqa: BLE001
                forged = self.tampered("constructing your module replaced", label="while constructing it")
                if not forged:
                    self.todo_left(e)
                self.fail(forged or load.exception_finding(e, self.path,
                                                           f"while constructing {self.spec.constructor(case)}"))
            forged = self.tampered("constructing your module replaced", label="while constructing it")
            if forged:
                self.fail(forged)
            if bad:
                self.fail(bad)
            return PASS, "the class, its signature and its layers are as the task says"
        return PASS, "the function exists with the right signature"

    def shapes(self):
        for case in self.cases:
            outcome = calls.run(self.spec, self.target, case, self.path)
            self.guard(outcome)
            self.outcomes.append(outcome)
        for o in self.outcomes:  # a TODO still raising anywhere the cases reach: not started, whatever else ran
            if o.error is not None:
                self.todo_left(o.error)
        returned = [o for o in self.outcomes if o.error is None]
        if not returned:
            o = self.outcomes[0]
            self.report.case = 0  # attn-drill repro replays it: the traceback shows where
            self.fail(load.exception_finding(o.error, self.path, f"on every case, e.g. {o.case.label}"))
        for o in returned:
            bad = probes.return_type(self.spec, o)
            if bad:
                self.fail(bad)
        for o in returned:
            expected = self.spec.expected_shapes(o.case)
            for name, t in zip(self.spec.outputs, o.outputs):
                if tuple(t.shape) != expected[name]:
                    self.report.case = self.cases.index(o.case)
                    shape = findings.make(
                        "wrong-output-shape", f"{name} is {tuple(t.shape)}, expected {expected[name]} ({o.case.label})",
                        score=1.5, what=name, expected=str(expected[name]))
                    self.fail(diagnoses.shape_cause(self, shape) or shape)  # a known cause outranks its symptom
        return PASS, f"{len(returned)} of {len(self.cases)} cases returned the right shapes"

    def values(self):
        self.refs = [self.spec.unpack(self.spec.reference(c)[0]) for c in self.cases]
        for c, ref in zip(self.cases, self.refs):
            self.keep_reference(ref or (), c)
        first_bad = None
        for i, (o, ref) in enumerate(zip(self.outcomes, self.refs)):
            if o.error is not None:
                first_bad = first_bad or f"{o.case.label}: raised {load.describe(o.error)}"
                self.report.case = i if self.report.case is None else self.report.case
                continue
            for name, got, want in zip(self.spec.outputs, o.outputs, ref):
                d = diff(got, want, TOL[torch.float64])
                if not d.ok and first_bad is None:
                    self.report.case = i  # what attn-drill repro replays
                    first_bad = (f"{o.case.label}: {name} differs first at ({where(d.index, self.spec.axes[name])}): "
                                 f"yours {d.got:.4g}, expected {d.want:.4g}; max abs error {d.max_abs:.3g}, "
                                 f"relative error {d.max_rel:.3g} of the largest |expected| (tolerance {TOL[torch.float64].atol:g} + "
                                 f"{TOL[torch.float64].rtol:g}*|expected|)")
        lowered = next((o.tracer.lowered for o in self.outcomes if o.tracer and o.tracer.lowered), None)
        failed64 = first_bad is not None
        if first_bad and lowered and self.within(TOL[torch.float32]):
            first_bad = None  # float32's error and no more: right, with a precision-loss warning below
        modified = probes.inputs_modified(self, failed=first_bad is not None)
        if modified:
            self.add(modified)
        if first_bad:
            if not (modified and modified.level == "error"):
                for f in diagnoses.diagnose(self):
                    self.add(f)
                gone = diagnoses.departure(self)
                said = any(f.slug == "values-mismatch" for f in self.report.findings)
                if gone and not said and diagnoses.agrees(self.report.findings, gone):  # (values-mismatch says it)
                    first_bad += f"; {gone.said()}"
            raise Stop(first_bad)
        stale = probes.new_values(self)
        if stale:
            self.fail(stale, "the same shapes with new values give an old answer")
        if lowered and (failed64 or not getattr(self.spec, "float32_convention", False)):
            self.add(self.precision_loss(lowered))
        warning = probes.empty_row(self)
        note = getattr(self.spec, "pass_note", None)  # an exercise's own addition (flash: peak memory at T=4096)
        extra = f"; {note(self)}" if note else ""
        if warning:
            self.add(warning)
            return WARN, f"all {len(self.cases)} cases match; a query with no visible key gives NaN{extra}"
        return PASS, f"all {len(self.cases)} cases match the reference (float64){extra}"

    def within(self, tol) -> bool:
        """Every case ran and matches the reference within `tol`."""
        return all(o.error is None and o.outputs is not None and
                   all(diff(got, want, tol).ok for got, want in zip(o.outputs, ref))
                   for o, ref in zip(self.outcomes, self.refs))

    def precision_loss(self, lowered) -> object:
        name, line, dtype = lowered
        worst = max(diff(got, want, TOL[torch.float64]).max_abs
                    for o, ref in zip(self.outcomes, self.refs) for got, want in zip(o.outputs, ref))
        return findings.make("precision-loss", f"the inputs are float64; your line {line} makes a {dtype} tensor "
                             f"({name}); largest error {worst:.2g}, within {dtype}'s precision", line=line,
                             score=0.3, dtype=dtype)

    def gradients(self):
        return probes.gradients(self)

    def dtypes(self):
        return probes.dtypes(self)

    def device(self):
        return probes.device(self)


def check_file(path: Path, exercise: str, seed: int, emit=lambda stage: None) -> Report:
    return Check(path, exercise, seed, emit).run()
