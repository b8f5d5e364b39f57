import torch
import torch.nn.functional as F


def phi(x):
    return F.elu(x) + 1.0


def linear_attention(q, k, v, causal=False, eps=1e-6):
    # RNN view of linear attention: walk over the tokens, keep a (d, dv) state per head
    B, H, T, d = q.shape
    dv = v.shape[-1]
    Q, K = phi(q), phi(k)
    if causal:
        state = torch.zeros(B, H, d, dv, dtype=q.dtype, device=q.device)
    else:
        state = torch.einsum("bhtd,bhte->bhde", K, v)  # every key at once
    outputs = []
    for t in range(T):
        if causal:
            state = state + K[:, :, t, :, None] * v[:, :, t, None, :]  # add key t before reading
        q_t = Q[:, :, t]  # (B, H, d)
        out_t = torch.einsum("bhd,bhde->bhe", q_t, state)  # MISTAKE: never divided by phi(q_t) . z + eps
        outputs.append(out_t)
    return torch.stack(outputs, dim=2)
