"""A correct SDPA that first tries to read what is not its own: a secret beside the practice folder
(ATTN_DRILL_HOSTILE_SECRET), attn-drill's home, another process's environment, /etc, and a non-Python file
next to it, and prints what it got. Under Landlock's read rules each read is refused (PermissionError); the
helper module beside it and its own /proc files stay readable."""
import math
import os

import torch

TRIES = {
    "secret": os.environ.get("ATTN_DRILL_HOSTILE_SECRET", "/nonexistent"),
    "home": os.path.join(os.environ.get("ATTN_DRILL_HOME", "/nonexistent"), "bait.json"),
    "parent environ": f"/proc/{os.getppid()}/environ",
    "etc": "/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd",
    "beside": os.path.join(os.path.dirname(os.path.abspath(__file__)), "notes.txt"),
    "own status": "/proc/self/status",
}
for name, path in TRIES.items():
    try:
        with open(path, "rb") as f:
            f.read(16)
        print(f"read {name}: ok")
    except OSError as e:
        print(f"read {name}: {type(e).__name__}")


def scaled_dot_product_attention(q, k, v, mask=None):
    """q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv); mask bool, broadcastable to (..., Tq, Tk).

    Returns out (..., Tq, dv) and weights (..., Tq, Tk).
    """
    d = q.size(-1)
    # why 1/sqrt(d): q.k sums d products, so its spread grows like sqrt(d); this keeps softmax out of saturation
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (..., Tq, Tk)
    if mask is not None:
        # True = may attend; -inf before the softmax gives a hidden key exactly zero probability
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk), each row sums to 1 over the keys
    if mask is not None:
        # a query that sees no key: softmax of an all -inf row is NaN; give zeros, as PyTorch's SDPA does
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    out = weights @ v  # (..., Tq, dv)
    return out, weights
