"""Blind batch 38 (paged-attention): an independent float64 reference with one
switch per mistake, run on every file of MANIFEST.tsv.

Run from the repository root:  .venv/bin/python tests/blind38/harness.py
"""
import csv
import importlib.util
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIG = 1e4          # magnitude of every unused / stale slot in the pool

# manifest short name -> switch of the reference that reproduces that file
SWITCH = {
    "bad_01.py": "divmod_swapped",
    "bad_02.py": "block_minus_one",
    "bad_03.py": "slot_mod_num_blocks",
    "bad_04.py": "all_slots",
    "bad_05.py": "len_minus_one",
    "bad_06.py": "len_plus_one",
    "bad_07.py": "pool_order",
    "bad_08.py": "b_times_max_blocks",
    "bad_09.py": "block_n_shared",
    "bad_10.py": "kv_tiled",
    "bad_11.py": "kv_tiled",
    "bad_12.py": "no_scale",
    "bad_13.py": "scale_d",
    "bad_14.py": "softmax_heads",
    "bad_15.py": "slot_major",
}


# ----------------------------------------------------------------------------- reference
def _flat_index(sw, b, t, bt, N, bs, M):
    """Flat pool index (block * bs + slot) token t of sequence b is read from."""
    if sw == "divmod_swapped":
        col, slot = t % bs, t // bs
        if col >= M or slot >= bs:
            raise IndexError("swapped index out of range")
        return int(bt[b, col]) * bs + slot
    if sw == "block_minus_one":
        col = t // bs - 1                  # -1 wraps to the last column, as Python/torch do
        return int(bt[b, col]) * bs + t % bs
    if sw == "slot_mod_num_blocks":
        flat = int(bt[b, t // bs]) * bs + t % N
        if flat >= N * bs:
            raise IndexError("flat slot past the pool")
        return flat
    if sw in ("pool_order", "block_n_shared"):
        return t                           # block t // bs, slot t % bs of the pool itself
    if sw == "b_times_max_blocks":
        blk = b * M + t // bs
        if blk >= N:
            raise IndexError("block past the pool")
        return blk * bs + t % bs
    if sw == "slot_major":
        return int(bt[b, t % M]) * bs + t // M
    return int(bt[b, t // bs]) * bs + t % bs


def reference(q, k_cache, v_cache, block_table, lengths, sw=None):
    """Returns (out float64 (B, H, d), rows): rows = the sequences whose output is defined."""
    q = q.double()
    kc, vc = k_cache.double(), v_cache.double()
    B, H, d = q.shape
    N, bs, Hkv, _ = kc.shape
    M = block_table.shape[1]
    G = H // Hkv
    kflat, vflat = kc.reshape(N * bs, Hkv, d), vc.reshape(N * bs, Hkv, d)
    kv_of = [(h % Hkv) if sw == "kv_tiled" else (h // G) for h in range(H)]
    out = torch.zeros(B, H, d, dtype=torch.float64)
    rows = []
    for b in range(B):
        L = int(lengths[b])
        n = {"all_slots": M * bs, "len_minus_one": L - 1,
             "len_plus_one": min(L + 1, M * bs)}.get(sw, L)
        if n <= 0:
            continue                       # no key at all: output undefined, not compared
        idx = [_flat_index(sw, b, t, block_table, N, bs, M) for t in range(n)]
        K = kflat[idx][:, kv_of]           # (n, H, d)
        V = vflat[idx][:, kv_of]
        S = torch.einsum("hd,nhd->hn", q[b], K)
        if sw == "no_scale":
            pass
        elif sw == "scale_d":
            S = S / d
        else:
            S = S / math.sqrt(d)
        dim = 0 if sw == "softmax_heads" else 1
        S = S - S.max(dim=dim, keepdim=True).values
        P = S.exp()
        P = P / P.sum(dim=dim, keepdim=True)
        out[b] = torch.einsum("hn,nhd->hd", P, V)
        rows.append(b)
    return out, rows


# ----------------------------------------------------------------------------- cases
def make_case(seed, B, H, Hkv, d, bs, M, lengths, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    N = B * M + 2                          # room for every table, plus spare blocks
    kc = BIG * torch.randn(N, bs, Hkv, d, generator=g, dtype=torch.float64)
    vc = BIG * torch.randn(N, bs, Hkv, d, generator=g, dtype=torch.float64)
    perm = torch.randperm(N, generator=g).tolist()     # shuffled pool
    bt = torch.empty(B, M, dtype=torch.int64)
    own = []
    nxt = 0
    for b, L in enumerate(lengths):
        nb = -(-L // bs)
        blocks = perm[nxt:nxt + nb]
        nxt += nb
        own.append(blocks)
        for t in range(L):                 # real tokens; stale tail slots stay BIG
            kc[blocks[t // bs], t % bs] = torch.randn(Hkv, d, generator=g, dtype=torch.float64)
            vc[blocks[t // bs], t % bs] = torch.randn(Hkv, d, generator=g, dtype=torch.float64)
        bt[b, :nb] = torch.tensor(blocks)
    for b, L in enumerate(lengths):        # entries past the last block: other sequences' blocks
        others = [x for c, bl in enumerate(own) if c != b for x in bl] or perm[nxt:]
        for n in range(len(own[b]), M):
            bt[b, n] = others[int(torch.randint(len(others), (1,), generator=g))]
    q = torch.randn(B, H, d, generator=g, dtype=torch.float64)
    return (q.to(dtype), kc.to(dtype), vc.to(dtype), bt,
            torch.tensor(lengths, dtype=torch.int64))


CONFIGS = [
    # B, H, Hkv, d, bs, M, lengths  (inside a block, at a block's end, one token)
    (3, 8, 2, 8, 4, 4, [7, 8, 1]),
    (4, 4, 4, 16, 3, 3, [5, 3, 1, 9]),
    (2, 6, 3, 8, 3, 4, [9, 2]),
    (5, 8, 4, 4, 4, 5, [16, 1, 12, 3, 13]),
    (3, 4, 1, 8, 4, 4, [4, 10, 1]),
    (3, 6, 2, 8, 3, 5, [8, 6, 1]),
]
CASES = [make_case(1000 * i + s, *cfg) for i, cfg in enumerate(CONFIGS) for s in range(3)]
CASES32 = [make_case(77 + i, *cfg, dtype=torch.float32) for i, cfg in enumerate(CONFIGS[:3])]


# ----------------------------------------------------------------------------- checks
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.paged_attention


def run(fn, case):
    args = [x.clone() for x in case]
    try:
        with torch.no_grad():
            return fn(*args), None
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


def max_err(out, ref, rows):
    if not rows:
        return 0.0
    return (out.double()[rows] - ref[rows]).abs().max().item()


def check_ok(fn):
    for i, case in enumerate(CASES):
        out, err = run(fn, case)
        if err:
            return False, f"case {i} raised {err}"
        ref, rows = reference(*case)
        if out.shape != ref.shape or out.dtype != torch.float64:
            return False, f"case {i}: shape/dtype {tuple(out.shape)} {out.dtype}"
        e = max_err(out, ref, rows)
        if not e <= 1e-8:
            return False, f"case {i}: max error {e:.3g}"
    for i, case in enumerate(CASES32):
        out, err = run(fn, case)
        if err:
            return False, f"float32 case {i} raised {err}"
        ref, rows = reference(*case)
        if out.dtype != torch.float32 or not max_err(out, ref, rows) <= 1e-4:
            return False, f"float32 case {i}: dtype {out.dtype} / error"
    return True, f"{len(CASES)} float64 cases within 1e-8, {len(CASES32)} float32 cases"


def check_bad(fn, sw):
    differs = 0
    raised_both = 0
    for i, case in enumerate(CASES):
        out, err = run(fn, case)
        try:
            ref_sw, rows_sw = reference(*case, sw=sw)
            ref_err = None
        except IndexError as e:
            ref_err = str(e)
        if ref_err is not None:
            if err is None:
                return False, f"case {i}: switch raises ({ref_err}) but file does not"
            raised_both += 1
            continue
        if err is not None:
            return False, f"case {i}: file raised {err}, switch does not"
        ref_ok, rows_ok = reference(*case)
        if out.shape != ref_ok.shape:
            return False, f"case {i}: shape {tuple(out.shape)}"
        scale = max(1.0, ref_sw.abs().max().item())
        e_sw = max_err(out, ref_sw, rows_sw)
        if not e_sw <= 1e-8 * scale:
            return False, f"case {i}: differs from switch '{sw}' by {e_sw:.3g}"
        if max_err(out, ref_ok, rows_sw) > 1e-6:
            differs += 1
    if differs == 0:
        return False, "never differs from the correct reference"
    extra = f", {raised_both} raise as the switch does" if raised_both else ""
    return True, f"matches switch '{sw}' on all cases, differs on {differs}/{len(CASES)}{extra}"


def main():
    with open(os.path.join(HERE, "MANIFEST.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    agree = 0
    for r in rows:
        path = os.path.join(ROOT, r["path"])
        lines = open(path).read().splitlines()
        marked = [i + 1 for i, l in enumerate(lines) if l.rstrip().endswith("# MISTAKE")]
        fn = load(path, "b38_" + r["file"][:-3])
        if r["expected_slug"] == "ok":
            good, why = check_ok(fn)
            good = good and not marked and r["mistake_line"] == "-"
        else:
            good, why = check_bad(fn, SWITCH[r["file"]])
            if marked != [int(r["mistake_line"])]:
                good, why = False, f"# MISTAKE lines {marked} vs manifest {r['mistake_line']}"
        agree += good
        print(f"{'AGREE' if good else 'DISAGREE':8} {r['file']:10} {r['expected_slug']:22} {why}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
