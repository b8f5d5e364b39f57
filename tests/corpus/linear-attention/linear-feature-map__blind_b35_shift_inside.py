import torch
import torch.nn.functional as F


class EluPlusOne:
    """Feature map of 'Transformers are RNNs'."""

    def __call__(self, x):
        return F.elu(x + 1)  # MISTAKE


def linear_attention(q, k, v, causal=False, eps=1e-6):
    fmap = EluPlusOne()
    Q, K = fmap(q), fmap(k)
    B, H, T, d = Q.shape
    if not causal:
        kv = torch.einsum("bhsd,bhsm->bhdm", K, v)
        ksum = K.sum(dim=2)
        num = torch.einsum("bhld,bhdm->bhlm", Q, kv)
        den = torch.einsum("bhld,bhd->bhl", Q, ksum)[..., None]
        return num / (den + eps)
    state = torch.zeros(B, H, d, v.shape[-1], dtype=q.dtype, device=q.device)
    ksum = torch.zeros(B, H, d, dtype=q.dtype, device=q.device)
    rows = []
    for i in range(T):
        state = state + torch.einsum("bhd,bhm->bhdm", K[:, :, i], v[:, :, i])
        ksum = ksum + K[:, :, i]
        num = torch.einsum("bhd,bhdm->bhm", Q[:, :, i], state)
        den = torch.einsum("bhd,bhd->bh", Q[:, :, i], ksum)[..., None]
        rows.append(num / (den + eps))
    return torch.stack(rows, dim=2)
