"""Independent float64 check of the blind_b41 paged-attention batch.

Run from the repository root:  .venv/bin/python tests/blind41/harness.py
"""
import csv
import importlib.util
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# expected slug / file name -> the one switch that reproduces it
SWITCH = {
    "w01.py": "block_permuted_slots",
    "w02.py": "block_no_stride",
    "w03.py": "block_slot_major",
    "w04.py": "len_batch_max",
    "w05.py": "len_whole_block",
    "w06.py": "len_drop_newest",
    "w07.py": "table_contiguous",
    "w08.py": "table_pool_prefix",
    "w09.py": "table_sorted",
    "w10.py": "kv_tiled",
}


def reference(q, kc, vc, bt, lengths, switch=None):
    """Plain loops, float64. Rows with no key come back NaN (never compared)."""
    B, H, d = q.shape
    NB, bs, Hkv, _ = kc.shape
    MB = bt.shape[1]
    G = H // Hkv
    kf = kc.reshape(NB * bs, Hkv, d)
    vf = vc.reshape(NB * bs, Hkv, d)
    out = torch.full((B, H, d), float("nan"), dtype=torch.float64)
    max_len = int(lengths.max())
    for b in range(B):
        L = int(lengths[b])
        nblk = -(-L // bs)
        if switch == "len_batch_max":
            positions = range(max_len)
        elif switch == "len_whole_block":
            positions = range(nblk * bs)
        elif switch == "len_drop_newest":
            positions = range(L - 1)
        else:
            positions = range(L)
        own_sorted = sorted(int(x) for x in bt[b, :nblk])
        rows = []
        for t in positions:
            col, slot = t // bs, t % bs
            if switch == "block_permuted_slots":
                col, slot = t % MB, t // MB
            phys = int(bt[b, col])
            if switch == "table_contiguous":
                phys = b * MB + col
            elif switch == "table_pool_prefix":
                phys = col
            elif switch == "table_sorted":
                phys = own_sorted[col]
            flat = phys * bs + slot
            if switch == "block_no_stride":
                flat = phys + slot
            elif switch == "block_slot_major":
                flat = slot * NB + phys
            rows.append(flat)
        if not rows:
            continue
        idx = torch.tensor(rows)
        for h in range(H):
            kvh = h % Hkv if switch == "kv_tiled" else h // G
            K = kf[idx, kvh].double()
            V = vf[idx, kvh].double()
            s = K @ q[b, h].double() / math.sqrt(d)
            p = torch.softmax(s, dim=0)
            out[b, h] = p @ V
    return out


def make_case(seed, H, Hkv, d, bs, lengths, extra_cols=0):
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    nblk = [-(-L // bs) for L in lengths]
    MB = max(nblk) + extra_cols
    NB = B * MB + 3
    big = lambda *shape: (50 + 50 * torch.rand(*shape, generator=g, dtype=torch.float64)) * (
        torch.randint(0, 2, shape, generator=g).double() * 2 - 1)
    kc = big(NB, bs, Hkv, d)
    vc = big(NB, bs, Hkv, d)
    perm = torch.randperm(NB, generator=g).tolist()
    bt = torch.empty(B, MB, dtype=torch.int64)
    owned = []
    i = 0
    for b in range(B):
        mine = perm[i:i + nblk[b]]
        i += nblk[b]
        owned.append(mine)
        bt[b, :nblk[b]] = torch.tensor(mine)
        for t in range(lengths[b]):
            blk, slot = mine[t // bs], t % bs
            kc[blk, slot] = torch.randn(Hkv, d, generator=g, dtype=torch.float64)
            vc[blk, slot] = torch.randn(Hkv, d, generator=g, dtype=torch.float64)
    for b in range(B):  # entries past the last block: other sequences' blocks
        others = [x for c in range(B) if c != b for x in owned[c]]
        for n in range(nblk[b], MB):
            bt[b, n] = others[int(torch.randint(0, len(others), (1,), generator=g))]
    q = torch.randn(B, H, d, generator=g, dtype=torch.float64)
    return q, kc, vc, bt, torch.tensor(lengths, dtype=torch.int64)


CASES = [
    # (H, Hkv, d, block_size, lengths, extra table columns)
    (8, 2, 8, 4, [1, 8, 6, 13], 0),      # one token, block end, inside, longest inside
    (6, 3, 4, 2, [5, 1, 4, 2], 0),
    (12, 4, 16, 16, [16, 23, 1, 40], 0),
    (4, 2, 8, 1, [3, 1, 5, 2], 0),
    (8, 4, 8, 8, [24, 8, 1, 13], 1),     # longest at a block end, spare column
    (6, 2, 8, 3, [7, 9, 1], 0),
    (8, 2, 4, 5, [2, 1, 10, 14, 5], 2),
]


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.paged_attention


def close(a, ref):
    """a matches ref within 1e-8 (relative to the scale); NaN in ref is a wildcard."""
    m = ~torch.isnan(ref)
    if not m.any():
        return True
    a = a.double()
    if torch.isnan(a[m]).any():
        return False
    tol = 1e-8 * (1 + ref[m].abs().max().item())
    return (a[m] - ref[m]).abs().max().item() <= tol


def main():
    cases = [make_case(100 + i, *c) for i, c in enumerate(CASES)]
    refs = [reference(*c) for c in cases]
    with open(os.path.join(HERE, "MANIFEST.tsv")) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    good = 0
    for r in rows:
        fn = load(os.path.join(ROOT, r["path"]), "b41_" + r["file"][:-3])
        switch = SWITCH.get(r["file"])
        differs, matches, err = False, True, None
        for c, ref in zip(cases, refs):
            args = [x.clone() for x in c]
            try:
                out = fn(*args)
            except Exception as e:  # noqa: BLE001
                err = f"{type(e).__name__}: {e}"
                matches = False
                differs = True
                continue
            if out.shape != ref.shape or out.dtype != torch.float64:
                matches = False
                differs = True
                continue
            if not close(out, ref):
                differs = True
            if switch and not close(out, reference(*c, switch=switch)):
                matches = False
        if r["expected_slug"] == "ok":
            ok = not differs and err is None
            detail = "agrees with reference" if ok else f"DIFFERS from reference {err or ''}"
        else:
            ok = differs and matches
            detail = (f"differs; matches switch {switch}" if ok else
                      f"differs={differs} matches_switch({switch})={matches} {err or ''}")
        good += ok
        print(f"{'AGREE   ' if ok else 'DISAGREE'} {r['file']} {r['expected_slug']:22s} {detail}")
    print(f"SUMMARY: {good}/{len(rows)} rows agree with the manifest")
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
