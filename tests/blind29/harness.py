"""Blind batch 29 (mla): an independent float64 reference written from EXERCISES.md,
with one switch per planted mistake, checked against every file in MANIFEST.tsv.

Run from the repository root:  .venv/bin/python tests/blind29/harness.py
"""
import copy
import csv
import importlib.util
import math
import os
import sys
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
F64 = torch.float64
ATOL_MATCH = 1e-8      # float64 agreement
ATOL_DIFF = 1e-6       # a wrong file must differ from the contract by more than this somewhere
ATOL_F32 = 2e-4        # float32 run against the float64 reference

# one switch per planted mistake, keyed by the corpus file name
SWITCH = {
    "mla-cache-expanded__blind_b29_raw_latent_cache.py": "cache-raw-latent",
    "mla-cache-expanded__blind_b29_unrotated_kpe_cache.py": "cache-unrotated-kpe",
    "mla-kv-layout__blind_b29_absorbed_kvb_blocks.py": "layout-kvb-blocks",
    "mla-kv-layout__blind_b29_q_blocks.py": "layout-q-blocks",
    "mla-rope-misplaced__blind_b29_rope_full_q.py": "rope-full-q",
    "mla-rope-misplaced__blind_b29_kpe_unrotated.py": "rope-kpe-unrotated",
    "mla-latent-not-normalised__blind_b29_norm_twice.py": "latent-twice",
    "mla-latent-not-normalised__blind_b29_norm_skipped.py": "latent-skipped",
    "rmsnorm-mean-subtracted__blind_b29_centred_rms.py": "rms-mean",
    "rmsnorm-eps-misplaced__blind_b29_norm_plus_eps.py": "rms-eps",
    "wrong-scale__blind_b29_absorbed_rank_scale.py": "scale-rank",
    "causal-misaligned__blind_b29_first_rows.py": "causal-topleft",
    "missing-causal-mask__blind_b29_masked_fill_discarded.py": "no-mask",
    "rope-wrong-direction__blind_b29_rotate_half_flipped.py": "rope-neg",
    "causal-diagonal__blind_b29_future_key.py": "causal-plus-one",
}


# ----------------------------------------------------------------------------- reference
def ref_rmsnorm(x, weight, eps, sw=None):
    x = x.to(F64)
    if sw == "rms-mean":
        x = x - x.mean(-1, keepdim=True)
    ms = (x * x).mean(-1, keepdim=True)
    if sw == "rms-eps":
        return x / (torch.sqrt(ms) + eps) * weight.to(F64)
    return x / torch.sqrt(ms + eps) * weight.to(F64)


