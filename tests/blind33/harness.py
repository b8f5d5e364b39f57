"""Blind batch 33 (alibi): an independent float64 reference written from
/work/shared/EXERCISES.md only, with one switch per planted mistake.

Run from the repository root:
    .venv/bin/python tests/blind33/harness.py

For every manifest row: a correct file (expected_slug ``ok``) must match the
reference within 1e-6 on every case, and its ``alibi_slopes(n)`` for n in
1..16 as well. A wrong file must differ from the reference (on some case or
some slope) and match the reference with its one switch on.
"""
import csv
import importlib.util
import math
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 1e-6
DIFF = 1e-4  # a wrong file must differ from the correct reference by more than this


# ---------------------------------------------------------------- reference

def ref_slopes(n, mode="ok"):
    """Press et al.'s get_slopes, float64. mode picks a planted variant."""

    def pow2(m):
        if mode == "zero_start":  # ratio ** h, h from 0: first slope is 1
            return [2.0 ** (-8.0 * h / m) for h in range(m)]
        return [2.0 ** (-8.0 * (h + 1) / m) for h in range(m)]

    def get(m):
        if m & (m - 1) == 0:
            return pow2(m)
        if mode == "truncate":  # next power of two's sequence cut to m
            big = 1
            while big < m:
                big *= 2
            return pow2(big)[:m]
        p = 1
        while p * 2 < m:
            p *= 2
        start = 1 if mode == "odd" else 0
        return pow2(p) + get(2 * p)[start::2][: m - p]

    return torch.tensor(get(n), dtype=torch.float64)


def ref_attention(q, k, v, causal, slopes_mode="ok", sign_flip=False,
                  bias_scaled=False, key_only=False, dist_from_i=False,
                  diag_hidden=False, scale="sqrt_d", softmax_dim=-1):
    """Returns (out, weights, valid) with valid (Tq,) True where a row sees a key."""
    q, k, v = q.double(), k.double(), v.double()
    B, H, Tq, d = q.shape
    Tk = k.shape[2]
    m = ref_slopes(H, slopes_mode).view(1, H, 1, 1)
    i = torch.arange(Tq, dtype=torch.float64).view(Tq, 1)
    p = i + (Tk - Tq)
    j = torch.arange(Tk, dtype=torch.float64).view(1, Tk)

    raw = q @ k.transpose(-1, -2)
    if scale == "sqrt_d":
        factor = 1.0 / math.sqrt(d)
    elif scale == "none":
        factor = 1.0
    elif scale == "sqrt_tk":
        factor = 1.0 / math.sqrt(Tk)
    else:
        raise ValueError(scale)

    if key_only:
        bias = m * j  # fairseq's + m * j, whatever the mask
    else:
        pos = i if dist_from_i else p
        bias = -m * (pos - j).abs()
        if sign_flip:
            bias = -bias
    if bias_scaled:
        scores = (raw + bias) * factor
    else:
        scores = raw * factor + bias

    if causal:
        allowed = (j < p) if diag_hidden else (j <= p)
    else:
        allowed = torch.ones(Tq, Tk, dtype=torch.bool)
    allowed = allowed.expand(Tq, Tk)
    valid = allowed.any(dim=-1)
    scores = scores.masked_fill(~allowed, float("-inf"))
    if softmax_dim == -1:
        safe = scores.masked_fill(~valid.view(Tq, 1), 0.0)
        w = torch.softmax(safe, dim=-1) * valid.view(Tq, 1)
    else:
        w = torch.softmax(scores, dim=softmax_dim)
        w = torch.nan_to_num(w, nan=0.0)
    return w @ v, w, valid


# One switch per wrong file (keyed by the manifest's short name).
SWITCHES = {
    "w01.py": dict(slopes_mode="truncate"),
    "w02.py": dict(slopes_mode="odd"),
    "w03.py": dict(slopes_mode="zero_start"),
    "w04.py": dict(sign_flip=True),
    "w05.py": dict(sign_flip=True),
    "w06.py": dict(bias_scaled=True),
    "w07.py": dict(bias_scaled=True),
    "w08.py": dict(key_only=True),
    "w09.py": dict(key_only=True),
    "w10.py": dict(dist_from_i=True),
    "w11.py": dict(diag_hidden=True),
    "w12.py": dict(scale="sqrt_tk"),
    "w13.py": dict(scale="none"),
    "w14.py": dict(softmax_dim=2),
}

