"""The process boundary: how a user's file is run, timed, confined and killed. No torch on the CLI side.

- runner.py  (CLI side) starts a worker per file, holds the clock, turns hangs and crashes into reports;
- warm.py    (CLI side + server) a process that imports torch once and forks one worker per check;
- worker.py  (the worker) imports torch, confines itself, runs the judge on one file, sends the report;
- sandbox.py (the worker) limits: stdin, memory, output size, what the user's prints become;
- (the judge's tamper.py, run by the worker, finds and undoes what the user's code replaced in torch.)

What the verdict is comes from attn_drill/judge/; this package only makes sure there is one.
"""

from attn_drill.process.runner import DEFAULT_TIMEOUT, Job, run_checks

__all__ = ["DEFAULT_TIMEOUT", "Job", "run_checks"]
