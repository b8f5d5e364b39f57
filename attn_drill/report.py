"""What a check returns: plain data, no torch, no rendering.

The worker process builds a `Report`, sends it as JSON, and the CLI renders it or prints it as JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

PASS, FAIL, WARN, SKIP = "pass", "fail", "warn", "skip"
STAGES = ("load", "api", "shapes", "values", "gradients", "dtypes", "device")
# A stage's detail when the file's own `raise NotImplementedError` (a skeleton's TODO) stopped the check: the
# file is not started (or not finished), which is no mistake to name, so the report has no finding.
NOT_STARTED = "not started: fill in the TODOs"
# The form of a report in `check --json` and between the worker and the CLI; raised when a field changes meaning.
VERSION = 1


@dataclass
class Finding:
    slug: str  # stable code from the contract, e.g. "missing-scale"
    level: str  # "error" or "warning"
    title: str
    message: str  # why it matters, in a sentence or two
    evidence: str  # the numbers and the case that show it
    fix: str
    line: int | None = None  # the user's line, when the source can point at it
    score: float = 0.0  # closeness of the evidence, 1.0 = exact; orders findings of one level
    picture: dict | None = None  # optional heatmaps: {"title", "caption", "yours", "expected"}, nested lists


@dataclass
class Stage:
    name: str
    status: str  # pass / fail / warn / skip
    detail: str = ""


@dataclass
class Report:
    exercise: str
    file: str
    seed: int
    stages: list[Stage] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    output: str = ""  # what the user's code printed (stdout and stderr), its first and last lines
    confinement: str = ""  # what of the sandbox was NOT in force for this check, in words; "" when all was
    case: int | None = None  # the index of the first failing case of the values stage (attn-drill repro)
    digest: str = ""  # sha256 (16 hex digits) of the bytes the judge read and ran; "" if it read none

    @property
    def passed(self) -> bool:
        return all(s.status in (PASS, WARN) for s in self.stages) and not self.errors

    @property
    def not_started(self) -> bool:
        """Stopped by the file's own TODO (see NOT_STARTED): failed, with no error to name."""
        return not self.errors and any(s.status == FAIL and s.detail.startswith(NOT_STARTED) for s in self.stages)

    @property
    def ours(self) -> bool:
        """The checker itself failed (an internal-error): no verdict on the user's code."""
        return any(f.slug == "internal-error" and f.level == "error" for f in self.findings)

    @property
    def judged(self) -> bool:
        """A verdict on the user's code, to record and rate: neither stopped by their TODO nor by our own error."""
        return not (self.not_started or self.ours)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]

    def sort_findings(self) -> None:
        """Errors first, then warnings; within a level the closest evidence first (stable otherwise)."""
        self.findings.sort(key=lambda f: (f.level != "error", -f.score))

    def to_dict(self) -> dict:
        self.sort_findings()
        findings = []
        for f in self.findings:
            d = asdict(f)
            d.pop("score")
            d.pop("picture")
            findings.append(d)
        return {
            "version": VERSION,
            "exercise": self.exercise,
            "file": self.file,
            "passed": self.passed,
            "not_started": self.not_started,
            "seed": self.seed,
            "stages": [asdict(s) for s in self.stages],
            "findings": findings,
            "output": self.output,
            "confinement": self.confinement,
        }

    @classmethod
    def from_wire(cls, d: dict) -> "Report":
        """Rebuild a report from the worker's JSON (which keeps score and picture); another version's is refused."""
        if d.get("version") != VERSION:
            raise ValueError(f"a report of version {d.get('version')!r}, not {VERSION}")
        r = cls(d["exercise"], d["file"], d["seed"], seconds=d.get("seconds", 0.0),
                output=str(d.get("output", "")), confinement=str(d.get("confinement", "")))
        r.case = d["case"] if isinstance(d.get("case"), int) else None
        r.digest = d["digest"] if isinstance(d.get("digest"), str) else ""
        r.stages = [Stage(**s) for s in d.get("stages", [])]
        r.findings = [Finding(**f) for f in d.get("findings", [])]
        r.sort_findings()
        return r

    def to_wire(self) -> dict:
        return {
            "version": VERSION,
            "exercise": self.exercise,
            "file": self.file,
            "seed": self.seed,
            "seconds": self.seconds,
            "stages": [asdict(s) for s in self.stages],
            "findings": [asdict(f) for f in self.findings],
            "output": self.output,
            "confinement": self.confinement,
            "case": self.case,
            "digest": self.digest,
        }


def partial_report(exercise: str, path, seed: int, stages: list[Stage], failed_detail: str) -> Report:
    """The stages that finished, the next one failed with `failed_detail`, the rest skipped."""
    report = Report(exercise, str(path), seed, stages=list(stages))
    done = {s.name for s in stages}
    todo = [name for name in STAGES if name not in done]
    if todo:
        report.stages.append(Stage(todo[0], FAIL, failed_detail))
        from attn_drill.i18n import t

        report.stages += [Stage(name, SKIP, t("evidence.core.engine.skipped")) for name in todo[1:]]
    return report
