"""Blind batch 40 harness: independent float64 NumPy reference for paged-attention.

Loads every file in MANIFEST.tsv, runs it on random cases built as the contract
describes, and checks that correct files agree with the reference (1e-8) and
that every wrong file differs from it yet matches the reference with exactly
its one switch turned on.
"""
import csv
import importlib.util
import math
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))

# one switch per wrong file (manifest "file" column)
SWITCH = {
    "w01": "block_noscale",
    "w02": "block_transpose",
    "w03": "block_slot_shift",
    "w04": "len_tail",
    "w05": "len_le",
    "w06": "len_mod",
    "w07": "table_zero",
    "w08": "table_contig",
    "w09": "table_sorted",
    "w10": "kv_tile",
    "w11": "scale_H",
    "w12": "softmax_heads",
}


def reference(q, kc, vc, table, lengths, sw=None):
    """q (B,H,d), kc/vc (nb,bs,Hkv,d), table (B,MB), lengths (B,) as NumPy arrays."""
    B, H, d = q.shape
    nb, bs, Hkv, _ = kc.shape
    MB = table.shape[1]
    g = H // Hkv
    out = np.zeros((B, H, d))
    start = 0
    for b in range(B):
        L = int(lengths[b])
        nblk = -(-L // bs)
        s0 = start  # first pool block if sequences were laid out contiguously
        start += nblk

        def loc(t):
            if sw == "block_noscale":
                f = int(table[b, t // bs]) + t % bs
                return f // bs, f % bs
            if sw == "block_transpose":
                return int(table[b, t % MB]), t // MB
            if sw == "block_slot_shift":
                return int(table[b, t // bs]), (t + 1) % bs
            if sw == "len_tail":
                tt = t + nblk * bs - L
                return int(table[b, tt // bs]), tt % bs
            if sw == "table_zero":
                return t // bs, t % bs
            if sw == "table_contig":
                return s0 + t // bs, t % bs
            if sw == "table_sorted":
                return int(sorted(table[b, :nblk].tolist())[t // bs]), t % bs
            return int(table[b, t // bs]), t % bs

        if sw == "len_le":
            toks = range(min(L + 1, MB * bs))
        elif sw == "len_mod" and L % bs == 0:
            toks = range(L - bs)
        else:
            toks = range(L)
        n = len(toks)
        if n == 0:
            continue
        K = np.stack([kc[loc(t)] for t in toks])  # (n, Hkv, d)
        V = np.stack([vc[loc(t)] for t in toks])
        heads = np.arange(H) % Hkv if sw == "kv_tile" else np.arange(H) // g
        K, V = K[:, heads], V[:, heads]  # (n, H, d)
        scale = 1.0 / math.sqrt(H if sw == "scale_H" else d)
        S = np.einsum("hd,nhd->hn", q[b], K) * scale
        ax = 0 if sw == "softmax_heads" else 1
        S = S - S.max(axis=ax, keepdims=True)
        P = np.exp(S)
        P = P / P.sum(axis=ax, keepdims=True)
        out[b] = np.einsum("hn,nhd->hd", P, V)
    return out


def make_case(seed, H, Hkv, d, bs, lengths, spare=1, extra=2):
    rng = np.random.default_rng(seed)
    B = len(lengths)
    need = [-(-L // bs) for L in lengths]
    MB = max(need) + spare
    nb = sum(need) + extra
    perm = rng.permutation(nb)
    large = lambda *s: (50.0 + 50.0 * rng.random(s)) * rng.choice([-1.0, 1.0], size=s)
    kc, vc = large(nb, bs, Hkv, d), large(nb, bs, Hkv, d)  # every unused slot large
    table = np.zeros((B, MB), dtype=np.int64)
    owned, i = [], 0
    for b, L in enumerate(lengths):
        blocks = perm[i:i + need[b]]
        i += need[b]
        owned.append(blocks)
        table[b, :need[b]] = blocks
        for t in range(L):
            kc[blocks[t // bs], t % bs] = rng.standard_normal((Hkv, d))
            vc[blocks[t // bs], t % bs] = rng.standard_normal((Hkv, d))
    for b in range(B):  # entries past the last block: other sequences' blocks
        others = np.concatenate([owned[o] for o in range(B) if o != b])
        table[b, need[b]:] = rng.choice(others, size=MB - need[b])
    q = rng.standard_normal((B, H, d))
    return q, kc, vc, table, np.array(lengths, dtype=np.int64)


def cases():
    out = [
        make_case(1, 8, 2, 16, 4, [9, 12, 1, 6]),
        make_case(2, 4, 4, 8, 2, [5, 8, 1], spare=0),
        make_case(3, 6, 3, 8, 16, [37, 32, 1, 16]),
        make_case(4, 4, 2, 32, 8, [24, 1, 13], spare=0, extra=0),
        make_case(5, 8, 8, 16, 4, [4, 11, 1], spare=2, extra=1),
        make_case(6, 8, 4, 16, 1, [3, 1, 5]),
    ]
    rng = np.random.default_rng(7)
    for s in range(6):
        bs = int(rng.choice([2, 3, 4, 8, 16]))
        H, Hkv = [(8, 2), (4, 2), (6, 2), (4, 4), (8, 4)][s % 5]
        d = int(rng.choice([8, 16, 32]))
        # inside a block, at a block's end, one token, then random
        lens = [bs * int(rng.integers(1, 4)) + int(rng.integers(1, bs)) if bs > 1 else 3,
                bs * int(rng.integers(1, 4)), 1]
        lens += [int(rng.integers(1, 4 * bs + 1)) for _ in range(int(rng.integers(0, 3)))]
        out.append(make_case(100 + s, H, Hkv, d, bs, lens, spare=int(rng.integers(0, 3))))
    return out


def load(path):
    spec = importlib.util.spec_from_file_location("cand_" + os.path.basename(path)[:-3].replace("-", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.paged_attention


def run(fn, case):
    q, kc, vc, table, lengths = case
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))
    with torch.no_grad():
        out = fn(t(q), t(kc), t(vc), t(table), t(lengths))
    return out.detach().cpu().numpy()


def main():
    with open(os.path.join(HERE, "MANIFEST.tsv")) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    cs = cases()
    refs = [reference(*c) for c in cs]
    agree = 0
    for row in rows:
        name = row["file"][:-3]
        path = os.path.join(ROOT, row["path"])
        try:
            fn = load(path)
            outs = [run(fn, c) for c in cs]
        except Exception as e:  # noqa: BLE001
            print(f"{row['file']}\t{row['expected_slug']}\tDISAGREE\traised {type(e).__name__}: {e}")
            continue
        diffs = [float(np.max(np.abs(o - r))) if o.shape == r.shape else float("inf")
                 for o, r in zip(outs, refs)]
        if row["expected_slug"] == "ok":
            ok = all(x <= 1e-8 for x in diffs)
            detail = f"max |diff| vs reference = {max(diffs):.2e}"
        else:
            sw = SWITCH[name]
            sw_refs = [reference(*c, sw=sw) for c in cs]
            match = all(o.shape == r.shape and np.allclose(o, r, rtol=1e-8, atol=1e-8)
                        for o, r in zip(outs, sw_refs))
            differs = any(x > 1e-6 for x in diffs)
            ok = match and differs
            n_diff = sum(x > 1e-6 for x in diffs)
            detail = (f"switch {sw}: matches={match}; differs from reference on "
                      f"{n_diff}/{len(cs)} cases (max {max(diffs):.2e})")
        agree += ok
        print(f"{row['file']}\t{row['expected_slug']}\t{'AGREE' if ok else 'DISAGREE'}\t{detail}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
