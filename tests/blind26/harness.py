"""Blind harness for llama-block: own reference (with one knob per mistake), weights copied by
name into every file's modules, float64 cases. A file's diagnosis is the set of slugs whose
mutated reference matches the file on every case; it agrees with the manifest when that set is
exactly {expected_slug} ("none" = the unmutated reference)."""
import csv
import importlib.util
import math
import pathlib
import sys
import traceback

import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent.parent  # the repository: the files live in tests/corpus
DT = torch.float64
RTOL = 1e-5  # relative to the reference's max |value|; float32 RoPE angles stay well inside

# ----------------------------------------------------------------------------- reference
def rms(x, w, eps, v):
    if v == "mean":
        x = x - x.mean(-1, keepdim=True)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    if v == "eps_out":
        return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * w
    if v == "eps_none":
        return x / x.pow(2).mean(-1, keepdim=True).sqrt() * w
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def swiglu(x, w1, w2, w3, v):
    g, u = x @ w1.T, x @ w3.T
    if v == "gate_swap":
        g, u = u, g
    act = {"gelu": F.gelu, "sigmoid": torch.sigmoid, "relu": F.relu}.get(v, F.silu)
    return (act(g) * u) @ w2.T


def rope(x, pos, base, v):
    d = x.shape[-1]
    half = d // 2
    i = torch.arange(half, dtype=DT)
    theta = pos.to(DT)[..., None] * base ** (-2 * i / d)  # (T, h) or (B, T, h)
    if theta.dim() == 3:
        theta = theta[:, None]
    c, s = theta.cos(), theta.sin()
    if v == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, b * c + a * s], -1).flatten(-2)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, b * c + a * s], -1)


