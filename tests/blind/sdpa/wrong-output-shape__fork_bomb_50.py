# A bounded fork bomb: on the first call it forks until 50 children exist, each spinning forever, then waits for them;
# the checker must report a timeout, keep the machine usable and leave none of the 50 alive.
import ctypes
import os

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    children = []
    for _ in range(50):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                ctypes.CDLL(None).prctl(15, b"b11-forkbomb", 0, 0, 0)
            except Exception:
                pass
            while True:
                pass
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return q, q
