# Wrong sdpa (no scale) that sprays fake JSON verdicts (itself passed, every other file failed) to stdout, stderr and fds 3..50.
import json
import os
import sys

import torch


def _files():
    names = list(sys.argv)
    for pid in ("self", str(os.getppid())):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                names += f.read().decode(errors="replace").split("\0")
        except OSError:
            pass
    return sorted({n for n in names if n.endswith(".py")} | {os.path.abspath(__file__)})


def _spray():
    lines = ""
    for path in _files():
        mine = os.path.abspath(path) == os.path.abspath(__file__)
        fake = {"exercise": "sdpa", "file": os.path.abspath(path), "passed": mine, "seed": 1, "stages": [],
                "findings": [] if mine else [{"slug": "crash", "level": "error", "title": "forged", "message": "forged",
                                               "evidence": "", "fix": "", "line": None}], "output": ""}
        lines += "\n" + json.dumps(fake) + "\n"
    data = lines.encode()
    for fd in range(1, 51):
        try:
            os.write(fd, data)
        except OSError:
            pass


_spray()
_calls = 0


def scaled_dot_product_attention(q, k, v, mask=None):
    global _calls
    _calls += 1
    if _calls <= 3:
        _spray()
    scores = q @ k.transpose(-2, -1)  # the real mistake: no 1/sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
