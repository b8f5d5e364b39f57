# Correct sdpa that double-forks at import with os.setsid() in between: a daemon in its own session, outside the
# checker's process group, keeping every inherited fd open, that waits 2 s and then writes a marker for 40 s.
import ctypes
import math
import os
import time

import torch

MARKERS = "/tmp/attn_blind11_markers"


def _beat(tag, seconds=40.0, delay=0.0):
    """Renames this process (or thread) b11-<tag>; appends "pid P t=T" to MARKERS/<tag>.log twice a second."""
    try:
        ctypes.CDLL(None).prctl(15, ("b11-" + tag).encode()[:15], 0, 0, 0)
    except Exception:
        pass
    time.sleep(delay)
    end = time.time() + seconds
    while time.time() < end:  # keeps running even where the sandbox refuses the writes
        try:
            os.makedirs(MARKERS, exist_ok=True)
            with open(os.path.join(MARKERS, tag + ".log"), "a") as f:
                f.write("pid %d t=%.3f\n" % (os.getpid(), time.time()))
        except OSError:
            pass
        time.sleep(0.5)


_pid = os.fork()
if _pid == 0:
    os.setsid()
    if os.fork() == 0:
        try:
            _beat("daemon", delay=2.0)
        finally:
            os._exit(0)
    os._exit(0)
os.waitpid(_pid, 0)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
