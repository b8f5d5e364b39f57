"""Blind batch 30 (mla): an independent float64 reference written from EXERCISES.md alone.

For every MANIFEST.tsv row the file is loaded and run on several random cases:
  A. prefill, then chunked decode fed the file's own cache (outputs and returned caches compared);
  B. prefill by the reference, then decode steps each fed the reference's cache;
  C. the file's RMSNorm alone (eps=0.1 and the default eps, non-ones weight, inputs with an offset);
  D. float32 and bfloat16 runs: the outputs and caches keep the input dtype and stay finite.
A correct row must match the plain reference within 1e-8 everywhere. A wrong row must differ
from the plain reference and match the reference with its one switch on, within 1e-8.

Run from the repository root:  .venv/bin/python tests/blind30/harness.py
"""
from __future__ import annotations

import csv
import importlib.util
import math
import sys
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).resolve().parent / "MANIFEST.tsv"
TOL = 1e-8
F64 = torch.float64

# one switch per mistake: manifest short name -> the reference's switch that reproduces it
SWITCH = {
    "w01.py": "cache_per_head",          # mla-cache-expanded: per-head K/V cached
    "w02.py": "cache_kpe_unrotated",     # mla-cache-expanded: raw k_pe cached, history re-rotated
    "w03.py": "kv_a_pe_first",           # mla-kv-layout: W_kv_a as [k_pe | c_kv]
    "w04.py": "kv_b_blocks",             # mla-kv-layout: W_kv_b as [all k_nope | all v]
    "w05.py": "rope_whole_q",            # mla-rope-misplaced: RoPE over all of q
    "w06.py": "rope_on_q_nope",          # mla-rope-misplaced: RoPE on q_nope instead of q_pe
    "w07.py": "norm_twice",              # mla-latent-not-normalised: kv_norm again before W_kv_b
    "w08.py": "norm_skipped",            # mla-latent-not-normalised: kv_norm never applied
    "w09.py": "rms_mean_subtracted",     # rmsnorm-mean-subtracted
    "w10.py": "rms_no_eps",              # rmsnorm-eps-misplaced (eps left out)
    "w11.py": "scale_dv",                # wrong-scale: 1/sqrt(d_v)
    "w12.py": "no_scale",                # missing-scale
    "w13.py": "causal_top_left",         # causal-misaligned
    "w14.py": "rope_positions_ignored",  # rope-positions-ignored
    "w15.py": "rope_freq_i_over_d",      # rope-wrong-frequencies: exponent i/d
}

# (d_model, heads, kv_rank, d_nope, d_rope, d_v, rope_base): d_nope != d_rope != d_v,
# kv_rank unlike d_nope, d_rope, d_v, d_nope + d_rope and d_nope + d_v; d_rope >= 4
CONFIGS = [
    (48, 3, 20, 6, 4, 10, 10000.0),
    (40, 4, 14, 12, 8, 6, 500.0),
    (32, 4, 11, 4, 6, 5, 10000.0),
]


# ----------------------------------------------------------------------------------- reference
def ref_rmsnorm(x, weight, eps, sw=None):
    if sw == "rms_mean_subtracted":
        x = x - x.mean(-1, keepdim=True)
    ms = (x * x).mean(-1, keepdim=True)
    if sw == "rms_no_eps":
        return x / ms.sqrt() * weight
    return x / (ms + eps).sqrt() * weight


def ref_rope(x, pos, base, sw=None):
    """Half-split RoPE over the last dim of x (..., T, d); pos (T,)."""
    d = x.shape[-1]
    h = d // 2
    i = torch.arange(h, dtype=F64)
    expo = i / d if sw == "rope_freq_i_over_d" else 2.0 * i / d
    theta = pos.to(F64)[:, None] * base ** (-expo)[None, :]
    c, s = theta.cos(), theta.sin()
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def params_of(mod):
    g = lambda t: t.detach().to(F64).clone()
    return dict(Wq=g(mod.W_q.weight), Wkva=g(mod.W_kv_a.weight), Wkvb=g(mod.W_kv_b.weight),
                Wo=g(mod.W_o.weight), gamma=g(mod.kv_norm.weight))


