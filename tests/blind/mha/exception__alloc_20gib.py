# In forward, allocates 20 GiB with torch.empty and touches every page (fill_): the memory cap must turn it into an
# `exception` that says it ran out of memory, without the machine swapping or the OOM killer picking another process.
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
        big = torch.empty(20 * 2**30, dtype=torch.uint8)
        big.fill_(1)
        raise AssertionError("20 GiB were allocated and touched: no memory cap")
