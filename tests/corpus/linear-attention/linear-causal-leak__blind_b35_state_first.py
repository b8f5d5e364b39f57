import torch
import torch.nn.functional as F

CHUNK = 8


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    dv = v.size(-1)
    Q = (F.elu(q) + 1).reshape(B * H, T, d)
    K = (F.elu(k) + 1).reshape(B * H, T, d)
    V = torch.cat([v.reshape(B * H, T, dv), v.new_ones(B * H, T, 1)], dim=-1)
    if not causal:
        y = torch.bmm(Q, torch.bmm(K.transpose(1, 2), V))
        return (y[..., :dv] / (y[..., dv:] + eps)).reshape(B, H, T, dv)

    c = max(1, min(CHUNK, T // 2))
    state = Q.new_zeros(B * H, d, dv + 1)
    ys = []
    for s in range(0, T, c):
        Qc, Kc, Vc = Q[:, s:s + c], K[:, s:s + c], V[:, s:s + c]
        n = Qc.shape[1]
        tri = torch.tril(torch.ones(n, n, dtype=Q.dtype, device=Q.device))
        state = state + torch.bmm(Kc.transpose(1, 2), Vc)  # MISTAKE
        ys.append(torch.bmm(torch.bmm(Qc, Kc.transpose(1, 2)) * tri, Vc) + torch.bmm(Qc, state))
    y = torch.cat(ys, dim=1)
    return (y[..., :dv] / (y[..., dv:] + eps)).reshape(B, H, T, dv)
