"""After the README's first command in a new virtual environment: does `attn-drill check` work for a new user?

Run by .ci/run from the clone's root, with that environment active (stdlib only: it must not need what the
README's install does not bring). Every check goes through the installed console script:
- every model answer passes, as a batch;
- the sdpa skeleton (the file `attn-drill start sdpa` writes) is NOT STARTED (exit 1, no mistake named);
- a file that lacks the scale is named missing-scale, first.
Exit 0 when all hold; otherwise each failure on a line, and exit 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def check(*args: str) -> tuple[int, list[dict]]:
    """`attn-drill check ARGS --json --no-record`: its exit status and its reports (one JSON object a line)."""
    run = subprocess.run(["attn-drill", "check", *args, "--json", "--no-record"], capture_output=True, text=True,
                         timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    try:
        reports = [json.loads(line) for line in lines] if len(lines) > 1 else [json.loads(run.stdout)]
    except json.JSONDecodeError:
        reports = []
    if not reports:
        print(run.stdout, run.stderr, sep="\n", file=sys.stderr)
    return run.returncode, reports


def first_error(report: dict) -> str:
    errors = [f["slug"] for f in report.get("findings", []) if f.get("level") == "error"]
    return errors[0] if errors else "-"


def main() -> int:
    problems = []
    answers = sorted((ROOT / "reference").glob("*.py"))
    code, reports = check(*map(str, answers))
    for answer, rep in zip(answers, reports):
        if not rep.get("passed"):
            problems.append(f"model answer {answer.name}: failed with {first_error(rep)}")
    if code != 0 or len(reports) != len(answers):
        problems.append(f"model answers: exit {code}, {len(reports)} reports for {len(answers)} files")

    code, reports = check(str(ROOT / "exercises" / "sdpa.py"), "--exercise", "sdpa")  # the skeleton, untouched
    if code != 1 or not reports or not reports[0].get("not_started") or first_error(reports[0]) != "-":
        problems.append(f"skeleton: exit {code}, expected NOT STARTED: {reports}")

    no_scale = ROOT / "tests" / "corpus" / "sdpa" / "missing-scale__no_div.py"
    code, reports = check(str(no_scale), "--exercise", "sdpa")
    if code != 1 or not reports or first_error(reports[0]) != "missing-scale":
        problems.append(f"{no_scale.name}: exit {code}, first error {reports and first_error(reports[0])}")

    for p in problems:
        print(f"fresh install: {p}", file=sys.stderr)
    if not problems:
        print(f"fresh install: {len(answers)} model answers pass, the skeleton is NOT STARTED, "
              "missing-scale is named")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
