"""Score a blind batch through the installed CLI: each file checked as its exercise, its first error against the
slug its author meant, correct files held to a pass, and, when named, whether the line is the author's
`# MISTAKE` line.

usage: python scripts/blind_score.py [--cli attn-drill] [--seed 11] [MANIFEST.tsv]
       (default: tests/blind20/MANIFEST.tsv; columns exercise, file, expected_slug, mistake_line)
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", nargs="?", type=Path, default=ROOT / "tests" / "blind20" / "MANIFEST.tsv")
    parser.add_argument("--cli", default="attn-drill")
    parser.add_argument("--seed", default="11")
    args = parser.parse_args()
    rows = list(csv.DictReader(open(args.manifest, encoding="utf-8"), delimiter="\t"))
    by_exercise = collections.defaultdict(list)
    for r in rows:
        by_exercise[r["exercise"]].append(r)
    named = wrong = ok_pass = ok_total = line_right = lines = 0
    misses = []
    for exercise, rs in by_exercise.items():
        files = [str(ROOT / r["path"]) if r.get("path") else str(args.manifest.parent / exercise / r["file"])
                 for r in rs]  # `path`: where the file lives now, from the repo's root
        run = subprocess.run([args.cli, "check", *files, "-e", exercise, "--json", "--no-record", "--seed", args.seed],
                             capture_output=True, text=True, timeout=1800)
        try:  # one file: one report, indented; several: one report per line
            reports = [json.loads(run.stdout)]
        except json.JSONDecodeError:
            reports = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        for r, rep in zip(rs, reports):
            errors = [f for f in rep.get("findings", []) if f["level"] == "error"]
            first = errors[0]["slug"] if errors else ("PASS" if rep.get("passed") else "-")
            if r["expected_slug"] == "ok":
                ok_total += 1
                ok_pass += bool(rep.get("passed"))
                if not rep.get("passed"):
                    misses.append((exercise, r["file"], "ok", first))
                continue
            wrong += 1
            if first != r["expected_slug"]:
                misses.append((exercise, r["file"], r["expected_slug"], first))
                continue
            named += 1
            if r["mistake_line"].isdigit():
                lines += 1
                line_right += errors[0].get("line") == int(r["mistake_line"])
    print(f"named first: {named}/{wrong} ({100 * named / max(wrong, 1):.0f}%); correct files passing: "
          f"{ok_pass}/{ok_total}; the author's line, when named: {line_right}/{lines}")
    for exercise, file, want, got in misses:
        print(f"  miss  {exercise}/{file}: expected {want}, got {got}")
    return 0 if not misses else 1


if __name__ == "__main__":
    raise SystemExit(main())
