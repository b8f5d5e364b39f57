import math

import torch


def alibi_slopes(num_heads):
    p = 1
    while p * 2 <= num_heads:
        p *= 2
    main = [2 ** (-8 * (h + 1) / p) for h in range(p)]
    extra = [2 ** (-8 * (h + 1) / (2 * p)) for h in range(0, 2 * p, 2)]
    return torch.tensor(main + extra[: num_heads - p], dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    H = q.size(1)
    Tq = q.size(2)
    Tk = k.size(2)
    d = q.size(3)
    m = alibi_slopes(H).to(dtype=q.dtype, device=q.device)
    key_idx = torch.arange(Tk, device=q.device, dtype=q.dtype)
    offset = Tk - Tq
    outs, ws = [], []
    for h in range(H):
        s = q[:, h] @ k[:, h].transpose(-1, -2) / math.sqrt(d)
        s = s + m[h] * key_idx  # MISTAKE
        if causal:
            allowed = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(diagonal=offset)
            s = s.masked_fill(~allowed, float("-inf"))
        p = torch.softmax(s, dim=-1)
        ws.append(p)
        outs.append(p @ v[:, h])
    return torch.stack(outs, dim=1), torch.stack(ws, dim=1)
