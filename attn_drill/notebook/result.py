"""CheckResult: what `ad.check` returns. No torch.

It holds the report the CLI would draw and says it in three ways: attributes to assert on (`passed`,
`findings[0].slug`), `str()` (the plain report, as `attn-drill check` prints it to a pipe) and `_repr_html_`
(the same report as HTML, the named mistake first, which a notebook shows).
"""

from __future__ import annotations

from pathlib import Path

from attn_drill.report import Finding, Report


class CheckResult:
    def __init__(self, report: Report, source: str = ""):
        self.report = report
        self.source = source  # the text that was checked

    passed = property(lambda self: self.report.passed)
    exercise = property(lambda self: self.report.exercise)
    seed = property(lambda self: self.report.seed)
    file = property(lambda self: Path(self.report.file))

    @property
    def findings(self) -> list[Finding]:
        self.report.sort_findings()
        return list(self.report.findings)

    def _console(self, width: int = 100):
        import io

        from rich.console import Console

        from attn_drill import catalogue
        from attn_drill.render import report as render

        console = Console(file=io.StringIO(), width=width, record=True, highlight=False, emoji=False,
                          color_system="truecolor", force_terminal=True, force_jupyter=False)
        render.report(console, self.report, catalogue.get(self.exercise))
        return console

    def __str__(self) -> str:
        from attn_drill import catalogue
        from attn_drill.render import report as render

        return render.plain(self.report, catalogue.get(self.exercise))

    def __repr__(self) -> str:
        verdict = "passed" if self.passed else "not started" if self.report.not_started else "failed"
        first = next((f.slug for f in self.findings if f.level == "error"), "") if not self.passed else ""
        return f"<CheckResult {self.exercise} {verdict}{' ' + first if first else ''}>"

    def _repr_html_(self) -> str:
        html = self._console().export_html(inline_styles=True, code_format="<pre style=\"{stylesheet}\">{code}</pre>")
        return f'<div class="attn-drill-report">{html}</div>'

    def repro(self) -> str:
        """The failing case as a script (as `attn-drill repro` writes it, beside the checked file): its text.
        ValueError when there is no case to replay (a pass, or a failure before values were compared)."""
        from attn_drill.practice import repro
        from attn_drill.store.attempts import Failure, digest

        rep = self.report
        failed = next((s for s in rep.stages if s.status == "fail"), None)
        if rep.passed or rep.case is None or failed is None:
            raise ValueError("no failing case to replay: repro replays a case that gave wrong numbers or shapes")
        slug = rep.errors[0].slug if rep.errors else ""
        failure = Failure(digest(self.source.encode()), rep.seed, slug, failed.name, failed.detail, rep.case, 0.0,
                          rep.file)
        path, _ = repro.write(rep.exercise, failure, lambda p: p)
        return Path(path).read_text(encoding="utf-8")