# (B, H, Tq, Tk, d, causal): power-of-2 and other head counts, causal and not,
# Tq < Tk and Tq == Tk, non-causal always with Tq >= 2, several d (d != Tk).
CASES = [
    (2, 4, 5, 5, 8, True),
    (2, 4, 5, 5, 8, False),
    (1, 8, 7, 7, 16, True),
    (2, 8, 3, 9, 4, False),
    (1, 6, 3, 7, 16, True),
    (2, 6, 4, 4, 6, False),
    (1, 12, 6, 9, 8, True),
    (1, 12, 6, 9, 8, False),
    (3, 3, 5, 5, 32, True),
    (2, 3, 2, 8, 32, False),
    (2, 5, 4, 6, 12, False),
    (1, 2, 1, 4, 8, True),
    (1, 1, 3, 5, 8, True),
    (1, 16, 4, 10, 8, True),
    (1, 7, 6, 6, 4, False),
]
SEEDS = (0, 1)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def row_diff(a, b, valid):
    """max |a - b| over valid query rows; inf if NaN/inf there."""
    a = a.double()[..., valid, :]
    b = b.double()[..., valid, :]
    if a.numel() == 0:
        return 0.0
    if not torch.isfinite(a).all():
        return float("inf")
    return (a - b).abs().max().item()


def evaluate(mod, switch):
    """Returns (max diff to switched ref, max diff to correct ref, notes)."""
    to_sw, to_ok, notes = 0.0, 0.0, []
    for n in range(1, 17):
        s = mod.alibi_slopes(n)
        if s.dtype != torch.float32 or tuple(s.shape) != (n,):
            notes.append(f"slopes({n}) dtype/shape {s.dtype} {tuple(s.shape)}")
            to_sw = to_ok = float("inf")
            continue
        s = s.double()
        to_sw = max(to_sw, (s - ref_slopes(n, switch.get("slopes_mode", "ok"))).abs().max().item())
        to_ok = max(to_ok, (s - ref_slopes(n)).abs().max().item())
    for seed in SEEDS:
        for (B, H, Tq, Tk, d, causal) in CASES:
            g = torch.Generator().manual_seed(1000 * seed + 17 * H + Tq * 7 + Tk + d)
            q = torch.randn(B, H, Tq, d, generator=g, dtype=torch.float64) * 1.5
            k = torch.randn(B, H, Tk, d, generator=g, dtype=torch.float64) * 1.5
            v = torch.randn(B, H, Tk, d, generator=g, dtype=torch.float64)
            try:
                out, w = mod.alibi_attention(q.clone(), k.clone(), v.clone(), causal=causal)
            except Exception as e:  # noqa: BLE001
                notes.append(f"raised {type(e).__name__}: {e} on {(B, H, Tq, Tk, d, causal)}")
                return float("inf"), float("inf"), notes
            if tuple(out.shape) != (B, H, Tq, d) or tuple(w.shape) != (B, H, Tq, Tk):
                notes.append(f"shape {tuple(out.shape)} {tuple(w.shape)}")
                return float("inf"), float("inf"), notes
            o_sw, w_sw, val_sw = ref_attention(q, k, v, causal, **switch)
            o_ok, w_ok, val_ok = ref_attention(q, k, v, causal)
            to_sw = max(to_sw, row_diff(out, o_sw, val_sw), row_diff(w, w_sw, val_sw))
            both = val_sw & val_ok
            to_ok = max(to_ok, row_diff(out, o_ok, both), row_diff(w, w_ok, both))
    # dtype kept on a float32 call
    q = torch.randn(1, 4, 3, 8)
    out, w = mod.alibi_attention(q, torch.randn(1, 4, 5, 8), torch.randn(1, 4, 5, 8))
    if out.dtype != torch.float32 or w.dtype != torch.float32:
        notes.append(f"float32 in, {out.dtype}/{w.dtype} out")
        to_sw = float("inf")
    return to_sw, to_ok, notes


def main():
    with open(os.path.join(HERE, "MANIFEST.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    agree = 0
    for r in rows:
        path = os.path.join(ROOT, r["path"])
        lines = open(path).read().splitlines()
        marked = [i + 1 for i, l in enumerate(lines) if "# MISTAKE" in l]
        meta_ok = os.path.basename(path).startswith(r["expected_slug"] + "__")
        if r["expected_slug"] == "ok":
            meta_ok &= not marked and r["mistake_line"] == "-"
        else:
            meta_ok &= marked == [int(r["mistake_line"])]
        mod = load(path, "b33_" + r["file"].replace(".py", ""))
        if r["expected_slug"] == "ok":
            to_sw, to_ok, notes = evaluate(mod, {})
            good = to_ok <= TOL and not notes
            detail = f"max|diff| to reference {to_ok:.2e}"
        else:
            sw = SWITCHES[r["file"]]
            to_sw, to_ok, notes = evaluate(mod, sw)
            good = to_sw <= TOL and to_ok > DIFF and not notes
            detail = f"to switched ref {to_sw:.2e}, to correct ref {to_ok:.2e} (switch {sw})"
        good &= meta_ok
        agree += good
        print(f"{'AGREE   ' if good else 'DISAGREE'} {r['file']} {r['expected_slug']:<18} {detail}"
              + ("" if meta_ok else " [manifest/MISTAKE marker mismatch]")
              + ("" if not notes else " " + "; ".join(notes)))
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
