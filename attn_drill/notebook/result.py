"""CheckResult and ShownMaps: what `ad.check` and `ad.show` return. No torch.

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
        from attn_drill import catalogue
        from attn_drill.render import report as render

        console = render.recording(width)
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
        from attn_drill.render import report as render

        return f'<div class="attn-drill-report">{render.html(self._console())}{self._pictures()}</div>'

    def _pictures(self) -> str:
        """Each finding's heatmaps (yours beside the expected) as an image under the report, where matplotlib is
        installed (the report above draws them in text either way). A picture that fails is left out."""
        import importlib.util

        pics = [f.picture for f in self.findings if f.picture]
        if not pics or importlib.util.find_spec("matplotlib") is None:
            return ""
        import base64

        from attn_drill.render import png

        out = []
        for pic in pics:
            try:
                data = png.finding_picture(pic)
            except Exception:  # noqa: BLE001 - a drawing that fails never sinks the report
                data = None
            if data:
                out.append(f'<img alt="heatmaps" src="data:image/png;base64,{base64.b64encode(data).decode()}">')
        return "".join(out)

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


class ShownMaps:
    """What ad.show returns: the maps (`.result`, the worker's dict) drawn as text and, with matplotlib, a PNG;
    or why there are none (`.why`)."""

    def __init__(self, exercise: str, result, seed: int):
        self.exercise, self.seed = exercise, seed
        self.result = result if isinstance(result, dict) and "maps" in result else None
        if self.result is not None:
            self.why = ""
        elif isinstance(result, dict):
            v = result.get("verdict") or {}
            self.why = f"{v.get('slug', '')}: {v.get('title', '')} {v.get('evidence', '')}".strip(": ") or \
                str(result.get("error", "no maps"))
        else:  # a Report: the run timed out or crashed
            result.sort_findings()
            worst = result.errors[0] if result.errors else None
            self.why = f"{worst.slug}: {worst.title}" if worst else "no result"

    def _console(self):
        from attn_drill.render import report as render, show as render_maps

        console = render.recording()
        render_maps.show(console, self.result, self.exercise, f"{self.exercise} (notebook)", self.seed)
        return console

    def __str__(self) -> str:
        return self._console().export_text() if self.result else f"no maps: {self.why}\n"

    def __repr__(self) -> str:
        return f"<ShownMaps {self.exercise}{'' if self.result else ': ' + self.why}>"

    def _repr_html_(self) -> str:
        if not self.result:
            import html

            return f"<pre>no maps: {html.escape(self.why)}</pre>"
        from attn_drill.render import report as render

        return render.html(self._console())

    def _repr_png_(self) -> bytes | None:
        """The maps as an image (the numbers of the weights readable), where matplotlib is installed."""
        if not self.result:
            return None
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            return None
        import tempfile
        from pathlib import Path

        from attn_drill.render import png as render_png

        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "maps.png"
            render_png.write(target, self.result, f"ad.show({self.exercise!r}), seed {self.seed}")
            return target.read_bytes()
