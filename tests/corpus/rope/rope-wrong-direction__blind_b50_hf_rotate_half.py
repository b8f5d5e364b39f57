import torch


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((x2, -x1), dim=-1)  # MISTAKE: (x2, -x1) turns each pair by -theta; it should be (-x2, x1)


def apply_rope(x, positions, base=10000.0):
    dim = x.shape[-1]
    compute_dtype = torch.promote_types(x.dtype, torch.float32)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=x.device, dtype=compute_dtype) / dim))
    position_ids = positions if positions.dim() == 2 else positions[None, :]  # (B or 1, T)
    inv_freq_expanded = inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].to(compute_dtype)
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)  # (B or 1, T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = emb.cos().to(x.dtype).unsqueeze(1)  # (B or 1, 1, T, d)
    sin = emb.sin().to(x.dtype).unsqueeze(1)
    return (x * cos) + (rotate_half(x) * sin)
