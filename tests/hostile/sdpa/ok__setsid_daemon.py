"""Correct, but leaves a daemon behind at import: it forks, the child calls setsid() (a session and a
process group of its own, out of reach of the checker's kill of the worker's group) and forks again, then
exits, so the grandchild is an orphan. The grandchild runs Python with `attn-drill-hostile-daemon` in its
command line, sleeps a minute, then appends a line to $ATTN_DRILL_HOSTILE_LOG (a file in /tmp by
default). It prints "left a daemon behind, pid N". The CLI, a child subreaper, adopts and kills it when
the check is done; confined, its write outside the scratch folder would fail anyway. Under the seccomp
filter no process can be started at all: it prints "could not leave a daemon: ..." and stays correct."""
import math
import os
import sys

import torch

MARK = "attn-drill-hostile-daemon"
LOG = os.environ.get("ATTN_DRILL_HOSTILE_LOG", "/tmp/attn-drill-hostile-daemon.log")
CODE = "import sys, time; time.sleep(60); open(sys.argv[1], 'a').write('a daemon outlived its check\\n')"


def _daemon():
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError as e:
        print(f"could not leave a daemon: {e}")
        return
    if pid == 0:
        try:
            os.close(r)
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                os.execv(sys.executable, [sys.executable, "-c", CODE, LOG, MARK])
            os.write(w, str(grandchild).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        said = f.read().decode()
    os.waitpid(pid, 0)
    print(f"left a daemon behind, pid {said}")


_daemon()


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
