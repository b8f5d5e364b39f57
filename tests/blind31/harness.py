"""Blind batch 31 (mla): an independent float64 reference written from EXERCISES.md alone.

Run from the repository root:
    .venv/bin/python tests/blind31/harness.py

Every manifest row is loaded and run against a float64 reference of the contract's
MultiHeadLatentAttention; the reference has one switch per planted mistake. A correct
file must match the unswitched reference within 1e-8; a wrong file must differ from
it and match the reference with its own switch on within 1e-8. Every file must also
pass a stand-alone RMSNorm check (eps=0.1, non-ones weight, inputs with an offset),
keep float32 / bfloat16 dtypes, and run on the meta device (no tensor made on the
default device).
"""
from __future__ import annotations

import csv
import importlib.util
import math
import sys
from pathlib import Path

import torch

torch.set_grad_enabled(False)
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TOL_MATCH = 1e-8
TOL_DIFFER = 1e-6

# which reference switch each manifest row's planted mistake corresponds to
SWITCH = {
    "c01.py": None, "c02.py": None, "c03.py": None, "c04.py": None,
    "w01.py": "causal_hide_diag",
    "w02.py": "causal_show_next",
    "w03.py": "no_causal",
    "w04.py": "causal_prefill_only",
    "w05.py": "rope_interleaved",
    "w06.py": "rope_interleaved",
    "w07.py": "rope_neg",
    "w08.py": "rope_neg",
    "w09.py": "softmax_queries",
    "w10.py": "softmax_heads",
    "w11.py": "rope_freq_no2",
    "w12.py": "rope_freq_head_width",
    "w13.py": "no_scale",
    "w14.py": "rope_pos_zero",
}
ALL_SWITCHES = sorted({s for s in SWITCH.values() if s is not None})

# d_nope != d_rope != d_v, kv_rank unlike every head width, d_rope >= 4, several bases
CFGS = [
    dict(B=2, D=24, H=3, R=11, dn=6, dr=4, dv=5, base=10000.0),
    dict(B=1, D=32, H=4, R=7, dn=8, dr=6, dv=3, base=500.0),
    dict(B=3, D=20, H=2, R=12, dn=5, dr=8, dv=9, base=77.7),
]
SEEDS = [0, 1]
CHUNKS = [5, 1, 3, 2, 1]          # prefill then chunked decode


# ----------------------------------------------------------------------------- reference
def ref_rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def ref_rope(x, pos, base, sw, head_width):
    """x (..., T, r), pos float64 (T,). Contract: half-split pairs (i, i + r/2), theta = pos * base^(-2i/r)."""
    r = x.shape[-1]
    half = r // 2
    i = torch.arange(half, dtype=torch.float64)
    if sw == "rope_freq_no2":
        expo = i / r
    elif sw == "rope_freq_head_width":
        expo = 2.0 * i / head_width
    else:
        expo = 2.0 * i / r
    ang = pos[:, None] * torch.pow(torch.tensor(float(base), dtype=torch.float64), -expo)[None, :]
    if sw == "rope_neg":
        ang = -ang
    c, s = ang.cos(), ang.sin()
    if sw == "rope_interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, b * c + a * s], dim=-1).flatten(-2)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1)


def ref_forward(P, cfg, x, cache, sw=None):
    """Returns out, (c_all, kpe_all), valid (Tq,) bool: query rows with at least one visible key."""
    B, T, _ = x.shape
    H, R, dn, dr, dv = cfg["H"], cfg["R"], cfg["dn"], cfg["dr"], cfg["dv"]
    dqk = dn + dr
    past = 0 if cache is None else cache[0].shape[1]

    q = (x @ P["W_q"].T).view(B, T, H, dqk).transpose(1, 2)          # (B, H, T, dqk)
    q_nope, q_pe = q[..., :dn], q[..., dn:]
    a = x @ P["W_kv_a"].T
    c_new = ref_rmsnorm(a[..., :R], P["kv_norm"], 1e-6)
    kpe_new = a[..., R:]

    if sw == "rope_pos_zero":
        pos = torch.arange(T, dtype=torch.float64)
    else:
        pos = torch.arange(past, past + T, dtype=torch.float64)
    q_pe = ref_rope(q_pe, pos, cfg["base"], sw, dqk)
    kpe_new = ref_rope(kpe_new, pos, cfg["base"], sw, dqk)

    if cache is None:
        c_all, kpe_all = c_new, kpe_new
    else:
        c_all = torch.cat([cache[0], c_new], dim=1)
        kpe_all = torch.cat([cache[1], kpe_new], dim=1)
    S = c_all.shape[1]

    kv = (c_all @ P["W_kv_b"].T).view(B, S, H, dn + dv).transpose(1, 2)
    k_nope, v = kv[..., :dn], kv[..., dn:]
    scores = q_nope @ k_nope.transpose(-1, -2) + q_pe @ kpe_all[:, None].transpose(-1, -2)
    if sw != "no_scale":
        scores = scores / math.sqrt(dqk)

    i = torch.arange(T)[:, None]
    j = torch.arange(S)[None, :]
    off = S - T
    if sw == "causal_hide_diag":
        allowed = j < i + off
    elif sw == "causal_show_next":
        allowed = j <= i + off + 1
    elif sw == "no_causal" or (sw == "causal_prefill_only" and cache is not None):
        allowed = torch.ones(T, S, dtype=torch.bool)
    else:
        allowed = j <= i + off
    # a finite fill: a row (or a head column) with nothing visible becomes uniform, as -1e9 / finfo.min give
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    dim = {"softmax_queries": -2, "softmax_heads": 1}.get(sw, -1)
    p = torch.softmax(scores, dim=dim)
    o = (p @ v).transpose(1, 2).reshape(B, T, H * dv)
    return o @ P["W_o"].T, (c_all, kpe_all), allowed.any(-1)


