# 线性注意力 (Katharopoulos et al., 2020, "Transformers are RNNs")
import torch
import torch.nn.functional as F


def feature_map(x):
    # 特征映射 phi(x) = elu(x) + 1，保证非负
    return F.elu(x) + 1


def linear_attention(q, k, v, causal=False, eps=1e-6):
    B, H, T, d = q.shape
    outputs = []
    for h in range(H):  # 逐个头计算
        qh = feature_map(q[:, h])  # (B, T, d)
        kh = feature_map(k[:, h])
        vh = v[:, h]               # (B, T, dv)
        if causal:
            # 前缀和：第 i 个位置只看 j <= i
            kv = torch.cumsum(kh.unsqueeze(-1) * vh.unsqueeze(-2), dim=1)  # (B, T, d, dv)
            k_sum = torch.cumsum(kh, dim=1)                                 # (B, T, d)
            num = torch.matmul(qh.unsqueeze(-2), kv).squeeze(-2)            # (B, T, dv)
        else:
            kv = torch.matmul(kh.transpose(1, 2), vh)                       # (B, d, dv)
            k_sum = kh.sum(dim=1, keepdim=True)                             # (B, 1, d)
            num = torch.matmul(qh, kv)
        den = (qh * k_sum).sum(dim=-1, keepdim=True)  # 归一化项 phi(q)·z
        outputs.append(num / (den + eps))
    return torch.stack(outputs, dim=1)
