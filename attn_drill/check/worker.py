"""The process that imports torch (once) and checks each file in turn.

Run by runner.py as `python -m attn_drill.check.worker FD SPEC_JSON`; it writes one JSON event per line
to file descriptor FD: {"event": "start"}, {"event": "stage"}, {"event": "report"}. The user's prints go
to this process's stdout, which the runner keeps apart.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path


def main(argv: list[str]) -> int:
    out = os.fdopen(int(argv[1]), "w", buffering=1, encoding="utf-8")
    spec = json.loads(argv[2])

    def send(event: dict) -> None:
        out.write(json.dumps(event) + "\n")
        out.flush()

    import torch  # noqa: F401 - the one slow import, paid before any clock starts

    from attn_drill.check.engine import check_file
    from attn_drill.check.trace import keep_dynamo_out

    keep_dynamo_out()
    torch.set_num_threads(1)  # tiny tensors: threads only cost start-up time
    for index, job in enumerate(spec["jobs"]):
        send({"event": "start", "index": index})
        try:
            report = check_file(Path(job["path"]), job["exercise"], spec["seed"],
                                emit=lambda stage: send({"event": "stage", "stage": asdict(stage)}))
        except Exception as e:  # a bug of ours: say so plainly, never as the user's mistake
            report = internal_error(job, spec["seed"], e)
        send({"event": "report", "report": report.to_wire()})
    return 0


def internal_error(job: dict, seed: int, exc: Exception):
    import traceback

    from attn_drill import findings
    from attn_drill.report import FAIL, Report, Stage

    report = Report(job["exercise"], job["path"], seed, stages=[Stage("load", FAIL, "the checker itself failed")])
    where = traceback.extract_tb(exc.__traceback__)[-1]
    report.findings.append(findings.make(
        "internal-error", f"{type(exc).__name__}: {exc} (in {Path(where.filename).name}:{where.lineno})", score=3.0))
    return report


if __name__ == "__main__":
    sys.exit(main(sys.argv))
