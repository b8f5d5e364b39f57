"""Issue 18's line score: every corpus file with one `# MISTAKE` line, checked through the installed CLI, its first
finding's line against that line.

usage: python scripts/line_score.py [--cli attn-drill] [--seed 1234] [--by-slug] [--write-not-yet] [exercise ...]
  --write-not-yet  rewrite tests/lines_not_yet.tsv (the misses tests/test_corpus.py expects) from this run
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
NOT_YET = ROOT / "tests" / "lines_not_yet.tsv"


def marked(path: Path) -> int | None:
    """The line of the file's one `# MISTAKE` comment (one-mistake files only)."""
    head = path.stem.split("__")[0]
    if head.startswith("ok") or "+" in head:
        return None
    lines = [n for n, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if "# MISTAKE" in text]
    return lines[0] if len(lines) == 1 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exercises", nargs="*")
    parser.add_argument("--cli", default="attn-drill")
    parser.add_argument("--seed", default="1234")  # tests/test_corpus.py's
    parser.add_argument("--by-slug", action="store_true")
    parser.add_argument("--write-not-yet", action="store_true")
    args = parser.parse_args()
    by_exercise = collections.defaultdict(list)
    for p in sorted(CORPUS.glob("*/*.py")):
        if marked(p) is not None and (not args.exercises or p.parent.name in args.exercises):
            by_exercise[p.parent.name].append(p)
    rows = []
    for exercise, files in by_exercise.items():
        run = subprocess.run([args.cli, "check", *map(str, files), "-e", exercise, "--json", "--no-record",
                              "--seed", args.seed], capture_output=True, text=True, timeout=1800)
        try:  # one file: one report, indented; several: one report per line
            reports = [json.loads(run.stdout)]
        except json.JSONDecodeError:
            reports = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        for p, rep in zip(files, reports):
            errors = [f for f in rep.get("findings", []) if f["level"] == "error"]
            first = errors[0] if errors else {}
            rows.append({"file": f"{exercise}/{p.name}", "slug": p.stem.split("__")[0], "want": marked(p),
                         "named": first.get("slug"), "got": first.get("line")})
    right = [r for r in rows if r["named"] == r["slug"] and r["got"] == r["want"]]
    none = [r for r in rows if r["got"] is None]
    print(f"{len(rows)} marked files: the marked line {len(right)}, no line {len(none)}, "
          f"another line {len(rows) - len(right) - len(none)}")
    if args.by_slug:
        count = collections.defaultdict(collections.Counter)
        for r in rows:
            count[r["slug"]]["right" if r in right else "none" if r in none else "other"] += 1
        for slug, c in sorted(count.items(), key=lambda kv: -kv[1]["right"] + sum(kv[1].values())):
            print(f"  {slug:32} right {c['right']:3}  none {c['none']:3}  other line {c['other']:3}")
    if args.write_not_yet:
        head = [line for line in NOT_YET.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
        misses = sorted((r["file"], "-" if r["got"] is None else str(r["got"])) for r in rows if r not in right)
        NOT_YET.write_text("\n".join(head + [f"{f}\t{g}" for f, g in misses]) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
