"""`check FILES... --junit report.xml`: the batch's verdicts as JUnit XML, which CI systems show per file (GitLab
and Jenkins by themselves, GitHub Actions through a reporter action). No torch.

The layout is the Apache Ant JUnit schema's, the strictest that CI tools read: `testsuites` holding one
`testsuite` (name, package, id, timestamp without a zone, hostname, counts, time; then `properties`, the test
cases, `system-out` and `system-err`), one `testcase` per file (classname `attn-drill.<exercise>`, name the
file as given, time). A file that fails has a `failure` whose type is the first finding's slug, whose message is
"slug: title", and whose text is the plain report; our own failure (internal-error) and a file that could
not be checked are `error`s; a skeleton not started is a `failure` of type not-started.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from xml.etree import ElementTree as ET

from attn_drill.report import Report


def write(path: Path, results: list[tuple[str, str, Report | str]], started: float) -> None:
    """results: (file as given, exercise id or "", its Report or why it could not be checked)."""
    suite = ET.Element("testsuite", name="attn-drill check", package="attn-drill", id="0",
                       timestamp=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
                       hostname=socket.gethostname() or "localhost")
    ET.SubElement(suite, "properties")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total = 0.0
    for file, exercise, rep in results:
        counts["tests"] += 1
        case = ET.SubElement(suite, "testcase", classname=f"attn-drill.{exercise or 'unknown'}", name=file,
                             time="0")
        if isinstance(rep, str):
            counts["errors"] += 1
            ET.SubElement(case, "error", message=rep, type="not-checked").text = rep
            continue
        case.set("time", f"{rep.seconds:.3f}")
        total += rep.seconds
        if rep.passed:
            continue
        text = _plain(rep)
        if rep.ours:
            counts["errors"] += 1
            ET.SubElement(case, "error", message="internal-error: the checker itself failed",
                          type="internal-error").text = text
        elif rep.not_started:
            counts["failures"] += 1
            ET.SubElement(case, "failure", message="not started: the skeleton's TODOs are not filled in",
                          type="not-started").text = text
        else:
            counts["failures"] += 1
            first = rep.errors[0] if rep.errors else None
            slug = first.slug if first else "failed"
            ET.SubElement(case, "failure", message=f"{slug}: {first.title}" if first else "failed",
                          type=slug).text = text
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", f"{total:.3f}")
    ET.SubElement(suite, "system-out")
    ET.SubElement(suite, "system-err")
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    data = ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"
    from attn_drill.store.atomic import write_atomic

    write_atomic(Path(path), data)


def _plain(rep: Report) -> str:
    from attn_drill import catalogue
    from attn_drill.render import report as render

    return render.plain(rep, catalogue.get(rep.exercise))
