import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    # q: (..., Tq, d)  k: (..., Tk, d)  v: (..., Tk, dv)
    scale = k.shape[-2] ** -0.5  # MISTAKE: shape[-2] is the key count, not the head dim
    logits = torch.einsum("...qd,...kd->...qk", q, k) * scale
    if mask is not None:
        logits = torch.where(mask, logits, torch.finfo(logits.dtype).min)
    attn = logits.softmax(dim=-1)
    return torch.einsum("...qk,...kv->...qv", attn, v), attn
