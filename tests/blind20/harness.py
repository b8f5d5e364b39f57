"""Blind-batch harness: runs each file in this folder's <exercise>/ against the model answer
reference/<file>.py on random float64 inputs and reports match / differ / raise / nan per case.

Usage: [DTYPE=float64|float32|float16|bfloat16] python harness.py [exercise ...] [-v]
A file named ok__*.py must match on every case; any other file must differ (or raise, or give NaN,
or (flash) materialise a full score matrix) on at least one case.
"""

import importlib.util
import itertools
import os
import sys
import traceback

sys.dont_write_bytecode = True  # never leave __pycache__ next to the reference answers

import torch  # noqa: E402
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(os.path.dirname(os.path.dirname(ROOT)), "reference")
FILES = {
    "softmax": "softmax", "sdpa": "sdpa", "masks": "masks", "mha": "mha", "mha-fused": "mha_fused",
    "gqa": "gqa", "rope": "rope", "kv-cache": "kv_cache", "flash": "flash",
    "self-attention": "self_attention", "mha-dims": "mha_dims", "relative-position": "relative_position",
    "encoder-layer": "encoder_layer", "decoder-layer": "decoder_layer",
}
_n = itertools.count()


def load(path):
    spec = importlib.util.spec_from_file_location(f"m{next(_n)}", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def g(seed):
    return torch.Generator().manual_seed(seed)


DTYPE = getattr(torch, os.environ.get("DTYPE", "float64"))
TOL = {torch.float64: (1e-6, 1e-8), torch.float32: (1e-4, 1e-5), torch.float16: (2e-2, 2e-2),
       torch.bfloat16: (6e-2, 6e-2)}[DTYPE]


def randn(*shape, seed=0, scale=1.0):
    return (torch.randn(*shape, generator=g(seed)) * scale).to(DTYPE)


def rand_mask(shape, seed, p=0.35):
    """bool mask, True = may attend; key 0 of every row kept visible so no row is empty."""
    m = torch.rand(*shape, generator=g(seed)) > p
    m[..., 0] = True
    return m


class Tracker(TorchDispatchMode):
    """Records the largest number of elements per (B, H) of any tensor an op creates."""

    def __init__(self, bh):
        super().__init__()
        self.bh, self.biggest = bh, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.biggest = max(self.biggest, t.numel() // self.bh)
        return out


FORBIDDEN_ALL = ("scaled_dot_product_attention", "multi_head_attention_forward", "flex_attention")
FORBIDDEN_SOFTMAX = ("softmax", "log_softmax")


class Forbidden(TorchFunctionMode):
    """Records forbidden torch functions called from (a frame in) the user's file."""

    def __init__(self, path, names):
        super().__init__()
        self.path, self.names, self.hits = path, names, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if any(name == n or name.endswith("." + n) for n in self.names):
            f = sys._getframe(1)
            while f is not None:
                if f.f_code.co_filename == self.path:
                    self.hits.append(name)
                    break
                f = f.f_back
        return func(*args, **(kwargs or {}))


def flat(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for e in x for t in flat(e)]
    raise TypeError(f"unexpected return type {type(x).__name__}")


def compare(ref_out, usr_out):
    r, u = flat(ref_out), flat(usr_out)
    if len(r) != len(u):
        return "differ", f"{len(u)} tensors returned, expected {len(r)}"
    for i, (a, b) in enumerate(zip(r, u)):
        if a.shape != b.shape:
            return "differ", f"output {i}: shape {tuple(b.shape)} != {tuple(a.shape)}"
        if a.dtype == torch.bool or b.dtype == torch.bool:
            if a.dtype != b.dtype or not torch.equal(a, b):
                return "differ", f"output {i}: bool mask differs (dtype {b.dtype})"
            continue
        if a.dtype != b.dtype:
            return "dtype", f"output {i}: dtype {b.dtype} != {a.dtype}"
        if torch.isnan(b).any() and not torch.isnan(a).any():
            return "nan", f"output {i}: NaN where reference is finite"
        a, b = a.double(), b.double()
        if not torch.allclose(a, b, rtol=TOL[0], atol=TOL[1] * max(1.0, a.abs().max().item())):
            return "differ", f"output {i}: max abs diff {(a - b).abs().max().item():.3g}"
    return "match", ""


# ------------------------------------------------------------------ module helpers
def build(mod, cls, args, state=None, seed=0):
    torch.manual_seed(seed)
    m = getattr(mod, cls)(*args)
    if state is None:
        with torch.no_grad():  # randomise every parameter (LayerNorms too) so swaps show
            for i, (n, p) in enumerate(m.named_parameters()):
                p.copy_(torch.randn(p.shape, generator=g(1000 + seed * 31 + i)) * (0.5 if p.dim() > 1 else 0.3)
                        + (1.0 if "norm" in n and n.endswith("weight") else 0.0))
    else:
        m.to(torch.float64)
        m.load_state_dict(state, strict=True)
    m.eval()
    m.to(DTYPE)
    return m


def module_case(cls, args, call, seed=0):
    """call(module) -> outputs. Returns a case function (refmod, usrmod) -> (ref_out, usr_out)."""

    def run(ref, usr):
        r = build(ref, cls, args, seed=seed)
        u = build(usr, cls, args, state=r.state_dict())
        with torch.no_grad():
            return call(r), call(u)

    return run


def fn_case(name, *a, **kw):
    def run(ref, usr):
        return getattr(ref, name)(*a, **kw), getattr(usr, name)(*a, **kw)

    return run


# ------------------------------------------------------------------ cases per exercise
def cases_softmax():
    x = randn(3, 5, 7, seed=1)
    big = randn(4, 6, seed=2, scale=1e4)
    ninf = randn(3, 4, 5, seed=3)
    ninf[0, 1, 2] = ninf[2, 0, 0] = ninf[1, 3, 4] = float("-inf")
    mixed = torch.cat([randn(2, 5, seed=4), randn(2, 5, seed=5) - 3e3], 0)  # one slice far below the other
    out = {}
    for d in (-1, 0, 1, 2, -2):
        out[f"x357_dim{d}"] = fn_case("softmax", x, dim=d)
    out["big_1e4"] = fn_case("softmax", big)
    out["big_1e4_dim0"] = fn_case("softmax", big, dim=0)
    out["neginf"] = fn_case("softmax", ninf)
    out["neginf_dim1"] = fn_case("softmax", ninf, dim=1)
    out["mixed_rows"] = fn_case("softmax", mixed)
    out["vector"] = fn_case("softmax", randn(9, seed=6))
    return out


def cases_sdpa():
    out = {}
    for (lead, tq, tk, d, dv, mshape) in [
        ((4, 4), 5, 5, 8, 8, None), ((2, 3), 5, 7, 8, 6, None), ((3,), 6, 4, 5, 9, None),
        ((2, 3), 5, 7, 8, 6, (5, 7)), ((2, 3), 5, 7, 8, 6, (2, 1, 5, 7)), ((2, 3), 5, 7, 8, 6, (2, 1, 1, 7)),
        ((4,), 6, 6, 4, 4, (4, 6, 6)), ((2, 2, 3), 3, 5, 6, 2, (2, 1, 3, 3, 5)), ((7,), 1, 9, 8, 3, (7, 1, 9)),
    ]:
        q, k, v = randn(*lead, tq, d, seed=1), randn(*lead, tk, d, seed=2), randn(*lead, tk, dv, seed=3)
        m = None if mshape is None else rand_mask(mshape, seed=4)
        out[f"lead{lead}_q{tq}_k{tk}_d{d}_dv{dv}_m{mshape}"] = fn_case("scaled_dot_product_attention", q, k, v, m)
        if mshape is None:
            out[f"lead{lead}_q{tq}_k{tk}_d{d}_dv{dv}_big"] = fn_case(
                "scaled_dot_product_attention", q * 30, k * 30, v)
    return out


def cases_masks():
    out = {}
    for tq, tk in [(5, None), (5, 5), (3, 7), (1, 6), (7, 3), (4, 4)]:
        out[f"causal_{tq}_{tk}"] = fn_case("causal_mask", tq, tk)
    lengths = torch.tensor([3, 7, 1, 5])
    for t in (7, 9):
        out[f"padding_t{t}"] = fn_case("padding_mask", lengths, t)
        for c in (False, True):
            out[f"attn_t{t}_causal{c}"] = fn_case("attention_mask", lengths, t, causal=c)
    out["padding_full"] = fn_case("padding_mask", torch.tensor([6, 6]), 6)
    return out


def _mask(kind, B, Tq, Tk, seed):
    if kind is None:
        return None
    if kind == "full":
        return rand_mask((B, Tq, Tk), seed)
    return rand_mask((B, 1, Tk), seed)


def cases_mha(cls="MultiHeadAttention"):
    out = {}
    for (D, H, B, Tq, Tk, mk, bias) in [
        (24, 4, 4, 6, 6, None, True), (24, 4, 3, 5, 7, None, True), (24, 4, 4, 5, 7, "full", True),
        (24, 4, 3, 5, 7, "full", True), (24, 4, 2, 6, 6, "pad", True), (24, 4, 4, 6, 6, "pad", False),
        (12, 3, 3, 4, 4, "full", True), (12, 3, 2, 1, 5, "full", True), (10, 1, 2, 3, 4, "full", True),
        (18, 6, 6, 5, 3, "full", False),
    ]:
        q, kx, vx = randn(B, Tq, D, seed=1), randn(B, Tk, D, seed=2), randn(B, Tk, D, seed=3)
        m = _mask(mk, B, Tq, Tk, 4)
        out[f"D{D}H{H}B{B}_q{Tq}k{Tk}_{mk}_b{bias}"] = module_case(
            cls, (D, H, bias), lambda mod, q=q, kx=kx, vx=vx, m=m: mod(q, kx, vx, m))
    return out


def cases_fused():
    out = {}
    for (D, H, B, T, mk, bias) in [
        (24, 4, 4, 6, None, True), (24, 4, 3, 7, None, True), (24, 4, 4, 6, "full", True),
        (24, 4, 3, 7, "full", True), (24, 4, 2, 5, "pad", True), (12, 3, 3, 5, "full", False),
        (10, 1, 2, 4, "full", True), (18, 6, 6, 3, "pad", True),
    ]:
        x, m = randn(B, T, D, seed=1), _mask(mk, B, T, T, 4)
        out[f"D{D}H{H}B{B}T{T}_{mk}_b{bias}"] = module_case(
            "FusedSelfAttention", (D, H, bias), lambda mod, x=x, m=m: mod(x, m))
    return out


def cases_gqa():
    out = {}
    for (D, H, Hkv, B, T, mk, bias) in [
        (24, 4, 2, 4, 6, None, False), (24, 4, 2, 3, 7, "full", False), (24, 4, 1, 2, 5, "full", True),
        (24, 4, 4, 4, 6, "pad", False), (36, 6, 2, 2, 5, None, False), (36, 6, 3, 6, 6, "full", True),
        (36, 6, 2, 3, 4, "pad", False), (24, 4, 2, 2, 6, "full", True),
    ]:
        x, m = randn(B, T, D, seed=1), _mask(mk, B, T, T, 4)
        out[f"D{D}H{H}Hkv{Hkv}B{B}T{T}_{mk}_b{bias}"] = module_case(
            "GroupedQueryAttention", (D, H, Hkv, bias), lambda mod, x=x, m=m: mod(x, m))
    return out


def cases_rope():
    out = {}
    for (B, H, T, d, pos_kind, base) in [
        (2, 3, 5, 8, "arange", 10000.0), (2, 3, 5, 8, "offset", 10000.0), (2, 3, 5, 8, "gaps", 10000.0),
        (2, 3, 5, 8, "batch", 10000.0), (3, 2, 4, 6, "batch", 500.0), (1, 1, 6, 4, "gaps", 10000.0),
        (2, 4, 3, 10, "offset", 100.0), (3, 3, 4, 2, "batch", 10000.0),
    ]:
        x = randn(B, H, T, d, seed=1)
        if pos_kind == "arange":
            p = torch.arange(T)
        elif pos_kind == "offset":
            p = torch.arange(T) + 11
        elif pos_kind == "gaps":
            p = torch.tensor([0, 3, 4, 9, 20, 21][:T]) + 2
        else:
            p = torch.stack([torch.randperm(40, generator=g(b))[:T].sort().values for b in range(B)])
        out[f"B{B}H{H}T{T}d{d}_{pos_kind}_base{int(base)}"] = fn_case("apply_rope", x, p, base)
    return out


def cases_kv():
    out = {}
    for (D, H, Hkv, B, chunks, base) in [
        (32, 4, 2, 2, [9], 10000.0), (32, 4, 2, 2, [4, 1, 1, 3], 10000.0), (32, 4, 1, 3, [3, 3, 2], 10000.0),
        (32, 4, 4, 4, [5, 2, 1], 500.0), (48, 6, 2, 2, [1, 1, 1, 1], 10000.0), (48, 6, 3, 1, [6, 4], 10000.0),
    ]:
        T = sum(chunks)
        x = randn(B, T, D, seed=7)

        def seq(mod, x=x, chunks=chunks):
            outs, cache, s = [], None, 0
            for c in chunks:
                o, cache = mod(x[:, s:s + c], cache)
                outs += [o, cache[0], cache[1]]
                s += c
            return outs

        out[f"D{D}H{H}Hkv{Hkv}B{B}_chunks{chunks}_own"] = module_case(
            "CachedSelfAttention", (D, H, Hkv, base), seq)

        def fed(ref, usr, D=D, H=H, Hkv=Hkv, x=x, chunks=chunks, base=base):
            # every step of the user's module gets the reference's cache
            r = build(ref, "CachedSelfAttention", (D, H, Hkv, base))
            u = build(usr, "CachedSelfAttention", (D, H, Hkv, base), state=r.state_dict())
            ro, uo, cache, s = [], [], None, 0
            with torch.no_grad():
                for c in chunks:
                    o1, c1 = r(x[:, s:s + c], cache)
                    o2, c2 = u(x[:, s:s + c], cache)
                    ro += [o1, *c1]
                    uo += [o2, *c2]
                    cache, s = c1, s + c
            return ro, uo

        out[f"D{D}H{H}Hkv{Hkv}B{B}_chunks{chunks}_fed"] = fed
    return out


def cases_flash():
    out = {}
    for (B, H, Tq, Tk, d, causal, bs) in [
        (2, 3, 37, 53, 8, False, 16), (2, 3, 37, 53, 8, True, 16), (1, 2, 40, 40, 6, True, 7),
        (2, 2, 40, 40, 6, False, 13), (2, 1, 1, 50, 8, True, 16), (3, 2, 20, 45, 4, True, 45),
        (2, 2, 30, 30, 5, True, 64), (2, 3, 24, 61, 8, True, 10),
    ]:
        q, k, v = randn(B, H, Tq, d, seed=1), randn(B, H, Tk, d, seed=2), randn(B, H, Tk, d, seed=3)
        qb = q * 4  # larger scores: rescaling matters

        def run(ref, usr, q=qb, k=k, v=v, causal=causal, bs=bs, B=B, H=H, Tq=Tq, Tk=Tk):
            r = ref.flash_attention(q, k, v, causal=causal, block_size=bs)
            tr = Tracker(B * H)
            with tr:
                u = usr.flash_attention(q, k, v, causal=causal, block_size=bs)
            if bs < Tk and Tq > 2 * k.shape[-1] and tr.biggest >= Tq * Tk:
                raise MemoryError(f"FULL-SCORES: a tensor with {tr.biggest} >= Tq*Tk = {Tq * Tk} per (b, h)")
            return r, u

        out[f"B{B}H{H}q{Tq}k{Tk}d{d}_c{causal}_bs{bs}"] = run
    return out


def cases_self():
    out = {}
    for (dim, dk, dv, B, T, mk, bias) in [
        (10, 6, 4, 2, 7, None, True), (10, 6, 4, 3, 7, "full", True), (12, 3, 8, 2, 5, "pad", False),
        (10, 6, 4, 4, 6, "full", False), (7, 9, 5, 1, 4, "full", True),
    ]:
        x, m = randn(B, T, dim, seed=1), _mask(mk, B, T, T, 4)
        out[f"dim{dim}dk{dk}dv{dv}B{B}T{T}_{mk}_b{bias}"] = module_case(
            "SelfAttention", (dim, dk, dv, bias), lambda mod, x=x, m=m: mod(x, m))
    return out


def cases_dims():
    out = {}
    for (dim, H, dk, dv, B, Tq, Tk, mk, bias) in [
        (10, 3, 4, 5, 3, 6, 6, None, True), (10, 3, 4, 5, 2, 5, 7, "full", True), (10, 3, 4, 5, 3, 5, 7, "full", True),
        (14, 2, 6, 3, 2, 4, 4, "pad", True), (9, 4, 3, 7, 4, 3, 5, "full", False), (9, 4, 3, 7, 3, 3, 5, "pad", True),
    ]:
        q, kx, vx = randn(B, Tq, dim, seed=1), randn(B, Tk, dim, seed=2), randn(B, Tk, dim, seed=3)
        m = _mask(mk, B, Tq, Tk, 4)
        out[f"dim{dim}H{H}dk{dk}dv{dv}B{B}q{Tq}k{Tk}_{mk}_b{bias}"] = module_case(
            "MultiHeadAttentionDims", (dim, H, dk, dv, bias), lambda mod, q=q, kx=kx, vx=vx, m=m: mod(q, kx, vx, m))
    return out


def cases_relpos():
    out = {}
    for (D, H, md, B, T, mk) in [
        (16, 4, 2, 4, 9, None), (16, 4, 2, 3, 9, "full"), (16, 4, 3, 2, 11, "pad"), (12, 3, 1, 3, 6, "full"),
        (16, 2, 2, 2, 8, None), (16, 4, 2, 4, 9, "full"),
    ]:
        x, m = randn(B, T, D, seed=1), _mask(mk, B, T, T, 4)
        out[f"D{D}H{H}md{md}B{B}T{T}_{mk}"] = module_case(
            "RelativeSelfAttention", (D, H, md), lambda mod, x=x, m=m: mod(x, m))
    return out


def cases_encoder():
    out = cases_mha()  # the file's own MultiHeadAttention, called on its own
    out = {f"MHA_{k}": v for k, v in list(out.items())[::2]}
    for (D, H, ff, B, T, mk, nf) in [
        (16, 4, 32, 4, 6, None, False), (16, 4, 32, 4, 6, None, True), (16, 4, 32, 3, 7, "full", False),
        (16, 4, 32, 3, 7, "full", True), (16, 4, 32, 2, 5, "pad", True), (12, 3, 20, 3, 5, "full", False),
    ]:
        x, m = randn(B, T, D, seed=1), _mask(mk, B, T, T, 4)
        out[f"D{D}H{H}ff{ff}B{B}T{T}_{mk}_nf{nf}"] = module_case(
            "EncoderLayer", (D, H, ff, nf), lambda mod, x=x, m=m: mod(x, m))
    return out


def cases_decoder():
    out = cases_mha()
    out = {f"MHA_{k}": v for k, v in list(out.items())[::2]}
    for (D, H, ff, B, Tq, Tk, tk, mk, nf) in [
        (16, 4, 24, 4, 6, 6, None, None, False), (16, 4, 24, 4, 6, 6, None, None, True),
        (16, 4, 24, 3, 5, 7, None, None, False), (16, 4, 24, 3, 5, 7, None, None, True),
        (16, 4, 24, 3, 5, 7, "full", "full", False), (16, 4, 24, 3, 5, 7, "pad", "pad", True),
        (16, 4, 24, 4, 6, 6, "full", "pad", True), (16, 4, 24, 2, 6, 6, "pad", "full", False),
        (12, 3, 20, 3, 4, 4, "full", "full", True), (12, 3, 20, 2, 5, 3, None, "full", False),
        (16, 4, 24, 2, 5, 7, "full", None, True),
    ]:
        x, mem = randn(B, Tq, D, seed=1), randn(B, Tk, D, seed=2)
        tm, mm = _mask(tk, B, Tq, Tq, 4), _mask(mk, B, Tq, Tk, 5)
        out[f"D{D}H{H}B{B}q{Tq}k{Tk}_tgt{tk}_mem{mk}_nf{nf}"] = module_case(
            "DecoderLayer", (D, H, ff, nf), lambda mod, x=x, mem=mem, tm=tm, mm=mm: mod(x, mem, tm, mm))
    return out


CASES = {
    "softmax": cases_softmax, "sdpa": cases_sdpa, "masks": cases_masks, "mha": cases_mha,
    "mha-fused": cases_fused, "gqa": cases_gqa, "rope": cases_rope, "kv-cache": cases_kv, "flash": cases_flash,
    "self-attention": cases_self, "mha-dims": cases_dims, "relative-position": cases_relpos,
    "encoder-layer": cases_encoder, "decoder-layer": cases_decoder,
}


def check_file(ex, path, verbose=False):
    ref = load(os.path.join(REF, FILES[ex] + ".py"))
    try:
        usr = load(path)
    except Exception as e:  # noqa: BLE001
        return {"import": ("raise", repr(e))}
    res = {}
    for name, case in CASES[ex]().items():
        names = FORBIDDEN_ALL + (FORBIDDEN_SOFTMAX if ex == "softmax" else ())
        try:
            with Forbidden(path, names) as fb:
                r, u = case(ref, usr)
            res[name] = compare(r, u)
            if fb.hits:
                res[name] = ("forbidden", f"called {sorted(set(fb.hits))}")
        except MemoryError as e:
            res[name] = ("fullscores", str(e))
        except Exception as e:  # noqa: BLE001
            tb = traceback.extract_tb(e.__traceback__)
            where = next((f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(tb)
                          if f.filename == path), "?")
            res[name] = ("raise", f"{type(e).__name__}: {str(e)[:120]} @ {where}")
    return res


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "-v" in sys.argv
    exs = args or list(CASES)
    bad = 0
    import csv

    repo = os.path.dirname(os.path.dirname(ROOT))
    with open(os.path.join(ROOT, "MANIFEST.tsv"), encoding="utf-8") as fh:  # each file where it lives now
        rows = list(csv.DictReader(fh, delimiter="\t"))
    for ex in exs:
        for row in sorted((r for r in rows if r["exercise"] == ex), key=lambda r: r["file"]):
            fn = row["file"]
            res = check_file(ex, os.path.join(repo, row["path"]), verbose)
            counts = {}
            for st, _ in res.values():
                counts[st] = counts.get(st, 0) + 1
            ok_label = fn.startswith("ok__")
            good = (counts.get("match", 0) == len(res)) if ok_label else (counts.get("match", 0) < len(res))
            bad += not good
            print(f"{'PASS' if good else 'FAIL'} {ex}/{fn}: {counts}")
            shown = 0
            for name, (st, msg) in res.items():
                if verbose or (st != "match" and shown < 4):
                    print(f"      {st:10s} {name}: {msg}")
                    shown += st != "match"
    print(f"\n{bad} file(s) not behaving as labelled")
    return bad


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
