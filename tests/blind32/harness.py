"""Blind batch 32 (alibi): an independent float64 reference written from the
contract in EXERCISES.md only, with one switch per mistake.

For every manifest row the harness loads the file, compares alibi_slopes(n) for
n = 1..16 and alibi_attention on random cases against the reference, and checks:
  - ok rows: every case matches the plain reference within TOL;
  - bad rows: some case differs from the plain reference, and every case matches
    the reference with one of the switches written for that row's slug.
Run from the repository root:  .venv/bin/python tests/blind32/harness.py
"""
import csv
import importlib.util
import math
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 1e-6          # match: max abs difference at most this (slopes are float32)
DIFF = 1e-4         # differ: max abs difference above this on some case

# one switch per mistake; a slug may name several ways of making it
SLUG_SWITCHES = {
    "alibi-slopes": ["slopes_pow2_formula_for_all", "slopes_start_at_one",
                     "slopes_odd_extra", "slopes_extra_other_base"],
    "alibi-sign": ["sign_rewards_distance"],
    "alibi-bias-scaled": ["bias_scaled"],
    "alibi-key-only": ["key_only_always"],
    "causal-misaligned": ["distance_from_i", "mask_top_left"],
    "missing-scale": ["missing_scale"],
    "wrong-scale": ["scale_by_d"],
    "missing-causal-mask": ["causal_ignored"],
    "softmax-wrong-dim": ["softmax_dim_queries"],
}
ALL_SWITCHES = [s for v in SLUG_SWITCHES.values() for s in v]


# ----------------------------------------------------------------- reference
def ref_slopes_list(n, sw=None):
    """Press et al.'s slopes as Python floats (float64), with a slope switch."""
    def geometric(count, base_n=None):
        base_n = count if base_n is None else base_n
        off = 0 if sw == "slopes_start_at_one" else 1
        return [2.0 ** (-8.0 * (h + off) / base_n) for h in range(count)]

    if sw == "slopes_pow2_formula_for_all":
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    if n & (n - 1) == 0:
        return geometric(n)
    p = 1
    while 2 * p < n:
        p *= 2
    if sw == "slopes_extra_other_base":
        # second half as a fresh geometric sequence of its own length
        return geometric(p) + geometric(n - p)
    twice = geometric(2 * p)
    extra = twice[1::2] if sw == "slopes_odd_extra" else twice[0::2]
    return geometric(p) + extra[: n - p]


def ref_slopes(n, sw=None):
    # the contract's slopes are float32
    return torch.tensor(ref_slopes_list(n, sw), dtype=torch.float32)


def ref_alibi(q, k, v, causal=True, sw=None):
    q, k, v = q.double(), k.double(), v.double()
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    m = ref_slopes(H, sw).double().view(1, H, 1, 1)
    i = torch.arange(Tq, dtype=torch.float64).view(Tq, 1)
    j = torch.arange(Tk, dtype=torch.float64).view(1, Tk)
    p = i + (Tk - Tq)
    p_dist = i if sw == "distance_from_i" else p
    p_mask = i if sw == "mask_top_left" else p

    if sw == "key_only_always":
        bias = m * j
    elif sw == "sign_rewards_distance":
        bias = m * (p_dist - j).abs()
    else:
        bias = -m * (p_dist - j).abs()

    if sw == "missing_scale":
        scale = 1.0
    elif sw == "scale_by_d":
        scale = 1.0 / d
    else:
        scale = 1.0 / math.sqrt(d)

    raw = q @ k.transpose(-2, -1)
    scores = (raw + bias) * scale if sw == "bias_scaled" else raw * scale + bias
    if causal and sw != "causal_ignored":
        scores = scores.masked_fill(j > p_mask, float("-inf"))
    dim = -2 if sw == "softmax_dim_queries" else -1
    scores = scores - scores.amax(dim=dim, keepdim=True)
    e = scores.exp()
    w = e / e.sum(dim=dim, keepdim=True)
    return w @ v, w


# --------------------------------------------------------------------- cases
# (B, H, Tq, Tk, d, causal)
SHAPES = [
    (2, 4, 5, 5, 8, True),
    (2, 4, 5, 5, 8, False),
    (1, 8, 3, 9, 16, True),
    (2, 8, 4, 10, 4, False),
    (1, 6, 3, 7, 16, True),
    (1, 6, 4, 9, 32, False),
    (2, 6, 6, 6, 8, True),
    (1, 12, 5, 11, 8, True),
    (1, 12, 6, 6, 64, False),
    (2, 3, 2, 5, 32, False),
    (1, 3, 7, 7, 8, True),
    (2, 1, 4, 6, 8, False),
    (2, 5, 1, 6, 8, True),
    (1, 16, 4, 12, 8, True),
    (1, 2, 9, 9, 16, False),
]


def make_cases(seed=1234):
    g = torch.Generator().manual_seed(seed)
    cases = []
    for B, H, Tq, Tk, d, causal in SHAPES:
        q = torch.randn(B, H, Tq, d, generator=g, dtype=torch.float64) * 1.5
        k = torch.randn(B, H, Tk, d, generator=g, dtype=torch.float64) * 1.5
        v = torch.randn(B, H, Tk, d, generator=g, dtype=torch.float64)
        cases.append((q, k, v, causal))
    return cases