def block(x, P, cfg, positions, v):
    B, T, D = x.shape
    H, Hkv = cfg["H"], cfg["Hkv"]
    d = D // H
    eps, base = cfg["eps"], cfg["base"]
    if positions is None or v == "pos_ignored":
        positions = torch.arange(T)
    norm = lambda t, w: rms(t, w, eps, v)
    ffn = lambda t: swiglu(t, P["ffn.w1.weight"], P["ffn.w2.weight"], P["ffn.w3.weight"], v)

    def attn(a):
        q = (a @ P["W_q.weight"].T).view(B, T, H, d).transpose(1, 2)
        k = (a @ P["W_k.weight"].T).view(B, T, Hkv, d).transpose(1, 2)
        val = (a @ P["W_v.weight"].T).view(B, T, Hkv, d).transpose(1, 2)
        q, k = rope(q, positions, base, v), rope(k, positions, base, v)
        if v == "kv_tile":
            k, val = k.repeat(1, H // Hkv, 1, 1), val.repeat(1, H // Hkv, 1, 1)
        else:
            k, val = k.repeat_interleave(H // Hkv, 1), val.repeat_interleave(H // Hkv, 1)
        scale = {"scale_D": 1 / math.sqrt(D), "no_scale": 1.0}.get(v, 1 / math.sqrt(d))
        s = q @ k.transpose(-1, -2) * scale
        i = torch.arange(T)
        keep = {"diag_hidden": i[None] < i[:, None], "diag_plus": i[None] <= i[:, None] + 1,
                "no_causal": torch.ones(T, T, dtype=torch.bool)}.get(v, i[None] <= i[:, None])
        s = s.masked_fill(~keep, torch.finfo(DT).min)
        p = torch.softmax(s, -2 if v == "softmax_dim" else -1)
        return (p @ val).transpose(1, 2).reshape(B, T, D) @ P["W_o.weight"].T

    if v == "post_norm":
        h = norm(x + attn(x), P["attn_norm.weight"])
        return norm(h + ffn(h), P["ffn_norm.weight"])
    if v == "no_res_attn":
        h = attn(norm(x, P["attn_norm.weight"]))
    else:
        h = x + attn(norm(x, P["attn_norm.weight"]))
    if v == "no_res_ffn":
        return ffn(norm(h, P["ffn_norm.weight"]))
    return h + ffn(norm(h, P["ffn_norm.weight"]))


VARIANTS = {
    "none": ["none"],
    "rmsnorm-mean-subtracted": ["mean"],
    "rmsnorm-eps-misplaced": ["eps_out", "eps_none"],
    "swiglu-gate-swapped": ["gate_swap"],
    "swiglu-wrong-activation": ["gelu", "sigmoid", "relu"],
    "missing-residual": ["no_res_attn", "no_res_ffn"],
    "norm-placement": ["post_norm"],
    "rope-interleaved": ["interleaved"],
    "rope-positions-ignored": ["pos_ignored"],
    "kv-repeat-order": ["kv_tile"],
    "wrong-scale": ["scale_D"],
    "missing-scale": ["no_scale"],
    "causal-diagonal": ["diag_hidden", "diag_plus"],
    "missing-causal-mask": ["no_causal"],
    "softmax-wrong-dim": ["softmax_dim"],
}

# ----------------------------------------------------------------------------- cases
def make_cases():
    g = torch.Generator().manual_seed(1234)
    rn = lambda *s: torch.randn(*s, generator=g, dtype=DT)
    cases = []
    specs = [
        # name, B, T, D, H, Hkv, d_ff, eps, base, positions
        ("eps1e-6 pos=None H8/Hkv2", 2, 7, 64, 8, 2, 96, 1e-6, 10000.0, None),
        ("eps0.1 pos=(T,) uneven H4/Hkv2", 2, 6, 32, 4, 2, 48, 0.1, 10000.0,
         torch.tensor([0, 1, 3, 4, 9, 10])),
        ("eps0.1 pos=(B,T) rows differ H6/Hkv3", 3, 5, 48, 6, 3, 80, 0.1, 500.0,
         torch.tensor([[0, 2, 3, 7, 8], [5, 6, 11, 12, 20], [1, 4, 5, 6, 13]])),
        ("eps1e-6 pos=(B,T) rows differ H8/Hkv4", 2, 9, 64, 8, 4, 64, 1e-6, 10000.0,
         torch.tensor([[3, 4, 5, 9, 10, 11, 17, 18, 30], [0, 1, 2, 3, 4, 6, 8, 12, 16]])),
        ("eps0.1 pos=None H4/Hkv2 small-x", 1, 8, 32, 4, 2, 40, 0.1, 10000.0, None),
    ]
    for name, B, T, D, H, Hkv, dff, eps, base, pos in specs:
        d = D // H
        P = {
            "attn_norm.weight": 1 + 0.3 * rn(D),
            "ffn_norm.weight": 1 + 0.3 * rn(D),
            "W_q.weight": rn(D, D) / math.sqrt(D),
            "W_k.weight": rn(Hkv * d, D) / math.sqrt(D),
            "W_v.weight": rn(Hkv * d, D) / math.sqrt(D),
            "W_o.weight": rn(D, D) / math.sqrt(D),
            "ffn.w1.weight": rn(dff, D) / math.sqrt(D),
            "ffn.w3.weight": rn(dff, D) / math.sqrt(D),
            "ffn.w2.weight": rn(D, dff) / math.sqrt(dff),
        }
        x = rn(B, T, D) * 1.5 + 0.4
        if "small-x" in name:
            x = x * 0.2
        cfg = dict(D=D, H=H, Hkv=Hkv, dff=dff, eps=eps, base=base)
        cases.append(dict(kind="block", name=name, cfg=cfg, P=P, x=x, pos=pos))
    for eps in (1e-6, 0.1):
        D = 24
        cases.append(dict(kind="rms", name=f"RMSNorm eps={eps}", eps=eps, D=D,
                          w=1 + 0.3 * rn(D), x=rn(3, 5, D) * 0.8 + 0.5))
    D, hid = 16, 40
    cases.append(dict(kind="swiglu", name="SwiGLU", D=D, hid=hid,
                      w1=rn(hid, D) / 4, w2=rn(D, hid) / 6, w3=rn(hid, D) / 4, x=rn(2, 5, D) * 2))
    return cases


def ref_out(c, v):
    if c["kind"] == "block":
        return block(c["x"], c["P"], c["cfg"], c["pos"], v)
    if c["kind"] == "rms":
        return rms(c["x"], c["w"], c["eps"], v)
    return swiglu(c["x"], c["w1"], c["w2"], c["w3"], v)


def copy_params(mod, named):
    have = dict(mod.named_parameters())
    assert set(have) == set(named), f"param names differ: {sorted(have)} vs {sorted(named)}"
    with torch.no_grad():
        for k, t in named.items():
            assert have[k].shape == t.shape, (k, have[k].shape, t.shape)
            have[k].copy_(t)


def file_out(m, c):
    if c["kind"] == "block":
        cfg = c["cfg"]
        mod = m.LlamaBlock(cfg["D"], cfg["H"], cfg["Hkv"], cfg["dff"],
                           rope_base=cfg["base"], eps=cfg["eps"]).to(DT).eval()
        copy_params(mod, c["P"])
        with torch.no_grad():
            return mod(c["x"]) if c["pos"] is None else mod(c["x"], c["pos"])
    if c["kind"] == "rms":
        mod = m.RMSNorm(c["D"], eps=c["eps"]).to(DT).eval()
        copy_params(mod, {"weight": c["w"]})
    else:
        mod = m.SwiGLU(c["D"], c["hid"]).to(DT).eval()
        copy_params(mod, {"w1.weight": c["w1"], "w2.weight": c["w2"], "w3.weight": c["w3"]})
    with torch.no_grad():
        return mod(c["x"])


def close(a, b):
    if a.shape != b.shape or a.dtype != b.dtype or not torch.isfinite(a).all():
        return False, float("inf")
    err = ((a - b).abs().max() / (b.abs().max() + 1e-12)).item()
    return err <= RTOL, err


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem.replace("-", "_"), path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def self_checks(cases):
    """The reference against the contract's RoPE formula written element by element, and the
    shift property (positions 0..T-1 + c give exactly the output of 0..T-1)."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 3, 4, 8, generator=g, dtype=DT)
    pos = torch.tensor([[0, 3, 4, 9], [2, 5, 6, 30]])
    out = torch.empty_like(x)
    d = 8
    for b in range(2):
        for t in range(4):
            for i in range(d // 2):
                th = pos[b, t].item() * 10000.0 ** (-2 * i / d)
                xi, xj = x[b, :, t, i], x[b, :, t, i + d // 2]
                out[b, :, t, i] = xi * math.cos(th) - xj * math.sin(th)
                out[b, :, t, i + d // 2] = xj * math.cos(th) + xi * math.sin(th)
    assert torch.allclose(rope(x, pos, 10000.0, "none"), out, atol=1e-12)
    c = next(c for c in cases if c["kind"] == "block" and c["pos"] is None)
    T = c["x"].shape[1]
    a = block(c["x"], c["P"], c["cfg"], None, "none")
    b = block(c["x"], c["P"], c["cfg"], torch.arange(T) + 11, "none")
    assert torch.allclose(a, b, atol=1e-12)
    print("self-checks passed (element-wise RoPE formula, shift invariance)")


def smoke_other_dtypes(m, cases):
    """Correct files only: float32 and bfloat16 keep their dtype and stay close."""
    c = cases[2]
    cfg = c["cfg"]
    notes = []
    for dt, tol in ((torch.float32, 1e-4), (torch.bfloat16, 5e-2)):
        mod = m.LlamaBlock(cfg["D"], cfg["H"], cfg["Hkv"], cfg["dff"], rope_base=cfg["base"],
                           eps=cfg["eps"])
        copy_params(mod, c["P"])
        mod = mod.to(dt).eval()
        with torch.no_grad():
            y = mod(c["x"].to(dt), c["pos"])
        ref = ref_out(c, "none")
        err = ((y.to(DT) - ref).abs().max() / ref.abs().max()).item()
        notes.append(f"{str(dt)[6:]}:{'ok' if y.dtype == dt and err < tol else 'FAIL'}({err:.1e})")
    return " ".join(notes)


def main():
    cases = make_cases()
    refs = {(i, var): ref_out(c, var) for i, c in enumerate(cases)
            for vs in VARIANTS.values() for var in vs}
    # sanity: every mutation must differ from the reference on some case
    for slug, vs in VARIANTS.items():
        for var in vs:
            if slug != "none":
                assert any(not close(refs[(i, var)], refs[(i, "none")])[0]
                           for i in range(len(cases))), f"variant {var} never shows"
    self_checks(cases)
    rows = list(csv.DictReader(open(HERE / "MANIFEST.tsv"), delimiter="\t"))
    agree = 0
    for r in rows:
        path = ROOT / r["path"]
        try:
            m = load(path)
            outs = [file_out(m, c) for c in cases]
        except Exception:
            print(f"{r['file']}: EXCEPTION\n{traceback.format_exc()}")
            continue
        matched = [slug for slug, vs in VARIANTS.items()
                   if any(all(close(outs[i], refs[(i, var)])[0] for i in range(len(cases)))
                          for var in vs)]
        failing = [c["name"] for i, c in enumerate(cases)
                   if not close(outs[i], refs[(i, "none")])[0]]
        worst = max(close(outs[i], refs[(i, "none")])[1] for i in range(len(cases)))
        expected = "none" if r["expected_slug"] == "ok" else r["expected_slug"]  # the manifest says ok
        ok = matched == [expected]
        agree += ok
        print(f"{'OK ' if ok else 'BAD'} {r['file']:32s} expected={r['expected_slug']:24s} "
              f"matched={matched} max_rel_err_vs_correct={worst:.2e}")
        if expected == "none":
            print(f"      other dtypes: {smoke_other_dtypes(m, cases)}")
        else:
            print(f"      differs from correct on: {failing}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
