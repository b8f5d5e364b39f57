"""Blind batch 28 harness (mla): an independent float64 reference written from
the contract (EXERCISES.md, section mla), with switchable single mistakes.

For every row of MANIFEST.tsv it loads the file, runs it on several random cases
and checks that
  * a file marked ok matches the clean reference everywhere (<= 1e-8) and keeps dtype;
  * a file marked with a slug differs from the clean reference somewhere, and
    matches the reference with one of that slug's mistakes switched on, everywhere.

Run from the repository root:  .venv/bin/python tests/blind28/harness.py
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
HERE = Path(__file__).resolve().parent
TOL = 1e-8          # agreement tolerance (relative to the magnitude of the reference)
DIFF = 1e-5         # "clearly differs" threshold

# --------------------------------------------------------------------------- reference

def ref_rmsnorm(x, weight, eps, mode=None):
    if mode == "rms_mean_sub":
        x = x - x.mean(-1, keepdim=True)
    if mode == "rms_eps_outside":
        return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight
    if mode == "rms_no_eps":
        return x / x.pow(2).mean(-1, keepdim=True).sqrt() * weight
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def ref_rope(x, pos, base, interleaved=False):
    """x (..., T, d); pos (T,). Half-split pairs (i, i + d/2) unless interleaved."""
    d = x.shape[-1]
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = pos.to(torch.float64)[:, None] * base ** (-2.0 * i / d)[None, :]   # (T, d/2)
    c, s = theta.cos(), theta.sin()
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = b * c + a * s
        return out
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1)


# every mistake mode the batch's slugs stand for
SLUG_MODES = {
    "mla-cache-expanded": ["cache_raw_latent", "cache_unrotated_kpe"],
    "mla-kv-layout": ["layout_kvb_blocks", "layout_q_blocks", "layout_kva_swapped"],
    "mla-rope-misplaced": ["rope_whole_head", "rope_on_nope", "rope_kpe_unrotated"],
    "mla-latent-not-normalised": ["latent_skip_norm", "latent_norm_twice", "latent_norm_twice_cached"],
    "rmsnorm-mean-subtracted": ["rms_mean_sub"],
    "rmsnorm-eps-misplaced": ["rms_eps_outside", "rms_no_eps"],
    "wrong-scale": ["scale_dnope", "scale_dv", "scale_drope", "scale_kvrank", "scale_kvrank_drope",
                    "scale_no_sqrt", "scale_multiplied"],
    "missing-scale": ["scale_none"],
    "causal-misaligned": ["mask_top_left"],
    "rope-positions-ignored": ["pos_restart"],
    "rope-interleaved": ["rope_interleaved"],
    "softmax-wrong-dim": ["softmax_query_axis"],
}


def ref_mla(P, cfg, x, cache=None, mode=None):
    """P: dict of float64 weights by contract name; cfg: dims. Returns out, (c_kv_all, k_pe_all)."""
    H, r, dn, dr, dv, base = (cfg[k] for k in ("H", "r", "dn", "dr", "dv", "base"))
    B, T, _ = x.shape
    past = 0 if cache is None else cache[0].shape[1]
    pos = torch.arange(past, past + T)
    if mode == "pos_restart":
        pos = torch.arange(T)
    norm_mode = mode if mode in ("rms_mean_sub", "rms_eps_outside", "rms_no_eps") else None
    kv_norm = lambda t: ref_rmsnorm(t, P["kv_norm.weight"], 1e-6, norm_mode)
    rope = lambda t, p: ref_rope(t, p, base, interleaved=(mode == "rope_interleaved"))

    # queries: head h is [q_nope | q_pe]
    qf = x @ P["W_q.weight"].T
    if mode == "layout_q_blocks":
        q_nope = qf[..., : H * dn].reshape(B, T, H, dn)
        q_pe = qf[..., H * dn:].reshape(B, T, H, dr)
    else:
        q = qf.reshape(B, T, H, dn + dr)
        q_nope, q_pe = q[..., :dn], q[..., dn:]
    q_nope, q_pe = q_nope.transpose(1, 2), q_pe.transpose(1, 2)     # (B, H, T, .)

    # latent and rope key: [c_kv | k_pe]
    a = x @ P["W_kv_a.weight"].T
    if mode == "layout_kva_swapped":
        k_pe, c_kv = a[..., :dr], a[..., dr:]
    else:
        c_kv, k_pe = a[..., :r], a[..., r:]

    raw_latent_cache = mode in ("cache_raw_latent", "latent_skip_norm")
    if not raw_latent_cache:
        c_kv = kv_norm(c_kv)
    if mode == "latent_norm_twice_cached":
        c_kv = kv_norm(c_kv)
    unrot_kpe_cache = mode in ("cache_unrotated_kpe", "rope_whole_head", "rope_on_nope", "rope_kpe_unrotated")
    if not unrot_kpe_cache:
        k_pe = rope(k_pe, pos)
    if mode not in ("rope_whole_head", "rope_on_nope"):
        q_pe = rope(q_pe, pos)
    if cache is not None:
        c_kv = torch.cat([cache[0], c_kv], 1)
        k_pe = torch.cat([cache[1], k_pe], 1)
    Tk = c_kv.shape[1]
    ret_cache = (c_kv, k_pe)

    lat = c_kv
    if mode == "cache_raw_latent":
        lat = kv_norm(c_kv)
    if mode == "latent_norm_twice":
        lat = kv_norm(c_kv)
    kpe_used = k_pe
    if mode == "cache_unrotated_kpe":
        kpe_used = rope(k_pe, torch.arange(Tk))

    kvf = lat @ P["W_kv_b.weight"].T
    if mode == "layout_kvb_blocks":
        k_nope = kvf[..., : H * dn].reshape(B, Tk, H, dn)
        v = kvf[..., H * dn:].reshape(B, Tk, H, dv)
    else:
        kv = kvf.reshape(B, Tk, H, dn + dv)
        k_nope, v = kv[..., :dn], kv[..., dn:]
    k_nope, v = k_nope.transpose(1, 2), v.transpose(1, 2)          # (B, H, Tk, .)
    kpe_h = kpe_used.unsqueeze(1).expand(B, H, Tk, dr)

    if mode == "rope_whole_head":
        qh = rope(torch.cat([q_nope, q_pe], -1), pos)
        kh = rope(torch.cat([k_nope, kpe_h], -1), torch.arange(Tk))
        scores = qh @ kh.transpose(-1, -2)
    elif mode == "rope_on_nope":
        scores = rope(q_nope, pos) @ rope(k_nope, torch.arange(Tk)).transpose(-1, -2) + q_pe @ kpe_h.transpose(-1, -2)
    else:
        scores = q_nope @ k_nope.transpose(-1, -2) + q_pe @ kpe_h.transpose(-1, -2)

    denom = {
        "scale_dnope": math.sqrt(dn), "scale_dv": math.sqrt(dv), "scale_drope": math.sqrt(dr),
        "scale_kvrank": math.sqrt(r), "scale_kvrank_drope": math.sqrt(r + dr),
        "scale_no_sqrt": float(dn + dr), "scale_none": 1.0,
        "scale_multiplied": 1.0 / math.sqrt(dn + dr),
    }.get(mode, math.sqrt(dn + dr))
    scores = scores / denom

    i = torch.arange(T)[:, None]
    j = torch.arange(Tk)[None, :]
    visible = (j <= i) if mode == "mask_top_left" else (j <= i + (Tk - T))
    scores = scores.masked_fill(~visible, float("-inf"))
    dim = -2 if mode == "softmax_query_axis" else -1
    p = torch.exp(scores - scores.amax(dim, keepdim=True))
    p = p / p.sum(dim, keepdim=True)
    o = (p @ v).transpose(1, 2).reshape(B, T, H * dv)
    return o @ P["W_o.weight"].T, ret_cache


# --------------------------------------------------------------------------- cases

# (B, d_model, H, kv_rank, d_nope, d_rope, d_v, base, prefill, decode chunks)
SHAPES = [
    (2, 32, 4, 12, 6, 4, 7, 10000.0, 5, [1, 3, 1, 2]),
    (1, 40, 3, 22, 10, 8, 6, 500.0, 7, [2, 1, 4]),
    (3, 24, 2, 9, 8, 6, 5, 10000.0, 4, [1, 1, 3, 2]),
    (2, 48, 5, 26, 4, 10, 12, 1000.0, 6, [3, 1, 2]),
]


def load(path):
    name = "b28_" + Path(path).stem.replace("-", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(mod, shape, seed):
    B, D, H, r, dn, dr, dv, base, *_ = shape
    m = mod.MultiHeadLatentAttention(D, H, r, dn, dr, dv, rope_base=base)
    m.eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name == "kv_norm.weight":
                p.copy_(1.0 + 0.5 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
    m = m.double()
    P = {k: v.detach().clone().double() for k, v in m.state_dict().items()}
    for need in ("W_q.weight", "W_kv_a.weight", "kv_norm.weight", "W_kv_b.weight", "W_o.weight"):
        assert need in P, f"missing parameter {need}"
    cfg = dict(H=H, r=r, dn=dn, dr=dr, dv=dv, base=base)
    return m, P, cfg


def relerr(a, b):
    if a.shape != b.shape:
        return float("inf")
    if not torch.isfinite(a).all():
        return float("inf")
    return ((a - b).abs().max() / (1.0 + b.abs().max())).item()


def collect(mod, modes, seed0=0):
    """Run the file and the reference (under each mode) on every case.
    Returns {mode: max error over all compared tensors}."""
    worst = {m: 0.0 for m in modes}
    worst["own_out"] = 0.0   # outputs only, file on its own cache, against the clean reference
    for si, shape in enumerate(SHAPES):
        B, D, H, r, dn, dr, dv, base, T0, chunks = shape
        m, P, cfg = build(mod, shape, seed0 + 100 * si)
        g = torch.Generator().manual_seed(seed0 + 100 * si + 7)
        total = T0 + sum(chunks)
        x = torch.randn(B, total, D, generator=g, dtype=torch.float64)
        # case A: prefill then chunked decode on the file's own cache (ref on its own)
        with torch.no_grad():
            fc = None
            rcs = {mm: None for mm in modes}
            t = 0
            for n in [T0] + chunks:
                xs = x[:, t:t + n]
                fo, fc = m(xs, fc)
                for mm in modes:
                    ro, rc = ref_mla(P, cfg, xs, rcs[mm], mm)
                    rcs[mm] = rc
                    e = max(relerr(fo, ro), relerr(fc[0], rc[0]), relerr(fc[1], rc[1]))
                    worst[mm] = max(worst[mm], e)
                    if mm is None:
                        worst["own_out"] = max(worst["own_out"], relerr(fo, ro))
                t += n
            # case B: start from a cache made by the clean reference
            xp = torch.randn(B, T0 + 2, D, generator=g, dtype=torch.float64)
            _, cache = ref_mla(P, cfg, xp, None, None)
            for n in (1, 3):
                xs = torch.randn(B, n, D, generator=g, dtype=torch.float64)
                fo, fc = m(xs, (cache[0].clone(), cache[1].clone()))
                for mm in modes:
                    ro, rc = ref_mla(P, cfg, xs, cache, mm)
                    e = max(relerr(fo, ro), relerr(fc[0], rc[0]), relerr(fc[1], rc[1]))
                    worst[mm] = max(worst[mm], e)
    # RMSNorm on its own: eps 0.1, non-ones weight, inputs with an offset
    g = torch.Generator().manual_seed(seed0 + 999)
    for dim, eps, off in ((13, 0.1, 1.5), (8, 1e-6, -0.7), (21, 0.1, 0.3)):
        n = mod.RMSNorm(dim, eps=eps)
        with torch.no_grad():
            n.weight.copy_(torch.randn(dim, generator=g) + 0.5)
        n = n.double()
        xin = torch.randn(3, 5, dim, generator=g, dtype=torch.float64) * 0.4 + off
        with torch.no_grad():
            fo = n(xin)
        w = n.weight.detach().clone()
        for mm in modes:
            nm = mm if mm in ("rms_mean_sub", "rms_eps_outside", "rms_no_eps") else None
            worst[mm] = max(worst[mm], relerr(fo, ref_rmsnorm(xin, w, eps, nm)))
    return worst


def dtype_check(mod):
    """float32 and bfloat16: outputs and caches keep the input dtype, stay finite."""
    problems = []
    for dt in (torch.float32, torch.bfloat16):
        shape = SHAPES[0]
        B, D, H, r, dn, dr, dv, base, T0, chunks = shape
        m, P, cfg = build(mod, shape, 5)
        m = m.to(dt)
        x = torch.randn(B, T0 + 2, D, generator=torch.Generator().manual_seed(3)).to(dt)
        with torch.no_grad():
            o, c = m(x[:, :T0])
            o2, c2 = m(x[:, T0:], c)
            ro, _ = ref_mla(P, cfg, x.double(), None, None)
        for name, t in (("out", o), ("c_kv", c[0]), ("k_pe", c[1]), ("out2", o2), ("c_kv2", c2[0])):
            if t.dtype != dt:
                problems.append(f"{dt}: {name} is {t.dtype}")
            if not torch.isfinite(t).all():
                problems.append(f"{dt}: {name} not finite")
        tol = 1e-4 if dt == torch.float32 else 0.1
        got = torch.cat([o, o2], 1).double()
        e = relerr(got, ro)
        if e > tol:
            problems.append(f"{dt}: off the reference by {e:.2e}")
        n = mod.RMSNorm(7, eps=0.1).to(dt)
        if n(torch.randn(2, 7).to(dt)).dtype != dt:
            problems.append(f"{dt}: RMSNorm changes dtype")
    return problems


def main():
    rows = list(csv.DictReader(open(HERE / "MANIFEST.tsv"), delimiter="\t"))
    agree = 0
    all_modes = [m for ms in SLUG_MODES.values() for m in ms]
    for row in rows:
        path, slug = row["path"], row["expected_slug"]
        verdict, detail = False, ""
        try:
            # the mistake line of the manifest is the file's '# MISTAKE' line
            lines = (ROOT / path).read_text().splitlines()
            marked = [k + 1 for k, l in enumerate(lines) if "# MISTAKE" in l]
            want = [] if row["mistake_line"] == "-" else [int(row["mistake_line"])]
            if marked != want:
                raise AssertionError(f"# MISTAKE on lines {marked}, manifest says {want}")
            mod = load(path)
            modes = [None] + (SLUG_MODES.get(slug, []) if slug != "ok" else [])
            worst = collect(mod, modes)
            clean = worst[None]
            if slug == "ok":
                probs = dtype_check(mod)
                verdict = clean <= TOL and not probs
                detail = f"clean err {clean:.1e}" + (f"; {probs}" if probs else "")
            else:
                hits = [mm for mm in modes[1:] if worst[mm] <= TOL]
                verdict = clean > DIFF and len(hits) >= 1
                detail = f"clean err {clean:.1e}; matches mistake {hits or 'none'}"
                if slug == "mla-cache-expanded":
                    # the contract's meaning: outputs right on the file's own cache
                    verdict = verdict and worst["own_out"] <= TOL
                    detail += f"; own-cache outputs err {worst['own_out']:.1e}"
                elif slug.startswith("mla-"):
                    verdict = verdict and worst["own_out"] > DIFF
                    detail += f"; own-cache outputs err {worst['own_out']:.1e}"
                if not hits:
                    best = min(modes[1:], key=lambda mm: worst[mm])
                    detail += f" (closest {best}: {worst[best]:.1e})"
                    # is it some other slug's mistake?
                    other = collect(mod, [mm for mm in all_modes if mm not in modes])
                    o = [mm for mm, e in other.items() if e <= TOL]
                    if o:
                        detail += f"; but matches {o}"
        except Exception as exc:  # noqa: BLE001
            detail = f"error: {type(exc).__name__}: {exc}"
            traceback.print_exc()
        agree += verdict
        print(f"{'AGREE' if verdict else 'DISAGREE':8s} {row['file']:10s} {slug:28s} {detail}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
