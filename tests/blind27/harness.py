"""Blind-batch harness: compares every file in MANIFEST.tsv with reference
implementations written from the contract (float64, atol 1e-8)."""
import csv
import importlib.util
import math
import os
import sys
import traceback

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ATOL = 1e-8
DT = torch.float64


# ---------------------------------------------------------------- references
def ref_sliding_window(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    p = torch.arange(Tq)[:, None] + (Tk - Tq)
    j = torch.arange(Tk)[None, :]
    allowed = (j <= p) & (j > p - window)
    s = s.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        col = sinks.to(s.dtype).view(1, H, 1, 1).expand(B, H, Tq, 1)
        full = torch.cat([s, col], dim=-1)
        w = torch.softmax(full, dim=-1)[..., :Tk]
    else:
        w = torch.softmax(s, dim=-1)
    return w @ v, w


class RefRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class RefSwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


def ref_rope(x, positions, base):
    d = x.shape[-1]
    half = d // 2
    i = torch.arange(half, dtype=x.dtype)
    theta = positions.to(x.dtype)[..., None] * base ** (-2 * i / d)  # (T, h) / (B, T, h)
    theta = theta[None, None] if theta.dim() == 2 else theta[:, None]
    c, s = theta.cos(), theta.sin()
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1)


class RefLlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.H, self.Hkv, self.d, self.base = num_heads, num_kv_heads, d_model // num_heads, rope_base
        self.attn_norm = RefRMSNorm(d_model, eps)
        self.ffn_norm = RefRMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = RefSwiGLU(d_model, d_ff)

    def forward(self, x, positions=None):
        B, T, D = x.shape
        H, Hkv, d = self.H, self.Hkv, self.d
        if positions is None:
            positions = torch.arange(T)
        y = self.attn_norm(x)
        q = self.W_q(y).view(B, T, H, d).transpose(1, 2)
        k = self.W_k(y).view(B, T, Hkv, d).transpose(1, 2)
        v = self.W_v(y).view(B, T, Hkv, d).transpose(1, 2)
        q, k = ref_rope(q, positions, self.base), ref_rope(k, positions, self.base)
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(d)
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, D)
        h = x + self.W_o(o)
        return h + self.ffn(self.ffn_norm(h))


# ---------------------------------------------------------------- cases
def sw_cases():
    g = torch.Generator().manual_seed(0)
    out = []
    # (B, H, Tq, Tk, d, window, sinks?)
    for B, H, Tq, Tk, d, win, sk in [
        (2, 3, 9, 9, 8, 3, False),
        (2, 3, 9, 9, 8, 3, True),
        (2, 3, 9, 9, 8, 1, False),
        (2, 3, 9, 9, 8, 1, True),
        (3, 2, 4, 11, 16, 4, False),
        (3, 2, 4, 11, 16, 4, True),
        (2, 3, 5, 12, 8, 1, True),
        (2, 4, 1, 10, 8, 5, True),
        (1, 3, 12, 12, 4, 6, False),
        (2, 3, 6, 14, 8, 9, True),
    ]:
        assert Tk > win + 2
        q = torch.randn(B, H, Tq, d, generator=g, dtype=DT)
        k = torch.randn(B, H, Tk, d, generator=g, dtype=DT)
        v = torch.randn(B, H, Tk, d, generator=g, dtype=DT)
        sinks = torch.randn(H, generator=g, dtype=DT) * 3 if sk else None
        out.append((f"B{B}H{H}Tq{Tq}Tk{Tk}w{win}{'s' if sk else ''}", q, k, v, win, sinks))
    return out


def close(a, b):
    return (isinstance(a, torch.Tensor) and a.shape == b.shape
            and torch.allclose(a, b, atol=ATOL, rtol=0))


def check_sliding(mod):
    """Return list of (case, verdict) where verdict is 'ok' or a reason."""
    res = []
    for name, q, k, v, win, sinks in sw_cases():
        ro, rw = ref_sliding_window(q, k, v, win, sinks)
        try:
            got = mod.sliding_window_attention(q.clone(), k.clone(), v.clone(), win,
                                               None if sinks is None else sinks.clone())
            o, w = got
        except Exception as e:
            res.append((name, f"raised {type(e).__name__}: {e}"))
            continue
        if not isinstance(o, torch.Tensor) or o.shape != ro.shape:
            res.append((name, f"out shape {getattr(o, 'shape', type(o))} != {tuple(ro.shape)}"))
        elif not isinstance(w, torch.Tensor) or w.shape != rw.shape:
            res.append((name, f"weights shape {getattr(w, 'shape', type(w))} != {tuple(rw.shape)}"))
        elif not close(o, ro):
            res.append((name, f"out differs (max {(o - ro).abs().nan_to_num(1e9).max():.3g})"))
        elif not close(w, rw):
            res.append((name, f"weights differ (max {(w - rw).abs().nan_to_num(1e9).max():.3g})"))
        else:
            res.append((name, "ok"))
    return res


def randomise(m, g):
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n.endswith("norm.weight"):
                p.copy_(1 + 0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
            else:
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) / math.sqrt(p.shape[-1]))


def copy_by_name(src, dst):
    sp = dict(src.named_parameters())
    dp = dict(dst.named_parameters())
    missing = set(sp) - set(dp)
    if missing:
        raise KeyError(f"missing parameters {sorted(missing)}")
    with torch.no_grad():
        for n, p in sp.items():
            if dp[n].shape != p.shape:
                raise ValueError(f"{n}: shape {tuple(dp[n].shape)} != {tuple(p.shape)}")
            dp[n].copy_(p)


