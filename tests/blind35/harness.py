"""Blind batch 35 (linear-attention): an independent check of the manifest.

Run from the repository root:  .venv/bin/python tests/blind35/harness.py

Only the contract (EXERCISES.md, `linear-attention` and `flash`) was used: the
reference below is written from its formula, in float64, in the quadratic form
(a (T, T) weight matrix), with one switch per mistake of the batch. Each file is
checked against the plain reference and against its own mutated reference, and
in causal cases every tensor a torch function returns while the file runs is
recorded; a tensor holding T*T or more numbers per (batch, head) is "full".
"""
import csv
import importlib.util
import os
import sys

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# ----------------------------------------------------------------- reference

# file -> (switch, parameter); the switch's slug is SWITCH_SLUG[switch]
MISTAKES = {
    "w01.py": ("no-normaliser", None),
    "w02.py": ("no-normaliser", None),
    "w03.py": ("no-normaliser", None),
    "w04.py": ("phi-elu-no-plus-one", None),
    "w05.py": ("phi-shift-inside", None),
    "w06.py": ("phi-negative-branch-plus-one", None),
    "w07.py": ("leak-numerator", None),
    "w08.py": ("leak-block-unmasked", 4),
    "w09.py": ("leak-normaliser", None),
    "w10.py": ("exclusive-prefix", None),
    "w11.py": ("exclusive-prefix", None),
    "w12.py": ("full-scores", None),
    "w13.py": ("full-scores", None),
    "w14.py": ("leak-state-before-read", 8),
}
SWITCH_SLUG = {
    None: "ok",
    "no-normaliser": "linear-no-normaliser",
    "phi-elu-no-plus-one": "linear-feature-map",
    "phi-shift-inside": "linear-feature-map",
    "phi-negative-branch-plus-one": "linear-feature-map",
    "leak-numerator": "linear-causal-leak",
    "leak-normaliser": "linear-causal-leak",
    "leak-block-unmasked": "linear-causal-leak",
    "leak-state-before-read": "linear-causal-leak",
    "exclusive-prefix": "causal-diagonal",
    "full-scores": "full-scores-materialized",
}


def phi(x, switch):
    if switch == "phi-elu-no-plus-one":
        return torch.where(x > 0, x, torch.expm1(x))
    if switch == "phi-shift-inside":
        y = x + 1
        return torch.where(y > 0, y, torch.expm1(y))
    if switch == "phi-negative-branch-plus-one":
        return torch.where(x > 0, x + 1, torch.exp(x) + 1)
    return torch.where(x > 0, x + 1, torch.exp(x))  # elu(x) + 1


