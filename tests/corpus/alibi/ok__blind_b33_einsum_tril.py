import torch


def alibi_slopes(num_heads: int) -> torch.Tensor:
    def geometric(n):
        exps = torch.arange(1, n + 1, dtype=torch.float64)
        return torch.pow(2.0, -8.0 * exps / n)

    p = 1
    while p * 2 <= num_heads:
        p *= 2
    base = geometric(p)
    if p == num_heads:
        return base.float()
    extra = geometric(2 * p)[::2][: num_heads - p]
    return torch.cat([base, extra]).float()


def alibi_attention(q, k, v, causal=True):
    *_, Tq, d = q.shape
    Tk = k.size(-2)
    m = alibi_slopes(q.size(1)).to(q)
    offset = Tk - Tq
    i = torch.arange(Tq, device=q.device).unsqueeze(1) + offset
    j = torch.arange(Tk, device=q.device).unsqueeze(0)
    bias = -(m.view(-1, 1, 1) * (i - j).abs())
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * d ** -0.5 + bias
    if causal:
        allowed = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(diagonal=offset)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    out = torch.einsum("bhqk,bhkd->bhqd", weights, v)
    return out, weights
