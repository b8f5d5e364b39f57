"""nn.Softmax(dim=1) on (B, H, T, T) scores: normalises over the heads."""

from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h, self.hd = num_heads, d_model // num_heads
        self.W_qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        qkv = self.W_qkv(x).reshape(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        s = q @ k.transpose(-1, -2) / self.hd ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(1), -1e30)
        p = self.softmax(s)
        o = (p @ v).transpose(1, 2).reshape(b, t, dm)
        return self.W_o(o), p
