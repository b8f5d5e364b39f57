"""Checking a user's file. This side (the CLI's process) never imports torch.

`run_checks` starts one worker process (`attn_drill.check.worker`), which imports torch once and checks
every file in turn; this side enforces the time limit and turns a hang or a crash into a verdict.
"""

from attn_drill.check.runner import DEFAULT_TIMEOUT, Job, run_checks

__all__ = ["DEFAULT_TIMEOUT", "Job", "run_checks"]