def ref_mla(P, cfg, x, cache=None, sw=None):
    _, H, r, dn, dr, dv, base = cfg
    B, T, _ = x.shape
    if cache is None:
        past = 0
    elif sw == "cache_per_head":
        past = cache[0].shape[2]
    else:
        past = cache[0].shape[1]
    pos = torch.arange(T) if sw == "rope_positions_ignored" else torch.arange(past, past + T)
    rope = lambda t, p: ref_rope(t, p, base, sw)

    q = (x @ P["Wq"].T).view(B, T, H, dn + dr).transpose(1, 2)          # B H T dqk
    if sw == "rope_whole_q":
        q = rope(q, pos)
        q_nope, q_pe = q[..., :dn], q[..., dn:]
    else:
        q_nope, q_pe = q[..., :dn], q[..., dn:]
        if sw == "rope_on_q_nope":
            q_nope = rope(q_nope, pos)
        else:
            q_pe = rope(q_pe, pos)

    a = x @ P["Wkva"].T
    if sw == "kv_a_pe_first":
        pe_raw, c = a[..., :dr], a[..., dr:]
    else:
        c, pe_raw = a[..., :r], a[..., r:]
    c_n = c if sw == "norm_skipped" else ref_rmsnorm(c, P["gamma"], 1e-6, sw)
    pe = rope(pe_raw, pos)

    def up(lat):
        S = lat.shape[1]
        kvb = lat @ P["Wkvb"].T
        if sw == "kv_b_blocks":
            k_nope = kvb[..., : H * dn].reshape(B, S, H, dn)
            v = kvb[..., H * dn:].reshape(B, S, H, dv)
        else:
            kvb = kvb.reshape(B, S, H, dn + dv)
            k_nope, v = kvb[..., :dn], kvb[..., dn:]
        return k_nope.transpose(1, 2), v.transpose(1, 2)                 # B H S *

    if sw == "cache_per_head":
        k_nope, v = up(c_n)
        k = torch.cat([k_nope, pe[:, None].expand(B, H, T, dr)], dim=-1)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        scores = q_nope @ k[..., :dn].transpose(-1, -2) + q_pe @ k[..., dn:].transpose(-1, -2)
        new_cache = (k, v)
    else:
        c_all = c_n if cache is None else torch.cat([cache[0], c_n], dim=1)
        S = c_all.shape[1]
        if sw == "cache_kpe_unrotated":
            pe_store = pe_raw if cache is None else torch.cat([cache[1], pe_raw], dim=1)
            pe_all = rope(pe_store, torch.arange(S))
        else:
            pe_store = pe_all = pe if cache is None else torch.cat([cache[1], pe], dim=1)
        lat = ref_rmsnorm(c_all, P["gamma"], 1e-6) if sw == "norm_twice" else c_all
        k_nope, v = up(lat)
        scores = q_nope @ k_nope.transpose(-1, -2) + q_pe @ pe_all[:, None].transpose(-1, -2)
        new_cache = (c_all, pe_store)

    S = scores.shape[-1]
    if sw == "scale_dv":
        scale = 1.0 / math.sqrt(dv)
    elif sw == "no_scale":
        scale = 1.0
    else:
        scale = 1.0 / math.sqrt(dn + dr)
    scores = scores * scale
    i = torch.arange(T)[:, None]
    j = torch.arange(S)[None, :]
    visible = (j <= i) if sw == "causal_top_left" else (j <= i + (S - T))
    scores = scores.masked_fill(~visible, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    o = (p @ v).transpose(1, 2).reshape(B, T, H * dv)
    return o @ P["Wo"].T, new_cache


# ------------------------------------------------------------------------------------- driver
def load(path):
    name = "blind30_" + path.stem.replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def make(mod_cls, cfg, seed, dtype=F64):
    D, H, r, dn, dr, dv, base = cfg
    torch.manual_seed(seed)
    if base == 10000.0:
        mod = mod_cls(D, H, r, dn, dr, dv)
    else:
        mod = mod_cls(D, H, r, dn, dr, dv, rope_base=base)
    mod = mod.to(F64).eval()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for lin in (mod.W_q, mod.W_kv_a, mod.W_kv_b, mod.W_o):
            fan_in = lin.weight.shape[1]
            lin.weight.copy_(torch.randn(lin.weight.shape, generator=g, dtype=F64) * 1.5 / math.sqrt(fan_in))
        mod.kv_norm.weight.copy_(0.5 + torch.rand(mod.kv_norm.weight.shape, generator=g, dtype=F64))
    return mod.to(dtype)


def diff(a, b):
    """Max abs difference scaled by the reference's size; inf when shapes or types differ."""
    if isinstance(b, (tuple, list)):
        if not isinstance(a, (tuple, list)) or len(a) != len(b):
            return math.inf
        return max(diff(x, y) for x, y in zip(a, b))
    if not torch.is_tensor(a) or a.shape != b.shape:
        return math.inf
    a = a.detach().to(F64)
    if not torch.isfinite(a).all():
        return math.inf
    return ((a - b).abs().max() / max(1.0, b.abs().max().item())).item()


def compare(m, sw, outputs_only=False):
    """Worst difference between the file and the reference with switch sw over every case.

    outputs_only: only case A's outputs (the file fed its own cache), caches not compared."""
    worst = 0.0
    MLA = m.MultiHeadLatentAttention
    for ci, cfg in enumerate(CONFIGS):
        D = cfg[0]
        for B in (2, 3):
            seed = 1000 * ci + 10 * B
            mod = make(MLA, cfg, seed)
            P = params_of(mod)
            g = torch.Generator().manual_seed(seed + 7)
            # A: prefill then chunked decode, each fed its own cache
            chunks = [5, 1, 3, 1, 2]
            x = torch.randn(B, sum(chunks), D, generator=g, dtype=F64)
            fc = rc = None
            t = 0
            with torch.no_grad():
                for n in chunks:
                    xs = x[:, t:t + n]
                    t += n
                    fo, fc = mod(xs, fc) if fc is not None else mod(xs)
                    ro, rc = ref_mla(P, cfg, xs, rc, sw)
                    worst = max(worst, diff(fo, ro) if outputs_only else max(diff(fo, ro), diff(fc, rc)))
            if outputs_only:
                continue
            # B: the reference's prefill cache, then decode steps fed the reference's cache
            chunks = [4, 2, 1, 1]
            x = torch.randn(B, sum(chunks), D, generator=g, dtype=F64)
            ro, rc = ref_mla(P, cfg, x[:, :4], None, sw)
            t = 4
            with torch.no_grad():
                for n in chunks[1:]:
                    xs = x[:, t:t + n]
                    t += n
                    fo, fc = mod(xs, tuple(c.clone() for c in rc))
                    ro, rc2 = ref_mla(P, cfg, xs, rc, sw)
                    worst = max(worst, diff(fo, ro), diff(fc, rc2))
                    rc = rc2
    if outputs_only:
        return worst
    # C: RMSNorm alone
    g = torch.Generator().manual_seed(77)
    for dim, eps, scale in ((13, 0.1, 1.0), (13, None, 1e-3), (8, 1e-6, 1.0)):
        n = m.RMSNorm(dim) if eps is None else m.RMSNorm(dim, eps=eps)
        n = n.to(F64)
        with torch.no_grad():
            n.weight.copy_(0.5 + torch.rand(dim, generator=g, dtype=F64))
        x = (torch.randn(3, 5, dim, generator=g, dtype=F64) + 2.5) * scale
        with torch.no_grad():
            y = n(x)
        worst = max(worst, diff(y, ref_rmsnorm(x, n.weight.detach(), 1e-6 if eps is None else eps, sw)))
    return worst


def dtype_kept(m):
    cfg = CONFIGS[2]
    for dt in (torch.float32, torch.bfloat16):
        mod = make(m.MultiHeadLatentAttention, cfg, 5, dtype=dt)
        x = torch.randn(2, 6, cfg[0], dtype=dt)
        with torch.no_grad():
            o, c = mod(x[:, :4])
            o2, c2 = mod(x[:, 4:], c)
        for t in (o, o2, *c, *c2):
            if t.dtype != dt or not torch.isfinite(t.float()).all():
                return False
        y = m.RMSNorm(7).to(dt)(torch.randn(2, 7, dtype=dt))
        if y.dtype != dt:
            return False
    return True


def self_check():
    """The reference alone: a sequence fed at once or in chunks gives the same outputs."""
    for cfg in CONFIGS:
        D, H, r, dn, dr, dv, base = cfg
        g = torch.Generator().manual_seed(3)
        P = dict(Wq=torch.randn(H * (dn + dr), D, generator=g, dtype=F64) / math.sqrt(D),
                 Wkva=torch.randn(r + dr, D, generator=g, dtype=F64) / math.sqrt(D),
                 Wkvb=torch.randn(H * (dn + dv), r, generator=g, dtype=F64) / math.sqrt(r),
                 Wo=torch.randn(D, H * dv, generator=g, dtype=F64) / math.sqrt(H * dv),
                 gamma=0.5 + torch.rand(r, generator=g, dtype=F64))
        x = torch.randn(2, 9, D, generator=g, dtype=F64)
        full, (c_full, pe_full) = ref_mla(P, cfg, x)
        parts, cache, t = [], None, 0
        for n in (4, 1, 3, 1):
            o, cache = ref_mla(P, cfg, x[:, t:t + n], cache)
            parts.append(o)
            t += n
        assert diff(torch.cat(parts, 1), full) < 1e-12, "reference: chunked != full"
        assert diff(cache, (c_full, pe_full)) < 1e-12, "reference: chunked cache != full cache"
        # row 0 of a causal prefill sees only key 0: its output is W_o(v_0) per head
        c0 = ref_rmsnorm((x[:, 0] @ P["Wkva"].T)[:, :r], P["gamma"], 1e-6)
        v0 = (c0 @ P["Wkvb"].T).view(2, H, dn + dv)[..., dn:].reshape(2, H * dv)
        assert diff(full[:, 0], v0 @ P["Wo"].T) < 1e-12, "reference: first causal row != W_o(v_0)"


def main():
    self_check()
    rows = list(csv.DictReader(open(MANIFEST), delimiter="\t"))
    agree = 0
    for row in rows:
        path = ROOT / row["path"]
        slug = row["expected_slug"]
        note = ""
        try:
            lines = path.read_text().split("\n")
            marked = [i + 1 for i, l in enumerate(lines) if l.rstrip().endswith("# MISTAKE")]
            want = [] if row["mistake_line"] == "-" else [int(row["mistake_line"])]
            if marked != want:
                raise AssertionError(f"MISTAKE markers at {marked}, manifest says {want}")
            m = load(path)
            try:
                d0 = compare(m, None)
            except Exception as e:  # a wrong file may raise on the reference's cache
                d0, note = math.inf, f"raises vs plain ref ({type(e).__name__})"
            kept = dtype_kept(m)
            if slug == "ok":
                ok = d0 <= TOL and kept
                detail = f"plain ref diff {d0:.2e}, dtype kept {kept}"
            else:
                sw = SWITCH[row["file"]]
                d1 = compare(m, sw)
                ok = d0 > 1e-6 and d1 <= TOL and kept
                detail = f"plain ref diff {d0:.2e}, switch {sw} diff {d1:.2e}, dtype kept {kept}"
                if slug == "mla-cache-expanded":  # outputs right on the file's own cache
                    d2 = compare(m, None, outputs_only=True)
                    ok = ok and d2 <= TOL
                    detail += f", own-cache outputs diff {d2:.2e}"
                elif slug.startswith("mla-"):     # the mistake shows in the outputs themselves
                    d2 = compare(m, None, outputs_only=True)
                    ok = ok and d2 > 1e-6
                    detail += f", own-cache outputs diff {d2:.2e}"
                if note:
                    detail += f"; {note}"
        except Exception as e:
            ok = False
            detail = f"harness error: {type(e).__name__}: {e}"
            traceback.print_exc()
        agree += ok
        print(f"{'AGREE   ' if ok else 'DISAGREE'} {row['file']:7s} {slug:27s} {detail}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