def ref_rope(x, pos, base, sign=1.0):
    """Half-split RoPE, x (..., T, d), pos (T,)."""
    d = x.shape[-1]
    half = d // 2
    i = torch.arange(half, dtype=F64)
    theta = pos.to(F64)[:, None] * (float(base) ** (-2.0 * i / d))[None, :]
    cos, sin = torch.cos(theta), sign * torch.sin(theta)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def ref_mla(P, cfg, x, cache=None, sw=None):
    """MultiHeadLatentAttention.forward of the contract; `sw` turns on one planted mistake."""
    H, r, dn, dr, dv, base = cfg["H"], cfg["r"], cfg["dn"], cfg["dr"], cfg["dv"], cfg["base"]
    x = x.to(F64)
    B, T, _ = x.shape
    Tp = 0 if cache is None else cache[0].shape[1]
    Tk = Tp + T
    pos = torch.arange(Tp, Tk)
    sign = -1.0 if sw == "rope-neg" else 1.0
    norm = lambda t: ref_rmsnorm(t, P["kv_norm"], 1e-6, sw)

    q = x @ P["W_q"].T
    if sw == "layout-q-blocks":
        qn = q[..., :H * dn].reshape(B, T, H, dn)
        qp = q[..., H * dn:].reshape(B, T, H, dr)
    else:
        q = q.reshape(B, T, H, dn + dr)
        qn, qp = q[..., :dn], q[..., dn:]
    qn, qp = qn.transpose(1, 2), qp.transpose(1, 2)                 # (B, H, T, .)
    if sw == "rope-full-q":
        qf = ref_rope(torch.cat([qn, qp], -1), pos, base, sign)
        qn, qp = qf[..., :dn], qf[..., dn:]
    else:
        qp = ref_rope(qp, pos, base, sign)

    a = x @ P["W_kv_a"].T
    c_raw, kpe_raw = a[..., :r], a[..., r:]
    if sw in ("cache-unrotated-kpe", "rope-kpe-unrotated"):
        kpe_new = kpe_raw
    else:
        kpe_new = ref_rope(kpe_raw, pos, base, sign)
    c_new = c_raw if sw in ("cache-raw-latent", "latent-skipped") else norm(c_raw)
    if cache is None:
        c_all, kpe_all = c_new, kpe_new
    else:
        c_all = torch.cat([cache[0].to(F64), c_new], 1)
        kpe_all = torch.cat([cache[1].to(F64), kpe_new], 1)

    # what reaches W_kv_b and the rope score
    c_use = norm(c_all) if sw in ("cache-raw-latent", "latent-twice") else c_all
    kpe_use = ref_rope(kpe_all, torch.arange(Tk), base, sign) if sw == "cache-unrotated-kpe" else kpe_all

    kvb = c_use @ P["W_kv_b"].T
    if sw == "layout-kvb-blocks":
        kn = kvb[..., :H * dn].reshape(B, Tk, H, dn)
        v = kvb[..., H * dn:].reshape(B, Tk, H, dv)
    else:
        kvb = kvb.reshape(B, Tk, H, dn + dv)
        kn, v = kvb[..., :dn], kvb[..., dn:]
    kn, v = kn.transpose(1, 2), v.transpose(1, 2)                   # (B, H, Tk, .)

    s = qn @ kn.transpose(-1, -2) + qp @ kpe_use[:, None].transpose(-1, -2)
    s = s / math.sqrt(r + dr if sw == "scale-rank" else dn + dr)
    i = torch.arange(T)[:, None]
    j = torch.arange(Tk)[None, :]
    off = Tk - T
    if sw == "causal-topleft":
        allowed = j <= i
    elif sw == "no-mask":
        allowed = torch.ones(T, Tk, dtype=torch.bool)
    elif sw == "causal-plus-one":
        allowed = j <= i + off + 1
    else:
        allowed = j <= i + off
    s = s.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(s, dim=-1)
    o = (p @ v).transpose(1, 2).reshape(B, T, H * dv) @ P["W_o"].T
    return o, (c_all, kpe_all)


# ----------------------------------------------------------------------------- cases
CONFIGS = [
    # kv_rank unlike dn, dr, dv, dn+dr, dn+dv; dn != dr != dv; dr >= 4
    dict(D=32, H=4, r=12, dn=6, dr=4, dv=14, base=10000.0),
    dict(D=40, H=2, r=22, dn=8, dr=6, dv=4, base=10000.0),
    dict(D=24, H=3, r=7, dn=4, dr=8, dv=5, base=500.0),
]
PREFILL = 5
CHUNKS = [1, 3, 2]


