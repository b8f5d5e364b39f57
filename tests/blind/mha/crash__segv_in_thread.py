# Correct-looking mha whose forward starts a helper thread that reads an unmapped address (SIGSEGV from a non-main thread) and joins it.
import ctypes
import threading

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        t = threading.Thread(target=ctypes.string_at, args=(0xDEAD00000000, 64))
        t.start()
        t.join()
        raise AssertionError("still alive after a segfault in a thread")
