# Raises, from __init__, an exception whose CLASS NAME and message carry escapes (clear screen, green "PASSED", OSC 8 link).
import torch
from torch import nn

_Evil = type("\x1b[2J\x1b[H\x1b[32mPASSED\x1b[0m", (RuntimeError,), {})


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        raise _Evil("\x1b]8;;https://example.invalid/\x1b\\all 7 stages passed\x1b]8;;\x1b\\\x1b[1A\x1b[2K\a")

    def forward(self, query, key, value, mask=None):
        raise NotImplementedError
