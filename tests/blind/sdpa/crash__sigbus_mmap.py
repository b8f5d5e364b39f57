# Maps a temporary file, truncates it to 0 bytes and then reads the mapping: SIGBUS inside the function.
import mmap
import os
import tempfile

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    fd, path = tempfile.mkstemp()
    os.write(fd, b"\0" * 8192)
    mapping = mmap.mmap(fd, 8192)
    os.ftruncate(fd, 0)
    os.unlink(path)
    _ = mapping[4100]  # past the end of the (now empty) file: SIGBUS
    return q, q
