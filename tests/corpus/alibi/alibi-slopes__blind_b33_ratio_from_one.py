import torch


def _geometric(n):
    ratio = 2.0 ** (-8.0 / n)
    return [ratio ** h for h in range(n)]  # MISTAKE


def alibi_slopes(num_heads):
    if num_heads & (num_heads - 1) == 0:
        return torch.tensor(_geometric(num_heads), dtype=torch.float32)
    p = 1 << (num_heads.bit_length() - 1)
    vals = _geometric(p) + _geometric(2 * p)[::2][: num_heads - p]
    return torch.tensor(vals, dtype=torch.float32)


def alibi_attention(q, k, v, causal=True):
    d = q.size(-1)
    Tq, Tk = q.size(-2), k.size(-2)
    slopes = alibi_slopes(q.size(1)).to(device=q.device, dtype=q.dtype)
    i = torch.arange(Tq, device=q.device).view(-1, 1) + Tk - Tq
    j = torch.arange(Tk, device=q.device).view(1, -1)
    dist = torch.where(j > i, j - i, i - j)
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / d ** 0.5
    scores = scores - slopes.view(1, -1, 1, 1) * dist
    if causal:
        keep = torch.tril(torch.ones(Tq, Tk, dtype=torch.bool, device=q.device), diagonal=Tk - Tq)
        scores = scores.masked_fill(~keep, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return torch.einsum("bhij,bhjd->bhid", w, v), w