def llama_cases():
    # (B, T, D, H, Hkv, d_ff, base, eps, positions-kind)
    return [
        (2, 7, 48, 6, 3, 40, 10000.0, 1e-6, "none"),
        (2, 7, 48, 6, 2, 40, 500.0, 0.1, "none"),
        (3, 6, 64, 4, 2, 72, 10000.0, 1e-6, "T"),
        (3, 6, 64, 4, 2, 72, 500.0, 0.1, "BT"),
        (2, 8, 48, 6, 3, 40, 500.0, 1e-6, "T"),
        (2, 8, 48, 6, 2, 40, 10000.0, 0.1, "BT"),
    ]


def make_positions(kind, B, T, g):
    if kind == "none":
        return None
    if kind == "T":
        gaps = torch.randint(1, 5, (T,), generator=g)
        return torch.cumsum(gaps, 0) - gaps[0] + 3
    gaps = torch.randint(1, 6, (B, T), generator=g)
    return torch.cumsum(gaps, 1) + torch.arange(B)[:, None] * 7


def check_llama(mod):
    res = []
    g = torch.Generator().manual_seed(1)
    for ci, (B, T, D, H, Hkv, F, base, eps, pk) in enumerate(llama_cases()):
        name = f"c{ci}:B{B}T{T}D{D}H{H}kv{Hkv}base{base:g}eps{eps:g}pos{pk}"
        torch.manual_seed(100 + ci)
        ref = RefLlamaBlock(D, H, Hkv, F, base, eps).to(DT)
        randomise(ref, g)
        x = torch.randn(B, T, D, generator=g, dtype=DT)
        pos = make_positions(pk, B, T, g)
        try:
            blk = mod.LlamaBlock(D, H, Hkv, F, rope_base=base, eps=eps).to(DT).eval()
            copy_by_name(ref, blk)
            # standalone sub-modules
            n = mod.RMSNorm(D, eps).to(DT)
            n.weight.data.copy_(ref.attn_norm.weight)
            f = mod.SwiGLU(D, F).to(DT)
            copy_by_name(ref.ffn, f)
            with torch.no_grad():
                sub_ok = close(n(x), ref.attn_norm(x)) and close(f(x), ref.ffn(x))
                exp = ref(x, pos)
                got = blk(x.clone(), None if pos is None else pos.clone())
        except Exception as e:
            res.append((name, f"raised {type(e).__name__}: {e}"))
            continue
        if not sub_ok:
            res.append((name, "RMSNorm/SwiGLU standalone differ"))
        elif not isinstance(got, torch.Tensor) or got.shape != exp.shape:
            res.append((name, f"shape {getattr(got, 'shape', type(got))} != {tuple(exp.shape)}"))
        elif not close(got, exp):
            res.append((name, f"out differs (max {(got - exp).abs().nan_to_num(1e9).max():.3g})"))
        else:
            res.append((name, "ok"))
    return res


def load(path):
    spec = importlib.util.spec_from_file_location(
        "cand_" + os.path.basename(os.path.dirname(path)).replace("-", "_") + "_" +
        os.path.basename(path)[:-3], path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def self_test():
    # positions 0..T-1 plus a constant must give exactly the default output
    g = torch.Generator().manual_seed(5)
    ref = RefLlamaBlock(48, 6, 3, 40).to(DT)
    randomise(ref, g)
    x = torch.randn(2, 7, 48, generator=g, dtype=DT)
    with torch.no_grad():
        a = ref(x)
        b = ref(x, torch.arange(7) + 11)
    assert torch.allclose(a, b, atol=1e-10), "ref RoPE not relative"
    # sliding window, window >= Tk with Tq == Tk is plain causal attention
    q, k, v = (torch.randn(1, 2, 5, 4, generator=g, dtype=DT) for _ in range(3))
    o, w = ref_sliding_window(q, k, v, 5)
    assert torch.allclose(w.sum(-1), torch.ones(1, 2, 5, dtype=DT))
    assert (w.triu(1) == 0).all()
    # with sinks rows sum to < 1
    _, w = ref_sliding_window(q, k, v, 2, torch.randn(2, dtype=DT))
    assert (w.sum(-1) < 1).all()


def main():
    self_test()
    verbose = "-v" in sys.argv
    with open(os.path.join(HERE, "MANIFEST.tsv")) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    agree = 0
    for r in rows:
        path = os.path.join(os.path.dirname(os.path.dirname(HERE)), r["path"])  # the file, in tests/corpus
        try:
            mod = load(path)
            res = check_sliding(mod) if r["exercise"] == "sliding-window" else check_llama(mod)
        except Exception as e:
            res = [("import", f"raised {type(e).__name__}: {e}")]
        bad = [(c, why) for c, why in res if why != "ok"]
        expect_ok = r["expected_slug"] == "ok"
        ok = (not bad) if expect_ok else bool(bad)
        agree += ok
        tag = "AGREE" if ok else "DISAGREE"
        print(f"{tag:8s} {r['exercise']}/{r['file']:30s} expected={r['expected_slug']:24s} "
              f"failing cases {len(bad)}/{len(res)}" + (f"  first: {bad[0][0]} {bad[0][1]}" if bad else ""))
        if verbose:
            for c, why in res:
                print(f"           {c}: {why}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")


if __name__ == "__main__":
    main()
