import torch


def apply_rope(x, positions, base=10000.0):
    # pair i is the complex number x[i] + 1j * x[i + d/2]; turning it by theta is a product with e^{j theta}
    d = x.size(-1)
    h = d // 2
    real_t = torch.promote_types(x.dtype, torch.float32)
    exps = torch.arange(h, device=x.device, dtype=real_t) * (2.0 / d)
    freqs = torch.pow(torch.tensor(base, dtype=real_t, device=x.device), -exps)  # (h,)
    ang = torch.outer(positions.reshape(-1).to(real_t), freqs).reshape(*positions.shape, h)
    if positions.dim() == 2:
        ang = ang.unsqueeze(1)  # (B, 1, T, h): every head of a token turns alike
    turn = torch.polar(torch.ones_like(ang), ang)
    z = torch.complex(x[..., :h].to(real_t), x[..., h:].to(real_t)) * turn
    return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)
