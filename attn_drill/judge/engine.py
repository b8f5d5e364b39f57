"""The stages of a check, in order, each gating the next: load, api, shapes, values, gradients, dtypes, device."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import audit, calls, diagnoses, forgery, load
from attn_drill.judge.probes import generic as probes
from attn_drill.judge.compare import TOL, diff, where
from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.base import load_references, needed
from attn_drill.judge import tamper
from attn_drill.judge.tamper import snapshot
from attn_drill.report import FAIL, NOT_STARTED, PASS, SKIP, STAGES, WARN, Report, Stage


class Stop(Exception):
    """A stage failed: the rest are skipped."""


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/core.toml, [engine])."""
    return t(f"evidence.core.engine.{key}", **params)


class Check:
    def __init__(self, path: Path, exercise: str, seed: int, emit=lambda stage: None):
        self.path, self.spec, self.seed, self.emit = path, SPECS[exercise], seed, emit
        self.report = Report(exercise, str(path), seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.cases = self.spec.cases(self.gen)
        self.target = None
        self.outcomes: list[calls.Outcome] = []

    def arm(self) -> None:
        # from here on, the file's code may not reach into the checker
        audit.arm(self.path, load_references(needed([self.report.exercise])))
        audit.take()
        self.torch_before = snapshot()
        self.ledger = forgery.Ledger(cache_ok=not self.spec.float_inputs)
        for case in self.cases:
            self.ledger.checker(case.inputs.values(), _say("own_inputs", case=case.label))

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
                    self.stage(name, SKIP, _say("skipped"))
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

    def tampered(self, what: str, deep: bool = False, label: str = "", during: str = ""):
        """torch-modified or checker-reached for what the user's code did so far (what tamper.py put back, what
        the audit hook stopped), or None. `label` is the case's; `during` the key of this module's words for when
        it ran, if not in a case's call. Nothing is worded before tamper.py has put back what the code replaced
        (`what` is one of tamper.finding's English phrases, worded there)."""
        changed = tamper.changed_since(self.torch_before, deep=deep)  # tamper's, not a name the user can swap here
        modified, reached = forgery.take_hits()
        changed += [forgery.worded(what_) for _, what_, _ in modified]
        if changed:
            return tamper.finding(changed, what)
        if reached:
            return forgery.reached(reached, _say(during) if during else label)
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
            said = (_say("ran_at", name=name, line=line, case=outcome.case.label) if line else
                    _say("ran", name=name, case=outcome.case.label))
            self.fail(findings.make("forbidden-builtin", said, line=line, score=2.0, name=name))

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
            # NOT_STARTED stays as it is: Report.not_started recognises the detail by it
            raise Stop(NOT_STARTED + _say("still_raises", line=last.lineno))

    # --- stages ------------------------------------------------------------------------------

    def load(self):
        read: dict = {}
        module, bad = load.load(self.path, self.spec.id, read)
        self.report.digest = read.get("digest", "")  # the bytes judged: record.py keeps only those
        forged = self.tampered("importing your file replaced", deep=True, during="while_importing")
        if forged:
            self.fail(forged)
        if bad:
            self.fail(bad)
        source, _ = load.read_source(self.path)
        imported = forgery.imports_checker(source, self.path)
        named = forgery.checker_names(module)
        if imported or named:
            line, text = imported or (None, "")
            where = _say("import_line", line=line, text=text) if imported else named
            self.fail(findings.make("checker-reached", _say("imports_checker", where=where), line=line, score=2.0))
        self.module = module
        return PASS, _say("loaded")

    def last_look(self) -> None:
        """After the last stage: what only the deep check sees (a kernel registered underneath torch), and what
        the user's code did since its last call (a thread). Reported unless the check already failed for it."""
        forged = self.tampered("your code replaced", deep=True)
        if forged and not any(f.slug in ("torch-modified", "checker-reached") for f in self.report.findings):
            self.add(forged)

    def keep_reference(self, outputs, case, dtype=torch.float64) -> None:
        """The reference's outputs: no output of the user's may share their memory."""
        said = (_say("reference_output", case=case.label) if dtype == torch.float64 else
                _say("reference_output_in", case=case.label, dtype=str(dtype).replace('torch.', '')))
        self.ledger.checker(outputs, said)

    def api(self):
        target, bad = self.spec.resolve(self.module)
        if bad:
            self.fail(bad)
        own = forgery.provenance(target)
        if own:
            self.fail(findings.make("checker-reached", _say("checks_itself", own=own), score=2.0))
        self.target = target
        if hasattr(self.spec, "build"):  # a module: construct it once and look at its layers
            case = self.cases[0]
            try:
                _, bad = self.spec.build(target, case, torch.float64)
            except BaseException as e:  # noqa: BLE001
                forged = self.tampered("constructing your module replaced", during="while_building")
                if not forged:
                    self.todo_left(e)
                self.fail(forged or load.exception_finding(
                    e, self.path, _say("while_constructing", call=self.spec.constructor(case))))
            forged = self.tampered("constructing your module replaced", during="while_building")
            if forged:
                self.fail(forged)
            if bad:
                self.fail(bad)
            return PASS, _say("api_class")
        return PASS, _say("api_function")

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
            self.fail(load.exception_finding(o.error, self.path, _say("every_case", case=o.case.label)))
        for o in returned:
            bad = probes.return_type(self.spec, o)
            if bad:
                self.fail(bad)
        for o in returned:
            expected = self.spec.expected_shapes(o.case)
            for name, out in zip(self.spec.outputs, o.outputs):
                if tuple(out.shape) != expected[name]:
                    self.report.case = self.cases.index(o.case)
                    shape = findings.make(
                        "wrong-output-shape", _say("shape", name=name, got=tuple(out.shape), want=expected[name],
                                                   case=o.case.label),
                        score=1.5, what=name, expected=str(expected[name]))
                    self.fail(diagnoses.shape_cause(self, shape) or shape)  # a known cause outranks its symptom
        return PASS, _say("shapes", n=len(returned), all=len(self.cases))

    def values(self):
        self.refs = [self.spec.unpack(self.spec.reference(c)[0]) for c in self.cases]
        for c, ref in zip(self.cases, self.refs):
            self.keep_reference(ref or (), c)
        first_bad = None
        for i, (o, ref) in enumerate(zip(self.outcomes, self.refs)):
            if o.error is not None:
                first_bad = first_bad or _say("raised", case=o.case.label, error=load.describe(o.error))
                self.report.case = i if self.report.case is None else self.report.case
                continue
            for name, got, want in zip(self.spec.outputs, o.outputs, ref):
                d = diff(got, want, TOL[torch.float64])
                if not d.ok and first_bad is None:
                    self.report.case = i  # what attn-drill repro replays
                    tol = TOL[torch.float64]
                    first_bad = _say("differs", case=o.case.label, name=name, at=where(d.index, self.spec.axes[name]),
                                     got=d.got, want=d.want, abs=d.max_abs, rel=d.max_rel, atol=tol.atol,
                                     rtol=tol.rtol)
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
                    first_bad = _say("and", first=first_bad, then=gone.said())
            raise Stop(first_bad)
        stale = probes.new_values(self)
        if stale:
            self.fail(stale, _say("stale"))
        if lowered and (failed64 or not getattr(self.spec, "float32_convention", False)):
            self.add(self.precision_loss(lowered))
        warning = probes.empty_row(self)
        note = getattr(self.spec, "pass_note", None)  # an exercise's own addition (flash: peak memory at T=4096)
        said = _say("empty_row_nan", n=len(self.cases)) if warning else _say("all_match", n=len(self.cases))
        if note:
            said = _say("and", first=said, then=note(self))
        if warning:
            self.add(warning)
            return WARN, said
        return PASS, said

    def within(self, tol) -> bool:
        """Every case ran and matches the reference within `tol`."""
        return all(o.error is None and o.outputs is not None and
                   all(diff(got, want, tol).ok for got, want in zip(o.outputs, ref))
                   for o, ref in zip(self.outcomes, self.refs))

    def precision_loss(self, lowered) -> object:
        name, line, dtype = lowered
        worst = max(diff(got, want, TOL[torch.float64]).max_abs
                    for o, ref in zip(self.outcomes, self.refs) for got, want in zip(o.outputs, ref))
        return findings.make("precision-loss", _say("precision", line=line, dtype=dtype, name=name, worst=worst),
                             line=line, score=0.3, dtype=dtype)

    def gradients(self):
        return probes.gradients(self)

    def dtypes(self):
        return probes.dtypes(self)

    def device(self):
        return probes.device(self)


def check_file(path: Path, exercise: str, seed: int, emit=lambda stage: None) -> Report:
    return Check(path, exercise, seed, emit).run()