def weights(T, causal, switch, param):
    """(numerator weights, normaliser weights), each (T, T): w[i, j] multiplies key j for query i."""
    ones = torch.ones(T, T, dtype=torch.float64)
    if not causal:
        return ones, ones
    i = torch.arange(T).view(T, 1)
    j = torch.arange(T).view(1, T)
    tril = (j <= i).double()
    if switch == "leak-numerator":
        return ones, tril
    if switch == "leak-normaliser":
        return tril, ones
    if switch == "exclusive-prefix":
        w = (j < i).double()
        return w, w
    if switch in ("leak-block-unmasked", "leak-state-before-read"):
        blk = max(1, min(param, T // 2))
        same_block = (i // blk == j // blk).double()
        if switch == "leak-block-unmasked":
            w = ((j < i // blk * blk) | (i // blk == j // blk)).double()
        else:
            w = tril + same_block  # current block counted by the state and again inside
        return w, w
    return tril, tril


def reference(q, k, v, causal, eps, switch=None, param=None):
    q, k, v = q.double(), k.double(), v.double()
    T = q.shape[-2]
    pq, pk = phi(q, switch), phi(k, switch)
    a = torch.einsum("bhid,bhjd->bhij", pq, pk)
    wn, wd = weights(T, causal, switch, param)
    num = (a * wn) @ v
    if switch == "no-normaliser":
        return num
    return num / ((a * wd).sum(-1, keepdim=True) + eps)


# ------------------------------------------------------------------- tracing

class Recorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.created = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        stack = [out]
        while stack:
            x = stack.pop()
            if isinstance(x, torch.Tensor):
                self.created.append((getattr(func, "__name__", str(func)), tuple(x.shape), x.numel()))
            elif isinstance(x, (tuple, list)):
                stack.extend(x)
        return out


# --------------------------------------------------------------------- cases

def cases():
    g = torch.Generator().manual_seed(35)
    shapes = [
        # B, H, T, d, dv, causal    (causal: T > 2 * d * dv)
        (2, 3, 29, 4, 3, True),
        (1, 2, 33, 3, 5, True),
        (2, 2, 45, 2, 7, True),
        (2, 3, 7, 4, 3, False),
        (1, 2, 20, 5, 2, False),
        (2, 2, 1, 3, 4, False),
    ]
    out = []
    for B, H, T, d, dv, causal in shapes:
        for eps in (1e-6, 0.5):
            for spread in (1.0, 2.0):
                q = torch.randn(B, H, T, d, generator=g, dtype=torch.float64) * spread
                k = torch.randn(B, H, T, d, generator=g, dtype=torch.float64) * spread
                v = torch.randn(B, H, T, dv, generator=g, dtype=torch.float64)
                out.append((q, k, v, causal, eps))
    return out


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rel_err(a, b):
    return ((a - b).abs() / (1.0 + b.abs())).max().item()


def main():
    with open(os.path.join(HERE, "MANIFEST.tsv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    all_cases = cases()
    agree = 0
    for n, row in enumerate(rows):
        short, expected = row["file"], row["expected_slug"]
        path = os.path.join(ROOT, row["path"])
        problems = []
        switch, param = MISTAKES.get(short, (None, None))
        if SWITCH_SLUG[switch] != expected:
            problems.append(f"switch {switch} means {SWITCH_SLUG[switch]}")
        if row["exercise"] != "linear-attention":
            problems.append("exercise column")
        src = open(path, encoding="utf-8").read().splitlines()
        marked = [i + 1 for i, line in enumerate(src) if "# MISTAKE" in line]
        want_line = [] if row["mistake_line"] == "-" else [int(row["mistake_line"])]
        if marked != want_line:
            problems.append(f"# MISTAKE lines {marked} != manifest {want_line}")
        mod = load(path, f"blind35_{n}")
        fn = mod.linear_attention
        worst_ok = 0.0      # largest absolute error against the plain reference
        worst_own = 0.0     # largest error against the file's own mutated reference
        full = []
        for q, k, v, causal, eps in all_cases:
            rec = Recorder()
            with rec:
                got = fn(q.clone(), k.clone(), v.clone(), causal=causal, eps=eps)
            if got.dtype != torch.float64 or got.shape != v.shape:
                problems.append(f"output {got.dtype} {tuple(got.shape)}")
                break
            worst_ok = max(worst_ok, (got - reference(q, k, v, causal, eps)).abs().max().item())
            worst_own = max(worst_own, rel_err(got, reference(q, k, v, causal, eps, switch, param)))
            if causal:
                B, H, T = q.shape[:3]
                full += [(name, shape) for name, shape, numel in rec.created if numel >= B * H * T * T]
        values_right = worst_ok <= 1e-8
        if expected in ("ok", "full-scores-materialized"):
            if not values_right:
                problems.append(f"values off by {worst_ok:.2e}")
        else:
            if values_right:
                problems.append("values match the reference")
            if worst_own > 1e-7:
                problems.append(f"not the switch's mistake (off by {worst_own:.2e})")
        if expected == "full-scores-materialized":
            if not full:
                problems.append("no (T, T) tensor seen")
        elif full:
            problems.append(f"full tensor {full[0]}")
        ok = not problems
        agree += ok
        found = f"values {'right' if values_right else 'wrong'} (err {worst_ok:.1e}, own {worst_own:.1e}), full tensors {len(full)}"
        print(f"{short:7} {expected:26} line {row['mistake_line']:>3}  {found}  "
              f"{'AGREES' if ok else 'DISAGREES: ' + '; '.join(problems)}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    sys.exit(main())
