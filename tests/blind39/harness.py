"""Blind batch 39 (paged-attention): an independent float64 reference with one
switch per mistake, run against every file in MANIFEST.tsv.

Run from the repository root:  .venv/bin/python tests/blind39/harness.py
"""
import csv
import importlib.util
import math
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
STALE = 1.0e3  # unused slots get values of this size

# --------------------------------------------------------------------------
# reference: explicit per-token gather, one switch per mistake
# --------------------------------------------------------------------------
SWITCHES = {
    None,
    "block-slot-major",      # blocks flattened slot-major: index i -> block i % MB, slot i // MB
    "block-one-based-slot",  # token t read at slot (t + 1) % bs of block t // bs
    "block-ceil",            # token t read from logical block ceil(t / bs)
    "len-plus-one",          # tokens 0..L (one too many)
    "len-whole-blocks",      # every slot of each block read once L > bs
    "len-drop-last",         # tokens 0..L-2 (newest dropped)
    "table-logical",         # logical block n read from pool block n
    "table-packed",          # sequence b assumed packed in the pool after sequences < b
    "table-sorted",          # a sequence's blocks read in increasing pool index
    "kv-repeat-order",       # query head h reads kv head h % Hkv
    "missing-scale",
    "wrong-scale",           # 1 / sqrt(H * d)
    "softmax-wrong-dim",     # softmax over the heads
    "mask-fill-zero",        # all MB * bs gathered positions, those >= L get score 0
}


