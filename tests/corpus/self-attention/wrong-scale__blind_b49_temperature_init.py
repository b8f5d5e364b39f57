import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, dk: int, dv: int, bias: bool = True):
        super().__init__()
        self.W_q = nn.Linear(dim, dk, bias=bias)
        self.W_k = nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)
        self.temperature = self.W_v.out_features ** 0.5  # MISTAKE: the value width, not the query/key width

    def forward(self, x, mask=None):
        queries, keys, values = self.W_q(x), self.W_k(x), self.W_v(x)
        energy = torch.bmm(queries / self.temperature, keys.transpose(1, 2))  # (B, T, T)
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -float("inf"))
        attention = torch.softmax(energy, dim=2)
        return torch.bmm(attention, values), attention
