#!/usr/bin/env python
"""Save-to-report latency of `attn-drill watch`. A benchmark, not a test: rerun at will.

    python scripts/bench_watch.py                 # 15 saves of mha, median latency
    python scripts/bench_watch.py --saves 30 --exercise sdpa --json

It runs the real command (`attn-drill watch`, output to a pipe) on a practice file in a temp folder, then
saves the file N times, the way editors do (write a temp file, rename it over the old one), alternating a
correct version and the skeleton so every save changes the verdict. The latency of one save is the time
from the rename to the report's verdict line (PASSED/FAILED) arriving on the pipe. Target (issue 5):
median <= 0.3 s on the dev machine (2 CPU cores).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from attn_drill import catalogue  # noqa: E402  (no torch in there)

TARGET = 0.3


def attn_drill_exe() -> list[str]:
    here = Path(sys.executable).parent / "attn-drill"
    if here.exists():
        return [str(here)]
    found = shutil.which("attn-drill")
    return [found] if found else [sys.executable, "-m", "attn_drill"]


class Verdicts:
    """Lines from the watch process; `next()` waits for the next PASSED/FAILED line and its arrival time."""

    def __init__(self, stream):
        self.fd, self.buf = stream.fileno(), b""

    def next(self, limit: float) -> tuple[str, float]:
        deadline = time.monotonic() + limit
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                if text.startswith(("PASSED", "FAILED")):
                    return text.split()[0], time.perf_counter()
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError(f"no report within {limit:g} s")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError("watch exited")
            self.buf += chunk


def save(path: Path, data: bytes) -> float:
    """An editor's atomic save; returns the time of the rename."""
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_bytes(data)
    t = time.perf_counter()
    os.replace(tmp, path)
    return t


def run(exercise: str, saves: int, pause: float) -> dict:
    ex = catalogue.get(exercise)
    versions = [(ex.reference.read_bytes(), "PASSED"), (ex.skeleton.read_bytes(), "FAILED")]
    with tempfile.TemporaryDirectory(prefix="attn-drill-bench-watch-") as tmp:
        work = Path(tmp)
        env = dict(os.environ, ATTN_DRILL_HOME=str(work / "home"), NO_COLOR="1", COLUMNS="100")
        subprocess.run(attn_drill_exe() + ["start", exercise], cwd=work, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        path = work / "attn-practice" / ex.file
        t0 = time.perf_counter()
        proc = subprocess.Popen(attn_drill_exe() + ["watch", exercise], cwd=work, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            verdicts = Verdicts(proc.stdout)
            verdicts.next(180)  # the first report: the skeleton as it stands, after torch has loaded
            first = time.perf_counter() - t0
            latencies, wrong = [], 0
            for i in range(saves):
                data, expected = versions[i % 2]
                t_save = save(path, data)
                verdict, t_seen = verdicts.next(30)
                latencies.append(t_seen - t_save)
                wrong += verdict != expected
                time.sleep(pause)
        finally:
            proc.terminate()  # SIGTERM: the watch's own clean-up is tested elsewhere
            proc.wait(timeout=30)
    return {"exercise": exercise, "saves": saves, "first_report_s": round(first, 3),
            "median_s": round(statistics.median(latencies), 3), "min_s": round(min(latencies), 3),
            "max_s": round(max(latencies), 3),
            "p90_s": round(sorted(latencies)[max(0, int(0.9 * len(latencies)) - 1)], 3),
            "wrong_verdicts": wrong, "target_s": TARGET, "ok": statistics.median(latencies) <= TARGET and not wrong}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--saves", type=int, default=15, help="saves to time (default 15)")
    ap.add_argument("--exercise", default="mha", help="exercise to watch (default mha)")
    ap.add_argument("--pause", type=float, default=0.3, help="seconds between saves (default 0.3)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args()
    r = run(args.exercise, max(1, args.saves), args.pause)
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        print(f"attn-drill watch {r['exercise']}: {r['saves']} saves (python {sys.version.split()[0]})")
        print(f"first report (torch loading): {r['first_report_s']:.2f} s")
        print(f"save -> report: median {r['median_s']:.3f} s, min {r['min_s']:.3f} s, p90 {r['p90_s']:.3f} s, "
              f"max {r['max_s']:.3f} s")
        print(f"target: median <= {TARGET} s: {'ok' if r['ok'] else 'OVER TARGET'}"
              + (f" ({r['wrong_verdicts']} wrong verdicts)" if r["wrong_verdicts"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