def reference(q, k_cache, v_cache, block_table, lengths, switch=None):
    assert switch in SWITCHES, switch
    q = q.double()
    kc, vc = k_cache.double(), v_cache.double()
    B, H, d = q.shape
    NB, bs, Hkv, _ = kc.shape
    MB = block_table.shape[1]
    G = H // Hkv
    bt = block_table.tolist()
    lens = [int(x) for x in lengths.tolist()]
    out = torch.zeros(B, H, d, dtype=torch.float64)
    packed_start = 0
    for b in range(B):
        L = lens[b]
        nblk = -(-L // bs)
        own_sorted = sorted(bt[b][:nblk])
        start = packed_start
        packed_start += nblk

        def locate(t):
            if switch == "block-slot-major":
                return bt[b][t % MB], t // MB
            if switch == "block-one-based-slot":
                return bt[b][t // bs], (t + 1) % bs
            if switch == "block-ceil":
                return bt[b][-(-t // bs)], t % bs
            if switch == "table-logical":
                return t // bs, t % bs
            if switch == "table-packed":
                return start + t // bs, t % bs
            if switch == "table-sorted":
                return own_sorted[t // bs], t % bs
            return bt[b][t // bs], t % bs

        if switch == "len-plus-one":
            tokens = list(range(L + 1))
        elif switch == "len-whole-blocks":
            tokens = list(range(L)) if L <= bs else list(range(nblk * bs))
        elif switch == "len-drop-last":
            tokens = list(range(L - 1))
        elif switch == "mask-fill-zero":
            tokens = list(range(MB * bs))
        else:
            tokens = list(range(L))

        if not tokens:  # no key at all: the file returns zeros
            continue
        K = torch.stack([kc[locate(t)] for t in tokens])  # (n, Hkv, d)
        V = torch.stack([vc[locate(t)] for t in tokens])
        heads = [h % Hkv if switch == "kv-repeat-order" else h // G for h in range(H)]
        Kh = K[:, heads].transpose(0, 1)  # (H, n, d)
        Vh = V[:, heads].transpose(0, 1)
        if switch == "missing-scale":
            scale = 1.0
        elif switch == "wrong-scale":
            scale = 1.0 / math.sqrt(H * d)
        else:
            scale = 1.0 / math.sqrt(d)
        S = torch.einsum("hd,hnd->hn", q[b], Kh) * scale
        if switch == "mask-fill-zero":
            masked = torch.tensor([t >= L for t in tokens])
            S = S.masked_fill(masked[None, :], 0.0)
        axis = 0 if switch == "softmax-wrong-dim" else 1
        S = S - S.max(dim=axis, keepdim=True).values
        P = S.exp() / S.exp().sum(dim=axis, keepdim=True)
        out[b] = torch.einsum("hn,hnd->hd", P, Vh)
    return out


# --------------------------------------------------------------------------
# cases, built as the contract says
# --------------------------------------------------------------------------
def make_case(seed, B, H, Hkv, d, bs, extra_cols=1, spare=3, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)

    def rint(lo, hi):  # inclusive
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    lengths = []
    # ends inside a block, at a block's end, at one token, then random ones
    lengths.append(bs * rint(0, 3) + rint(1, bs - 1) if bs > 1 else rint(2, 9))
    lengths.append(bs * rint(1, 3))
    lengths.append(1)
    while len(lengths) < B:
        lengths.append(rint(1, 4 * bs + 3))
    order = torch.randperm(B, generator=g).tolist()
    lengths = [lengths[i] for i in order]

    nblk = [-(-L // bs) for L in lengths]
    MB = max(nblk) + extra_cols
    num_blocks = max(sum(nblk) + spare, B * MB)
    pool = torch.randperm(num_blocks, generator=g).tolist()

    k_cache = STALE * torch.randn(num_blocks, bs, Hkv, d, generator=g, dtype=torch.float64)
    v_cache = STALE * torch.randn(num_blocks, bs, Hkv, d, generator=g, dtype=torch.float64)
    owned, cursor = [], 0
    for n in nblk:
        owned.append(pool[cursor:cursor + n])
        cursor += n
    block_table = torch.empty(B, MB, dtype=torch.int64)
    for b, L in enumerate(lengths):
        for t in range(L):
            blk, slot = owned[b][t // bs], t % bs
            k_cache[blk, slot] = torch.randn(Hkv, d, generator=g, dtype=torch.float64)
            v_cache[blk, slot] = torch.randn(Hkv, d, generator=g, dtype=torch.float64)
        others = [x for c, blocks in enumerate(owned) if c != b for x in blocks]
        for n in range(MB):
            if n < nblk[b]:
                block_table[b, n] = owned[b][n]
            else:  # past the last block: another sequence's block
                block_table[b, n] = others[rint(0, len(others) - 1)]
    q = torch.randn(B, H, d, generator=g, dtype=torch.float64)
    lengths = torch.tensor(lengths, dtype=torch.int64)
    return [t.to(dtype) if t.is_floating_point() else t
            for t in (q, k_cache, v_cache, block_table, lengths)]


CASES = [
    # seed, B, H, Hkv, d, bs, extra_cols
    (1, 4, 8, 2, 16, 4, 1),
    (2, 4, 6, 3, 8, 3, 2),
    (3, 5, 4, 4, 8, 8, 1),
    (4, 4, 8, 4, 16, 16, 1),
    (5, 3, 12, 3, 8, 2, 1),
    (6, 4, 4, 2, 32, 5, 2),
    (7, 4, 8, 8, 16, 4, 3),
    (8, 4, 8, 1, 8, 1, 1),
    (9, 6, 6, 2, 12, 7, 1),
]



def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.paged_attention


def main():
    rows = list(csv.DictReader(open(HERE / "MANIFEST.tsv"), delimiter="\t"))
    cases = [make_case(*c[:6], extra_cols=c[6]) for c in CASES]
    agree = 0
    for i, row in enumerate(rows):
        path = ROOT / row["path"]
        expected = row["expected_slug"]
        switch = FILE_SWITCH[row["file"]]
        problems = []
        lines = path.read_text().splitlines()
        marked = [n + 1 for n, line in enumerate(lines) if line.rstrip().endswith("# MISTAKE")]
        if expected == "ok":
            if marked or row["mistake_line"] != "-":
                problems.append(f"marker lines {marked}")
        elif marked != [int(row["mistake_line"])]:
            problems.append(f"marker lines {marked} != manifest {row['mistake_line']}")
        try:
            fn = load(path, f"b39_{i}")
            worst_ok, worst_sw = 0.0, 0.0
            for case in cases:
                args = [t.clone() for t in case]
                got = fn(*args)
                for a, b_ in zip(args, case):
                    if not torch.equal(a, b_):
                        problems.append("modified an input")
                if got.shape != case[0].shape:
                    problems.append(f"shape {tuple(got.shape)}")
                    continue
                got = got.double()
                want = reference(*case)
                worst_ok = max(worst_ok, (got - want).abs().max().item())
                if switch is not None:
                    want_sw = reference(*case, switch=switch)
                    err = ((got - want_sw).abs() / (1.0 + want_sw.abs())).max().item()
                    worst_sw = max(worst_sw, err)
            if expected == "ok":
                if not worst_ok <= 1e-8:
                    problems.append(f"differs from the reference by {worst_ok:.3g}")
                # dtype kept on a float32 case
                c32 = make_case(11, 4, 8, 2, 16, 4, dtype=torch.float32)
                o32 = fn(*c32)
                if o32.dtype != torch.float32:
                    problems.append(f"float32 in, {o32.dtype} out")
                elif (o32.double() - reference(*c32)).abs().max().item() > 1e-4:
                    problems.append("float32 case off")
                detail = f"max |diff| vs reference {worst_ok:.2e}"
            else:
                if not worst_ok > 1e-6:
                    problems.append(f"does not differ from the reference ({worst_ok:.3g})")
                if not worst_sw <= 1e-8:
                    problems.append(f"switch {switch!r} off by {worst_sw:.3g}")
                detail = f"vs reference {worst_ok:.2e}, vs switch {switch} {worst_sw:.2e}"
        except Exception as exc:  # noqa: BLE001
            problems.append(f"raised {type(exc).__name__}: {exc}")
            detail = ""
        ok = not problems
        agree += ok
        verdict = "AGREE" if ok else "DISAGREE"
        print(f"{verdict:8} {row['file']:8} {expected:22} {detail}"
              + ("" if ok else "  <- " + "; ".join(problems)))
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


FILE_SWITCH = {
    "c01.py": None,
    "c02.py": None,
    "c03.py": None,
    "c04.py": None,
    "w01.py": "block-slot-major",
    "w02.py": "block-one-based-slot",
    "w03.py": "block-ceil",
    "w04.py": "len-plus-one",
    "w05.py": "len-whole-blocks",
    "w06.py": "len-drop-last",
    "w07.py": "table-logical",
    "w08.py": "table-packed",
    "w09.py": "table-sorted",
    "w10.py": "kv-repeat-order",
    "w11.py": "missing-scale",
    "w12.py": "wrong-scale",
    "w13.py": "softmax-wrong-dim",
    "w14.py": "mask-fill-zero",
}

if __name__ == "__main__":
    sys.exit(main())
