"""Blind-batch harness for llama-block: own reference from the contract, compares every file."""
import csv
import importlib.util
import math
import os
import sys
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository: the files live in tests/corpus
ATOL = 1e-8


# ---------------------------------------------------------------- reference
MUT = set()  # mutations of the reference, used only by the single-mistake check


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        if "mean-sub" in MUT:
            x = x - x.mean(-1, keepdim=True)
        ms = x.pow(2).mean(-1, keepdim=True)
        if "eps-none" in MUT:
            return x / ms.sqrt() * self.weight
        if "eps-outside" in MUT:
            return x / (ms.sqrt() + self.eps) * self.weight
        return x * torch.rsqrt(ms + self.eps) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        if "gate-swapped" in MUT:
            return self.w2(self.w1(x) * F.silu(self.w3(x)))
        act = F.gelu if "gelu" in MUT else F.silu
        return self.w2(act(self.w1(x)) * self.w3(x))


def ref_rope(x, positions, base):
    # x (B, H, T, d); positions (T,) or (B, T); half-split pairs (i, i + d/2)
    B, H, T, d = x.shape
    half = d // 2
    i = torch.arange(half, dtype=x.dtype)
    pos = positions.to(x.dtype)
    if pos.dim() == 1:
        pos = pos.expand(B, T)
    theta = pos[:, None, :, None] * base ** (-2.0 * i / d)  # (B, 1, T, half)
    c, s = theta.cos(), theta.sin()
    if "rope-interleaved" in MUT:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, b * c + a * s], -1).flatten(-2)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, b * c + a * s], -1)


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.D, self.H, self.Hkv = d_model, num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.base = rope_base
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.ffn = SwiGLU(d_model, d_ff)

    def attn(self, x, positions):
        B, T, D = x.shape
        q = self.W_q(x).view(B, T, self.H, self.d).transpose(1, 2)
        k = self.W_k(x).view(B, T, self.Hkv, self.d).transpose(1, 2)
        v = self.W_v(x).view(B, T, self.Hkv, self.d).transpose(1, 2)
        q, k = ref_rope(q, positions, self.base), ref_rope(k, positions, self.base)
        g = self.H // self.Hkv
        kv_of_head = torch.arange(self.H) // g          # query head h reads kv head h // g
        if "kv-tile" in MUT:
            kv_of_head = torch.arange(self.H) % self.Hkv
        k, v = k[:, kv_of_head], v[:, kv_of_head]
        s = q @ k.transpose(-1, -2)
        if "scale-none" in MUT:
            pass
        elif "scale-sqrtD" in MUT:
            s = s / math.sqrt(self.D)
        elif "scale-d" in MUT:
            s = s / self.d
        else:
            s = s / math.sqrt(self.d)
        idx = torch.arange(T)
        if "causal-diag-hidden" in MUT:
            s = s.masked_fill(idx[None, :] >= idx[:, None], torch.finfo(s.dtype).min)
        elif "no-causal" not in MUT:
            s = s.masked_fill(idx[None, :] > idx[:, None], float("-inf"))
        p = torch.softmax(s, -1)
        return self.W_o((p @ v).transpose(1, 2).reshape(B, T, D))

    def forward(self, x, positions=None):
        if positions is None or "pos-ignored" in MUT:
            positions = torch.arange(x.shape[1])
        if "post-norm" in MUT:
            h = self.attn_norm(x + self.attn(x, positions))
            return self.ffn_norm(h + self.ffn(h))
        h = self.attn(self.attn_norm(x), positions)
        if "no-res-attn" not in MUT:
            h = x + h
        out = self.ffn(self.ffn_norm(h))
        if "no-res-ffn" not in MUT:
            out = h + out
        return out


