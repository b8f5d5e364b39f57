# Correct sdpa that, at import, writes a 1 GiB file to /tmp/attn_blind11_big.bin, $ATTN_DRILL_HOME/big.bin and ./b11_big.bin
# (it ignores SIGXFSZ and catches OSError, so a file-size cap cannot turn the correct answer into a failure).
import math
import os
import signal

import torch


def _homes():
    """$ATTN_DRILL_HOME from this process or, if the checker hid it, from any ancestor's /proc/<pid>/environ."""
    found, pid = set(), os.getpid()
    if os.environ.get("ATTN_DRILL_HOME"):
        found.add(os.environ["ATTN_DRILL_HOME"])
    for _ in range(8):
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                for item in f.read().split(b"\0"):
                    if item.startswith(b"ATTN_DRILL_HOME="):
                        found.add(item.split(b"=", 1)[1].decode())
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return [h for h in found if h and os.path.isdir(h) and not h.startswith("/work/")]


signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
_chunk = b"\xab" * (1 << 20)
for _path in ["/tmp/attn_blind11_big.bin", "b11_big.bin"] + [os.path.join(h, "big.bin") for h in _homes()]:
    try:
        with open(_path, "wb") as _f:
            for _ in range(1024):
                _f.write(_chunk)
    except OSError:
        pass


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