# ----------------------------------------------------------------------------- running files
def load(path: Path, tag: str):
    spec = importlib.util.spec_from_file_location(f"blind31_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(mod, cfg, seed):
    torch.manual_seed(seed)
    m = mod.MultiHeadLatentAttention(cfg["D"], cfg["H"], cfg["R"], cfg["dn"], cfg["dr"], cfg["dv"],
                                     rope_base=cfg["base"])
    m = m.double().eval()
    g = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        m.kv_norm.weight.copy_(0.5 + torch.rand(cfg["R"], generator=g, dtype=torch.float64))
    P = {
        "W_q": m.W_q.weight.detach().clone(),
        "W_kv_a": m.W_kv_a.weight.detach().clone(),
        "kv_norm": m.kv_norm.weight.detach().clone(),
        "W_kv_b": m.W_kv_b.weight.detach().clone(),
        "W_o": m.W_o.weight.detach().clone(),
    }
    return m, P


def maxdiff(a, b):
    if a.shape != b.shape:
        return float("inf")
    d = (a - b).abs()
    d = torch.where(torch.isnan(a) & torch.isnan(b), torch.zeros_like(d), d)
    d = torch.nan_to_num(d, nan=float("inf"))
    return d.max().item() if d.numel() else 0.0


def compare_step(out_f, cache_f, out_r, cache_r, valid):
    """Largest difference over the valid output rows and the two returned caches."""
    d = maxdiff(out_f[:, valid], out_r[:, valid])
    d = max(d, maxdiff(cache_f[0], cache_r[0]), maxdiff(cache_f[1], cache_r[1]))
    return d


def run_cases(mod, sw):
    """Largest difference between the file and the reference with switch `sw` over every case."""
    worst = 0.0
    for cfg in CFGS:
        for seed in SEEDS:
            m, P = build(mod, cfg, seed)
            g = torch.Generator().manual_seed(seed + 17)
            # (1) prefill then chunked decode, each side fed its own cache
            x = 1.5 * torch.randn(cfg["B"], sum(CHUNKS), cfg["D"], generator=g, dtype=torch.float64)
            cf = cr = None
            t0 = 0
            for n in CHUNKS:
                xc = x[:, t0:t0 + n]
                t0 += n
                out_f, cf = m(xc, cf)
                out_r, cr, valid = ref_forward(P, cfg, xc, cr, sw)
                worst = max(worst, compare_step(out_f, cf, out_r, cr, valid))
            # (2) a cache made by the (correct) reference, then a chunk of 3 and a single token
            x0 = 1.5 * torch.randn(cfg["B"], 4, cfg["D"], generator=g, dtype=torch.float64)
            _, cache0, _ = ref_forward(P, cfg, x0, None, None)
            for n in (3, 1):
                xc = 1.5 * torch.randn(cfg["B"], n, cfg["D"], generator=g, dtype=torch.float64)
                out_f, cf = m(xc, (cache0[0].clone(), cache0[1].clone()))
                out_r, cr, valid = ref_forward(P, cfg, xc, cache0, sw)
                worst = max(worst, compare_step(out_f, cf, out_r, cr, valid))
            # (3) the whole sequence at once
            out_f, cf = m(x, None)
            out_r, cr, valid = ref_forward(P, cfg, x, None, sw)
            worst = max(worst, compare_step(out_f, cf, out_r, cr, valid))
    return worst


def check_rmsnorm(mod):
    """The file's RMSNorm alone: eps=0.1 and the default eps, non-ones weight, inputs with an offset."""
    g = torch.Generator().manual_seed(5)
    worst = 0.0
    for dim, eps, offset, mag in ((13, 0.1, 3.0, 1.0), (9, 0.1, -0.7, 0.3), (16, None, 0.0, 1e-3)):
        n = mod.RMSNorm(dim) if eps is None else mod.RMSNorm(dim, eps=eps)
        n = n.double()
        w = torch.randn(dim, generator=g, dtype=torch.float64)
        with torch.no_grad():
            n.weight.copy_(w)
        x = mag * (torch.randn(2, 5, dim, generator=g, dtype=torch.float64) + offset)
        ref = ref_rmsnorm(x, w, 1e-6 if eps is None else eps)
        worst = max(worst, maxdiff(n(x), ref) / max(1.0, ref.abs().max().item()))
    return worst


def check_dtypes(mod):
    """float32 and bfloat16 in, the same dtype out (output and both caches), with and without a cache."""
    cfg = CFGS[2]
    problems = []
    for dt in (torch.float32, torch.bfloat16):
        torch.manual_seed(3)
        m = mod.MultiHeadLatentAttention(cfg["D"], cfg["H"], cfg["R"], cfg["dn"], cfg["dr"], cfg["dv"],
                                         rope_base=cfg["base"]).to(dt).eval()
        x = torch.randn(cfg["B"], 4, cfg["D"]).to(dt)
        out, cache = m(x)
        out2, cache2 = m(torch.randn(cfg["B"], 2, cfg["D"]).to(dt), cache)
        for name, t in (("out", out), ("c_kv", cache[0]), ("k_pe", cache[1]), ("out2", out2),
                        ("c_kv2", cache2[0]), ("k_pe2", cache2[1])):
            if t.dtype != dt:
                problems.append(f"{dt}:{name}->{t.dtype}")
        if cache2[0].shape != (cfg["B"], 6, cfg["R"]) or cache2[1].shape != (cfg["B"], 6, cfg["dr"]):
            problems.append(f"{dt}:cache shapes {tuple(cache2[0].shape)} {tuple(cache2[1].shape)}")
    return problems


def check_meta(mod):
    """Run on the meta device: a tensor made on the default device (cpu) cannot mix in."""
    cfg = CFGS[0]
    m = mod.MultiHeadLatentAttention(cfg["D"], cfg["H"], cfg["R"], cfg["dn"], cfg["dr"], cfg["dv"],
                                     rope_base=cfg["base"]).to("meta").eval()
    x = torch.empty(cfg["B"], 3, cfg["D"], device="meta")
    out, cache = m(x)
    out2, cache2 = m(torch.empty(cfg["B"], 2, cfg["D"], device="meta"), cache)
    bad = [n for n, t in (("out", out), ("out2", out2), ("c_kv", cache2[0]), ("k_pe", cache2[1]))
           if t.device.type != "meta"]
    return bad


def mistake_line(path: Path):
    lines = path.read_text().splitlines()
    hits = [i + 1 for i, l in enumerate(lines) if l.rstrip().endswith("# MISTAKE")]
    return hits


def main():
    rows = list(csv.DictReader(open(HERE / "MANIFEST.tsv"), delimiter="\t"))
    agree = 0
    for row in rows:
        path = ROOT / row["path"]
        short = row["file"]
        expected = row["expected_slug"]
        sw = SWITCH[short]
        notes = []
        ok = True
        try:
            mod = load(path, short.replace(".py", ""))
            d_ok = run_cases(mod, None)
            if expected == "ok":
                if d_ok > TOL_MATCH:
                    ok = False
                    notes.append(f"differs from the reference by {d_ok:.2e}")
                d_sw = None
            else:
                d_sw = run_cases(mod, sw)
                if d_ok <= TOL_DIFFER:
                    ok = False
                    notes.append(f"does not differ from the reference ({d_ok:.2e})")
                if d_sw > TOL_MATCH:
                    ok = False
                    notes.append(f"switch {sw} off by {d_sw:.2e}")
            # which switches the file matches (information: the planted one should be the only one)
            matched = [s for s in ALL_SWITCHES if s != sw and run_cases(mod, s) <= TOL_MATCH]
            if matched:
                notes.append("also matches " + ",".join(matched))
                ok = False
            rn = check_rmsnorm(mod)
            if rn > TOL_MATCH:
                ok = False
                notes.append(f"RMSNorm off by {rn:.2e}")
            probs = check_dtypes(mod)
            if probs:
                ok = False
                notes.append("dtype: " + "; ".join(probs))
            bad = check_meta(mod)
            if bad:
                ok = False
                notes.append("meta: not on meta " + ",".join(bad))
        except Exception as e:  # noqa: BLE001
            ok = False
            notes.append(f"raised {type(e).__name__}: {e}")
            d_ok = d_sw = float("nan")
        hits = mistake_line(path)
        want_line = row["mistake_line"]
        if expected == "ok":
            if hits or want_line != "-":
                ok = False
                notes.append(f"MISTAKE marks {hits} / manifest {want_line}")
        elif hits != [int(want_line)]:
            ok = False
            notes.append(f"MISTAKE marks {hits} but manifest says {want_line}")
        agree += ok
        detail = f"vs-correct {d_ok:.1e}" + ("" if d_sw is None else f", vs-{sw} {d_sw:.1e}")
        print(f"{'AGREE   ' if ok else 'DISAGREE'} {short:7s} {expected:24s} {detail}"
              + (f"  [{'; '.join(notes)}]" if notes else "") + f"  {row['path']}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