# ---------------------------------------------------------------- cases
B, T, DM, NH, NKV, DFF = 2, 7, 24, 4, 2, 40
POS_CASES = {
    "pos=None": None,
    "pos=(T,) gaps": torch.tensor([0, 1, 3, 4, 9, 15, 31], dtype=torch.int64),
    "pos=(B,T) rows differ": torch.tensor([[0, 2, 3, 7, 8, 12, 20],
                                          [5, 6, 9, 16, 17, 18, 44]], dtype=torch.int64),
    "pos=(T,) 0..T-1 + 100": torch.arange(7, dtype=torch.int64) + 100,
}
EPS_CASES = [1e-6, 0.1]


def randomise(module, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1:  # RMSNorm weights
                p.copy_(1.0 + 0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
            else:
                fan_in = p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * (1.5 / math.sqrt(fan_in)))
    return module


def load_into(theirs, ours):
    sd = ours.state_dict()
    res = theirs.load_state_dict(sd, strict=False)
    if res.unexpected_keys:
        raise RuntimeError(f"their module lacks parameters {res.unexpected_keys}")
    params = dict(theirs.named_parameters())
    missing_params = [k for k in res.missing_keys if k in params]
    if missing_params:
        raise RuntimeError(f"their module has extra parameters {missing_params}")


def compare(name, fn_ref, fn_theirs, results):
    try:
        ref = fn_ref()
        out = fn_theirs()
    except Exception as e:  # noqa: BLE001
        results.append((name, f"RAISED {type(e).__name__}: {str(e)[:80]}"))
        return
    if not isinstance(out, torch.Tensor):
        results.append((name, f"returned {type(out).__name__}"))
        return
    if out.shape != ref.shape:
        results.append((name, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"))
        return
    if not torch.isfinite(out).all():
        results.append((name, "non-finite"))
        return
    err = (out - ref).abs().max().item()
    if err > ATOL:
        results.append((name, f"max err {err:.2e}"))
    else:
        results.append((name, "ok"))


def run_file(path):
    spec = importlib.util.spec_from_file_location("cand_" + os.path.basename(path)[:-3].replace("-", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001
        return [("import", f"RAISED {type(e).__name__}: {e}")]
    results = []
    torch.manual_seed(0)
    dt = torch.float64
    for eps in EPS_CASES:
        # RMSNorm alone: inputs of several scales so eps shows
        for scale in (0.05, 1.0, 3.0):
            x = (torch.randn(B, T, DM, dtype=dt) * scale + 0.7 * scale)
            ours = randomise(RMSNorm(DM, eps).to(dt), 1)
            try:
                theirs = mod.RMSNorm(DM, eps).to(dt)
                load_into(theirs, ours)
                theirs.eval()
            except Exception as e:  # noqa: BLE001
                results.append((f"RMSNorm eps={eps} s={scale}", f"RAISED {type(e).__name__}: {e}"))
                continue
            compare(f"RMSNorm eps={eps} s={scale}", lambda: ours(x), lambda: theirs(x), results)
        # block
        for pname, pos in POS_CASES.items():
            x = torch.randn(B, T, DM, dtype=dt)
            ours = randomise(LlamaBlock(DM, NH, NKV, DFF, eps=eps).to(dt), 2)
            cname = f"block eps={eps} {pname}"
            try:
                theirs = mod.LlamaBlock(DM, NH, NKV, DFF, eps=eps).to(dt)
                load_into(theirs, ours)
                theirs.eval()
            except Exception as e:  # noqa: BLE001
                results.append((cname, f"RAISED {type(e).__name__}: {e}"))
                continue
            if pos is None:
                compare(cname, lambda: ours(x), lambda: theirs(x), results)
            else:
                compare(cname, lambda: ours(x, pos), lambda: theirs(x, pos), results)
    # SwiGLU alone
    x = torch.randn(B, T, DM, dtype=dt)
    ours = randomise(SwiGLU(DM, DFF).to(dt), 3)
    try:
        theirs = mod.SwiGLU(DM, DFF).to(dt)
        load_into(theirs, ours)
        compare("SwiGLU", lambda: ours(x), lambda: theirs(x), results)
    except Exception as e:  # noqa: BLE001
        results.append(("SwiGLU", f"RAISED {type(e).__name__}: {e}"))
    return results, mod


def low_precision_check(mod):
    """Informational only: ok files should also run in float32 / bfloat16 and keep the dtype."""
    notes = []
    pos = POS_CASES["pos=(B,T) rows differ"]
    for dt, tol in ((torch.float32, 1e-4), (torch.bfloat16, 0.15)):
        ours = randomise(LlamaBlock(DM, NH, NKV, DFF).double(), 2)
        theirs = mod.LlamaBlock(DM, NH, NKV, DFF).double()
        load_into(theirs, ours)
        theirs = theirs.to(dt)
        x = torch.randn(B, T, DM, dtype=torch.float64)
        try:
            out = theirs(x.to(dt), pos)
        except Exception as e:  # noqa: BLE001
            notes.append(f"{dt}: RAISED {e}")
            continue
        ref = ours(x, pos)
        err = (out.double() - ref).abs().max().item()
        ref_err = (ours.to(dt)(x.to(dt), pos).double() - ref).abs().max().item()  # our own rounding
        ours.double()
        notes.append(f"{dt}: dtype {'kept' if out.dtype == dt else 'CHANGED'} err {err:.1e}"
                     f" (reference itself in {str(dt)[6:]}: {ref_err:.1e})"
                     + ("" if err < max(tol, 3 * ref_err) else " LARGE"))
    return "; ".join(notes)


# Each wrong file should equal the reference with exactly its one mistake put in.
MUTANT_OF = {
    "rmsnorm-mean-subtracted_01.py": {"mean-sub"},
    "kv-repeat-order_01.py": {"kv-tile"},
    "missing-residual_02.py": {"no-res-ffn"},
    "rmsnorm-eps-misplaced_02.py": {"eps-none"},
    "causal-diagonal_01.py": {"causal-diag-hidden"},
    "swiglu-gate-swapped_01.py": {"gate-swapped"},
    "rope-positions-ignored_01.py": {"pos-ignored"},
    "wrong-scale_01.py": {"scale-sqrtD"},
    "rmsnorm-eps-misplaced_01.py": {"eps-outside"},
    "norm-placement_01.py": {"post-norm"},
    "missing-scale_01.py": {"scale-none"},
    "swiglu-wrong-activation_01.py": {"gelu"},
    "wrong-scale_02.py": {"scale-d"},
    "missing-residual_01.py": {"no-res-attn"},
    "missing-causal-mask_01.py": {"no-causal"},
    "rope-interleaved_01.py": {"rope-interleaved"},
}


def main():
    manifest = os.path.join(HERE, "MANIFEST.tsv")
    with open(manifest) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    agree = 0
    for row in rows:
        path = os.path.join(ROOT, row["path"])
        expected = row["expected_slug"]
        got = run_file(path)
        if isinstance(got, list):
            results, mod = got, None
        else:
            results, mod = got
        bad = [(n, r) for n, r in results if r != "ok"]
        if expected == "ok":
            ok = not bad
        else:
            ok = bool(bad)
        agree += ok
        status = "AGREE" if ok else "DISAGREE"
        print(f"{status:9s} {row['file']:34s} expected={expected:26s} "
              f"{'all cases match' if not bad else f'{len(bad)}/{len(results)} cases differ'}")
        for n, r in bad[:12]:
            print(f"            - {n}: {r}")
        if expected == "ok" and mod is not None:
            print(f"            (info) {low_precision_check(mod)}")
        if row["file"] in MUTANT_OF:
            MUT.clear()
            MUT.update(MUTANT_OF[row["file"]])
            got = run_file(path)
            res = got if isinstance(got, list) else got[0]
            off = [n for n, r in res if r != "ok"]
            MUT.clear()
            print(f"            (info) equals reference+{sorted(MUTANT_OF[row['file']])}: "
                  + ("yes, every case" if not off else f"NO in {off}"))
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")


if __name__ == "__main__":
    main()
