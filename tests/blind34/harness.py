"""Independent harness for blind batch 34 (linear-attention).

Run from the repository root:
    .venv/bin/python tests/blind34/harness.py

It does not use attn_drill: the reference below is written from the contract
(EXERCISES.md, `linear-attention`) alone, in float64, as the quadratic form with an
explicit visibility matrix, with one switch per mistake of the batch.
"""
import csv
import importlib.util
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = os.path.join(HERE, "MANIFEST.tsv")

TOL_OK = 1e-8        # correct files (and full-scores ones) against the reference
TOL_DIFF = 1e-6      # a wrong file must differ by more than this on some case
RTOL_SWITCH = 1e-7   # a wrong file against the reference with its switch on


# --------------------------------------------------------------------------- #
# reference
# --------------------------------------------------------------------------- #
def phi(x, kind="elu1"):
    if kind == "elu1":
        return F.elu(x) + 1
    if kind == "relu":
        return torch.relu(x)
    if kind == "elu":
        return F.elu(x)
    if kind == "softmax":
        return torch.softmax(x, dim=-1)
    if kind == "elu_inside":
        return F.elu(x + 1)
    if kind == "none":
        return x
    raise ValueError(kind)


def chunk_block(T, pref=16):
    return max(1, min(pref, T // 2))


def visibility(T, causal, switch):
    """(T, T) float matrix: 1 where query i sums key j."""
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    if not causal or switch == "leak_all":
        m = torch.ones(T, T, dtype=torch.bool)
    elif switch == "diag":
        m = j < i
    elif switch == "leak_block":
        C = chunk_block(T)
        m = j < torch.clamp((i // C + 1) * C, max=T)
    else:
        m = j <= i
    return m.to(torch.float64)


def reference(q, k, v, causal, eps, switch=None):
    """out_i = phi(q_i) . S_i / (phi(q_i) . z_i + eps), with the switch's mistake."""
    q, k, v = q.double(), k.double(), v.double()
    kind = "elu1"
    if switch in ("relu", "elu", "softmax", "elu_inside", "none"):
        kind = switch
    fq, fk = phi(q, kind), phi(k, kind)
    T = q.shape[2]
    if causal and switch == "leak_axis":
        # sums over all j, then a cumsum over the feature axis d
        S = torch.einsum("bhtd,bhte->bhde", fk, v).cumsum(dim=2)
        z = fk.sum(dim=2).cumsum(dim=2)
        num = torch.einsum("bhtd,bhde->bhte", fq, S)
        den = torch.einsum("bhtd,bhd->bht", fq, z).unsqueeze(-1)
    else:
        M = visibility(T, causal, switch)
        A = (fq @ fk.transpose(-2, -1)) * M  # (B, H, T, T): fine in a reference
        num = A @ v
        if causal and switch == "leak_den":
            den = (fq @ fk.transpose(-2, -1)).sum(-1, keepdim=True)
        else:
            den = A.sum(-1, keepdim=True)
    if switch == "no_norm":
        return num
    return num / (den + eps)


def reference_loop(q, k, v, causal, eps):
    """A second, naive reference (per query, per key) to check the first one."""
    q, k, v = q.double(), k.double(), v.double()
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    B, H, T, d = q.shape
    out = torch.zeros(B, H, T, v.shape[-1], dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                S = torch.zeros(d, v.shape[-1], dtype=torch.float64)
                z = torch.zeros(d, dtype=torch.float64)
                for j in range(T if not causal else i + 1):
                    S += torch.outer(fk[b, h, j], v[b, h, j])
                    z += fk[b, h, j]
                out[b, h, i] = (fq[b, h, i] @ S) / (fq[b, h, i] @ z + eps)
    return out


# --------------------------------------------------------------------------- #
# cases: (B, H, T, d, dv, causal, eps, scale)
# --------------------------------------------------------------------------- #
CASES = [
    (2, 3, 10, 4, 6, False, 1e-6, 1.0),
    (1, 2, 33, 5, 3, False, 0.5, 1.0),
    (2, 3, 40, 3, 4, True, 1e-6, 1.0),   # 2*d*dv = 24 < 40
    (2, 2, 37, 2, 5, True, 0.5, 1.0),    # 20 < 37
    (1, 3, 29, 4, 3, True, 1e-6, 1.5),   # 24 < 29
    (1, 1, 50, 4, 6, True, 0.5, 1.0),    # 48 < 50
    (3, 2, 21, 2, 4, True, 0.5, 2.0),    # 16 < 21
]
for c in CASES:
    B, H, T, d, dv, causal, eps, scale = c
    assert d != dv
    if causal:
        assert T > 2 * d * dv


def make_case(seed, case):
    B, H, T, d, dv, causal, eps, scale = case
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, d, generator=g, dtype=torch.float64) * scale
    k = torch.randn(B, H, T, d, generator=g, dtype=torch.float64) * scale
    v = torch.randn(B, H, T, dv, generator=g, dtype=torch.float64)
    return q, k, v


# --------------------------------------------------------------------------- #
# memory: every tensor a torch function returns, counted per (batch, head)
# --------------------------------------------------------------------------- #
class NumelRecorder(TorchFunctionMode):
    def __init__(self, B, H):
        super().__init__()
        self.B, self.H = B, H
        self.max_per_bh = 0
        self.worst = None

    def _per_bh(self, t):
        s, n = tuple(t.shape), t.numel()
        B, H = self.B, self.H
        if len(s) >= 2 and s[0] == B and s[1] == H:
            return n // (B * H)
        if len(s) >= 1 and B * H > 1 and s[0] == B * H:
            return n // (B * H)
        if len(s) >= 1 and B > 1 and s[0] == B:
            return n // B
        return n  # no batch/head prefix: shared by every (batch, head)

    def _walk(self, out, name):
        if isinstance(out, torch.Tensor):
            p = self._per_bh(out)
            if p > self.max_per_bh:
                self.max_per_bh, self.worst = p, (name, tuple(out.shape))
        elif isinstance(out, (tuple, list)):
            for o in out:
                self._walk(o, name)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self._walk(out, getattr(func, "__name__", str(func)))
        return out


# --------------------------------------------------------------------------- #
# what each manifest row is expected to reproduce
#   switch: reference switch; mode: where the mistake shows (both/causal/noncausal)
# --------------------------------------------------------------------------- #
SWITCH = {
    "bad_01.py": ("no_norm", "noncausal"),
    "bad_02.py": ("no_norm", "both"),
    "bad_03.py": ("no_norm", "causal"),
    "bad_04.py": ("relu", "both"),
    "bad_05.py": ("elu", "both"),
    "bad_06.py": ("softmax", "both"),
    "bad_07.py": ("elu_inside", "both"),
    "bad_08.py": ("leak_all", "causal"),
    "bad_09.py": ("leak_den", "causal"),
    "bad_10.py": ("leak_axis", "causal"),
    "bad_11.py": ("leak_block", "causal"),
    "bad_12.py": ("diag", "causal"),
    "bad_13.py": ("diag", "causal"),
    "bad_14.py": (None, "both"),
    "bad_15.py": (None, "both"),
}


def load(path, tag):
    spec = importlib.util.spec_from_file_location(f"blind34_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def leaks(fn, seed=7):
    """True if an output at i <= i0 changes when keys/values after i0 change."""
    B, H, T, d, dv = 2, 2, 30, 2, 3
    q, k, v = make_case(seed, (B, H, T, d, dv, True, 0.5, 1.0))
    i0 = 11
    k2, v2 = k.clone(), v.clone()
    k2[:, :, i0 + 1:] += torch.randn_like(k2[:, :, i0 + 1:])
    v2[:, :, i0 + 1:] += torch.randn_like(v2[:, :, i0 + 1:])
    a = fn(q.clone(), k.clone(), v.clone(), causal=True, eps=0.5)
    b = fn(q.clone(), k2, v2, causal=True, eps=0.5)
    return (a[:, :, : i0 + 1] - b[:, :, : i0 + 1]).abs().max().item() > 1e-9


def check_row(row):
    name, slug = row["file"], row["expected_slug"]
    path = os.path.join(ROOT, row["path"])
    problems = []

    # the marker line
    lines = open(path, encoding="utf-8").read().splitlines()
    marks = [i + 1 for i, l in enumerate(lines) if "# MISTAKE" in l]
    if slug == "ok":
        if marks or row["mistake_line"] != "-":
            problems.append(f"ok file has marker(s) {marks} / line {row['mistake_line']}")
    elif marks != [int(row["mistake_line"])]:
        problems.append(f"marker lines {marks} != manifest {row['mistake_line']}")

    fn = load(path, name.replace(".", "_")).linear_attention
    switch, mode = SWITCH.get(name, (None, "both"))

    max_dev = 0.0
    violations = []
    for ci, case in enumerate(CASES):
        B, H, T, d, dv, causal, eps, _ = case
        q, k, v = make_case(1000 + ci, case)
        ref = reference(q, k, v, causal, eps)
        rec = NumelRecorder(B, H)
        try:
            with rec:
                out = fn(q.clone(), k.clone(), v.clone(), causal=causal, eps=eps)
        except Exception as e:  # noqa: BLE001
            problems.append(f"case {ci} raised {type(e).__name__}: {e}")
            continue
        if not isinstance(out, torch.Tensor) or out.shape != (B, H, T, dv) or out.dtype != torch.float64:
            problems.append(f"case {ci}: bad output {type(out)} {getattr(out, 'shape', None)} {getattr(out, 'dtype', None)}")
            continue
        if not torch.isfinite(out).all():
            problems.append(f"case {ci}: non-finite output")
        dev = (out - ref).abs().max().item()
        max_dev = max(max_dev, dev)
        if causal and rec.max_per_bh >= T * T:
            violations.append((ci, rec.max_per_bh, T * T, rec.worst))

        shows = mode == "both" or (mode == "causal") == causal
        if slug == "ok" or slug == "full-scores-materialized":
            if dev > TOL_OK:
                problems.append(f"case {ci}: differs from the reference by {dev:.2e}")
        else:
            want = reference(q, k, v, causal, eps, switch if shows else None)
            err = ((out - want).abs() / (1 + want.abs())).max().item()
            if err > RTOL_SWITCH:
                problems.append(f"case {ci}: does not match its switch {switch!r} ({err:.2e})")

    causal_cases = sum(1 for c in CASES if c[5])
    if slug == "full-scores-materialized":
        if len(violations) != causal_cases:
            problems.append(f"(T, T) tensor seen in {len(violations)}/{causal_cases} causal cases")
    elif violations:
        problems.append(f"unexpected (T, T)-sized tensor: {violations[0]}")
    if slug not in ("ok", "full-scores-materialized") and max_dev <= TOL_DIFF:
        problems.append(f"wrong file matches the reference (max dev {max_dev:.2e})")

    leak = leaks(fn)
    if leak != (slug == "linear-causal-leak"):
        problems.append(f"leak probe says {leak}")

    detail = (f"max|out-ref|={max_dev:.1e}"
              + (f", (T,T) tensors in {len(violations)} causal cases e.g. {violations[0][3]}" if violations else "")
              + f", leak={leak}")
    return not problems, detail, problems


def self_check():
    """The reference against a naive per-key loop, both modes, both eps."""
    for causal, eps in [(False, 1e-6), (True, 0.5), (True, 1e-6)]:
        q, k, v = make_case(5, (1, 2, 9, 3, 4, causal, eps, 1.0))
        a = reference(q, k, v, causal, eps)
        b = reference_loop(q, k, v, causal, eps)
        assert (a - b).abs().max().item() < 1e-12, (causal, eps)
    print("reference self-check: ok (quadratic form == naive loop)")


def main():
    torch.manual_seed(0)
    self_check()
    with open(MANIFEST, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    agree = 0
    for row in rows:
        ok, detail, problems = check_row(row)
        agree += ok
        status = "AGREE" if ok else "DISAGREE"
        print(f"{status:8s} {row['file']:10s} {row['expected_slug']:26s} {detail}")
        for p in problems:
            print(f"           - {p}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