# ------------------------------------------------------------------- running
def load(path, tag):
    spec = importlib.util.spec_from_file_location(f"blind32_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_file(mod, cases):
    """Returns (slopes results, attention results) or raises."""
    slopes = {}
    for n in range(1, 17):
        s = mod.alibi_slopes(n)
        assert isinstance(s, torch.Tensor) and s.shape == (n,), f"slopes shape for n={n}"
        assert s.dtype == torch.float32, f"slopes dtype {s.dtype} for n={n}"
        slopes[n] = s.double()
    outs = []
    for q, k, v, causal in cases:
        res = mod.alibi_attention(q.clone(), k.clone(), v.clone(), causal=causal)
        assert isinstance(res, tuple) and len(res) == 2, "return type"
        out, w = res
        assert out.shape == q.shape and w.shape == q.shape[:3] + (k.shape[2],), "shapes"
        assert out.dtype == q.dtype and w.dtype == q.dtype, "dtype"
        outs.append((out, w))
    return slopes, outs


def max_err(got, sw, cases):
    """Largest difference between a file's results and the reference with switch sw."""
    slopes, outs = got
    err = 0.0
    for n, s in slopes.items():
        err = max(err, (s - ref_slopes(n, sw).double()).abs().max().item())
    for (out, w), (q, k, v, causal) in zip(outs, cases):
        ro, rw = ref_alibi(q, k, v, causal, sw)
        e = max((out - ro).abs().max().item(), (w - rw).abs().max().item())
        err = max(err, e if math.isfinite(e) else float("inf"))
    return err


def float32_ok(mod):
    """ok files: float32 in, float32 out, close to the float64 reference."""
    g = torch.Generator().manual_seed(7)
    for H, Tq, Tk, causal in [(6, 4, 9, True), (8, 5, 5, False)]:
        q = torch.randn(1, H, Tq, 16, generator=g)
        k = torch.randn(1, H, Tk, 16, generator=g)
        v = torch.randn(1, H, Tk, 16, generator=g)
        out, w = mod.alibi_attention(q, k, v, causal=causal)
        if out.dtype != torch.float32 or w.dtype != torch.float32:
            return False
        ro, rw = ref_alibi(q, k, v, causal)
        if (out.double() - ro).abs().max() > 1e-4 or (w.double() - rw).abs().max() > 1e-4:
            return False
    return True


def self_check(cases):
    """Every switch must change the reference on these cases."""
    for sw in ALL_SWITCHES:
        d = 0.0
        for n in range(1, 17):
            d = max(d, (ref_slopes(n, sw) - ref_slopes(n)).abs().max().item())
        for q, k, v, causal in cases:
            a = ref_alibi(q, k, v, causal, sw)
            b = ref_alibi(q, k, v, causal)
            d = max(d, (a[0] - b[0]).abs().max().item(), (a[1] - b[1]).abs().max().item())
        assert d > DIFF, f"switch {sw} changes nothing on these cases"


def main():
    torch.set_default_dtype(torch.float32)
    cases = make_cases()
    self_check(cases)
    with open(os.path.join(HERE, "MANIFEST.tsv"), newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    agree = 0
    for idx, row in enumerate(rows):
        path = os.path.join(ROOT, row["path"])
        slug = row["expected_slug"]
        notes = []
        ok = True
        lines = open(path).read().splitlines()
        marked = [i + 1 for i, l in enumerate(lines) if "# MISTAKE" in l]
        want = [] if row["mistake_line"] == "-" else [int(row["mistake_line"])]
        if marked != want:
            ok = False
            notes.append(f"MISTAKE marks at {marked}, manifest says {want}")
        try:
            mod = load(path, idx)
            got = run_file(mod, cases)
        except Exception as exc:  # noqa: BLE001
            print(f"[FAIL] {row['file']:<10} {slug:<20} raised {type(exc).__name__}: {exc}")
            continue
        base = max_err(got, None, cases)
        if slug == "ok":
            if base > TOL:
                ok = False
            if not float32_ok(mod):
                ok = False
                notes.append("float32 run off")
            notes.append(f"max|diff| vs reference {base:.2e}")
        else:
            if base <= DIFF:
                ok = False
            notes.append(f"vs reference {base:.2e}")
            cands = SLUG_SWITCHES.get(slug, [])
            matched = [sw for sw in cands if max_err(got, sw, cases) <= TOL]
            if not matched:
                ok = False
                best = min(((max_err(got, sw, cases), sw) for sw in cands), default=None)
                notes.append(f"no switch of {slug} matches (best {best})")
            else:
                notes.append(f"matches switch {matched[0]}")
            others = [sw for sw in ALL_SWITCHES if sw not in cands
                      and max_err(got, sw, cases) <= TOL]
            if others:
                notes.append(f"also matches other slugs' switches {others}")
        agree += ok
        print(f"[{'AGREE' if ok else 'DISAGREE'}] {row['file']:<10} {slug:<20} "
              f"{os.path.basename(row['path'])}: {'; '.join(notes)}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