def load(path, idx):
    spec = importlib.util.spec_from_file_location(f"blind29_mod_{idx}", os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_module(mod, cfg, gen):
    m = mod.MultiHeadLatentAttention(cfg["D"], cfg["H"], cfg["r"], cfg["dn"], cfg["dr"], cfg["dv"],
                                     rope_base=cfg["base"])
    m = m.to(F64).eval()
    sd = m.state_dict()
    with torch.no_grad():
        for name, shape in [("W_q.weight", None), ("W_kv_a.weight", None), ("W_kv_b.weight", None),
                            ("W_o.weight", None)]:
            w = sd[name]
            w.copy_(torch.randn(w.shape, generator=gen, dtype=F64) * 1.3 / math.sqrt(w.shape[1]))
        sd["kv_norm.weight"].copy_(0.5 + torch.rand(cfg["r"], generator=gen, dtype=F64))
    P = {k.split(".")[0]: v.detach().clone() for k, v in m.state_dict().items()
         if k in ("W_q.weight", "W_kv_a.weight", "W_kv_b.weight", "W_o.weight", "kv_norm.weight")}
    return m, P


def maxdiff(a, b):
    return (a.detach().to(F64) - b.detach().to(F64)).abs().max().item()


class Rec:
    """Collects, for every compared tensor, the distance to the contract and to the switched reference."""

    def __init__(self):
        self.d_ok = 0.0
        self.d_sw = 0.0
        self.d_ok_out_own = 0.0   # outputs only, on the file's own cache
        self.problems = []

    def add(self, got, ref_ok, ref_sw, what):
        if got.shape != ref_sw.shape:
            self.problems.append(f"{what}: shape {tuple(got.shape)} vs {tuple(ref_sw.shape)}")
            self.d_sw = float("inf")
            self.d_ok = float("inf")
            return
        if not torch.isfinite(got).all():
            self.problems.append(f"{what}: non-finite")
            self.d_sw = float("inf")
        self.d_sw = max(self.d_sw, maxdiff(got, ref_sw))
        if got.shape == ref_ok.shape:
            self.d_ok = max(self.d_ok, maxdiff(got, ref_ok))
            if "own-cache" in what and what.endswith(" out"):
                self.d_ok_out_own = max(self.d_ok_out_own, maxdiff(got, ref_ok))
        else:
            self.d_ok = float("inf")


def run_sequence(m, P, cfg, x_chunks, sw, rec, tag, start_cache=None):
    """Feed chunks one after another, each model fed its own cache; compare out and cache."""
    c_file = c_sw = c_ok = start_cache
    for n, xc in enumerate(x_chunks):
        with torch.no_grad():
            out, cache = m(xc, c_file)
        o_sw, c_sw = ref_mla(P, cfg, xc, c_sw, sw)
        o_ok, c_ok = ref_mla(P, cfg, xc, c_ok, None)
        rec.add(out, o_ok, o_sw, f"{tag} step{n} out")
        rec.add(cache[0], c_ok[0], c_sw[0], f"{tag} step{n} c_kv")
        rec.add(cache[1], c_ok[1], c_sw[1], f"{tag} step{n} k_pe")
        c_file = cache


def check_file(path, idx, sw):
    mod = load(path, idx)
    rec = Rec()
    notes = []
    gen = torch.Generator().manual_seed(1234 + idx)
    for ci, cfg in enumerate(CONFIGS):
        m, P = make_module(mod, cfg, gen)
        B = 2
        total = PREFILL + sum(CHUNKS)
        x = torch.randn(B, total, cfg["D"], generator=gen, dtype=F64)
        bounds = [0, PREFILL]
        for c in CHUNKS:
            bounds.append(bounds[-1] + c)
        chunks = [x[:, bounds[k]:bounds[k + 1]] for k in range(len(bounds) - 1)]
        # 1) prefill then chunked decode on the file's own cache
        run_sequence(m, P, cfg, chunks, sw, rec, f"cfg{ci} own-cache")
        # 2) whole sequence at once
        run_sequence(m, P, cfg, [x], sw, rec, f"cfg{ci} one-shot")
        # 3) start from a cache the (contract) reference made, then continue on the file's own cache
        prefix = torch.randn(B, 6, cfg["D"], generator=gen, dtype=F64)
        _, ref_cache = ref_mla(P, cfg, prefix, None, None)
        xn = torch.randn(B, 4, cfg["D"], generator=gen, dtype=F64)
        run_sequence(m, P, cfg, [xn[:, :3], xn[:, 3:]], sw, rec, f"cfg{ci} ref-cache",
                     start_cache=(ref_cache[0].clone(), ref_cache[1].clone()))

        # 4) float32: dtype kept and values close to the float64 reference
        m32 = copy.deepcopy(m).to(torch.float32)
        cache32 = None
        c_sw = None
        for n, xc in enumerate(chunks):
            with torch.no_grad():
                o32, cache32 = m32(xc.float(), cache32)
            o_sw, c_sw = ref_mla(P, cfg, xc, c_sw, sw)
            if o32.dtype != torch.float32 or cache32[0].dtype != torch.float32 or cache32[1].dtype != torch.float32:
                notes.append(f"cfg{ci} float32 dtype not kept")
            e = max(maxdiff(o32, o_sw), maxdiff(cache32[0], c_sw[0]), maxdiff(cache32[1], c_sw[1]))
            if e > ATOL_F32:
                notes.append(f"cfg{ci} float32 step{n} off by {e:.2e}")
        # 5) bfloat16: dtype kept, finite
        mb = copy.deepcopy(m).to(torch.bfloat16)
        with torch.no_grad():
            ob, cb = mb(chunks[0].to(torch.bfloat16), None)
            ob2, cb2 = mb(chunks[1].to(torch.bfloat16), cb)
        for t, nm in [(ob, "out"), (cb[0], "c_kv"), (cb[1], "k_pe"), (ob2, "out2")]:
            if t.dtype != torch.bfloat16:
                notes.append(f"cfg{ci} bf16 {nm} dtype {t.dtype}")
            if not torch.isfinite(t.float()).all():
                notes.append(f"cfg{ci} bf16 {nm} non-finite")
        # 6) meta device: tensors made inside forward must follow the input's device
        if ci == 0:
            mm = copy.deepcopy(m).to("meta")
            try:
                xm = torch.empty(B, PREFILL, cfg["D"], dtype=F64, device="meta")
                om, cm = mm(xm, None)
                om2, cm2 = mm(torch.empty(B, 2, cfg["D"], dtype=F64, device="meta"), cm)
                if om2.device.type != "meta" or cm2[0].device.type != "meta":
                    notes.append("meta: output left the input's device")
            except Exception as e:  # noqa: BLE001
                notes.append(f"meta run raised: {type(e).__name__}: {str(e)[:80]}")

    # 7) RMSNorm alone: eps 0.1, non-ones weight, inputs with an offset
    for dim, eps, offset in [(7, 0.1, 2.5), (16, 0.1, -1.0), (10, 1e-6, 0.7), (5, 1e-3, 4.0)]:
        norm = mod.RMSNorm(dim, eps=eps).to(F64)
        with torch.no_grad():
            norm.weight.copy_(torch.randn(dim, generator=gen, dtype=F64))
        xr = torch.randn(3, 4, dim, generator=gen, dtype=F64) * 0.8 + offset
        with torch.no_grad():
            y = norm(xr)
        rec.add(y, ref_rmsnorm(xr, norm.weight, eps, None), ref_rmsnorm(xr, norm.weight, eps, sw),
                f"RMSNorm(dim={dim}, eps={eps})")
        n16 = mod.RMSNorm(dim, eps=eps).to(torch.float16)
        with torch.no_grad():
            y16 = n16(xr.to(torch.float16))
        if y16.dtype != torch.float16:
            notes.append(f"RMSNorm float16 dtype {y16.dtype}")
    return rec, notes


def main():
    with open(os.path.join(HERE, "MANIFEST.tsv"), newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    torch.manual_seed(0)
    agree = 0
    for idx, row in enumerate(rows):
        path = row["path"]
        name = os.path.basename(path)
        expected = row["expected_slug"]
        sw = None if expected == "ok" else SWITCH.get(name)
        verdict, detail = False, ""
        try:
            # the planted line really is where the manifest says
            lines = open(os.path.join(ROOT, path)).read().split("\n")
            marked = [i + 1 for i, l in enumerate(lines) if l.rstrip().endswith("# MISTAKE")]
            want = [] if row["mistake_line"] == "-" else [int(row["mistake_line"])]
            if marked != want:
                raise RuntimeError(f"# MISTAKE lines {marked} != manifest {want}")
            if expected != "ok" and sw is None:
                raise RuntimeError("no switch for this file")
            rec, notes = check_file(path, idx, sw)
            if expected == "ok":
                verdict = rec.d_ok <= ATOL_MATCH and not notes and not rec.problems
                detail = f"max|file-ref|={rec.d_ok:.1e}"
            else:
                verdict = (rec.d_sw <= ATOL_MATCH and rec.d_ok > ATOL_DIFF
                           and not notes and not rec.problems)
                if expected == "mla-cache-expanded":
                    # the slug's definition: outputs right on the file's own cache, the cache itself not
                    verdict = verdict and rec.d_ok_out_own <= ATOL_MATCH
                detail = (f"max|file-ref[{sw}]|={rec.d_sw:.1e}  max|file-ref|={rec.d_ok:.1e}"
                          f"  own-cache outputs {rec.d_ok_out_own:.1e}")
            if notes or rec.problems:
                detail += "  " + "; ".join((rec.problems + notes)[:4])
        except Exception as e:  # noqa: BLE001
            detail = f"harness error: {type(e).__name__}: {e}"
            traceback.print_exc(limit=3)
        agree += verdict
        print(f"{'AGREE   ' if verdict else 'DISAGREE'} {row['file']:<14} {expected:<27} {detail}  [{name}]")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
