"""Blind batch 37 (attention-backward): check every file against the manifest.

Run from the repository root:  .venv/bin/python tests/blind37/harness.py

For each manifest row the file is imported by path and `attention_backward` is run on
every case below (float64). Expected gradients come from autograd through
out = softmax(q k^T / sqrt(d) [masked]) v. A hand-written reference with one mistake
switched on gives what each wrong file should return. Runtime calls to
torch.autograd.grad / torch.autograd.backward / Tensor.backward made by a file are
recorded (the harness's own autograd use is not).
"""
import csv
import importlib.util
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).with_name("MANIFEST.tsv")
TOL = 1e-8

# manifest file -> mistake flag of the hand-written reference
FLAGS = {
    "c01.py": None, "c02.py": None, "c03.py": None, "c04.py": None,
    "w01.py": "no_rowsum", "w02.py": "no_rowsum", "w03.py": "no_rowsum",
    "w04.py": "dq_unscaled", "w05.py": "dk_unscaled",
    "w06.py": "dv_transposed", "w07.py": "dk_transposed", "w08.py": "dp_transposed",
    "w09.py": "no_scale", "w10.py": "scale_dv",
    "w11.py": "mask_ignored", "w12.py": "mask_ignored",
    "w13.py": None, "w14.py": None,
}
TRANSPOSED = {"dv_transposed", "dk_transposed", "dp_transposed"}


# ---------------------------------------------------------------- references
def autograd_grads(q, k, v, dout, mask):
    q_, k_, v_ = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    with torch.enable_grad():
        s = q_ @ k_.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        out = torch.softmax(s, dim=-1) @ v_
        return torch.autograd.grad(out, (q_, k_, v_), grad_outputs=dout)


def hand_reference(q, k, v, dout, mask, flag=None):
    """softmax attention backward by hand, with at most one mistake switched on."""
    if flag == "no_scale":
        scale = 1.0
    elif flag == "scale_dv":
        scale = 1.0 / math.sqrt(v.shape[-1])
    else:
        scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * scale
    if mask is not None and flag != "mask_ignored":
        s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s, dim=-1)
    pt = p.transpose(-2, -1)
    dv = (p @ dout) if flag == "dv_transposed" else (pt @ dout)
    dp = dout @ v.transpose(-2, -1)
    if flag == "dp_transposed":
        dp = v @ dout.transpose(-2, -1)          # (Tk, Tq): only fits p when Tq == Tk
    if flag == "no_rowsum":
        ds = p * dp
    else:
        ds = p * (dp - (p * dp).sum(-1, keepdim=True))
    dq = ds @ k * (1.0 if flag == "dq_unscaled" else scale)
    if flag == "dk_transposed":
        dk = ds @ q * scale
    else:
        dk = ds.transpose(-2, -1) @ q * (1.0 if flag == "dk_unscaled" else scale)
    return dq, dk, dv


# ---------------------------------------------------------------- cases
def _rowsafe(mask, tk):
    """Every query row keeps at least one visible key (its own i % Tk)."""
    mask = mask.clone()
    tq = mask.shape[-2]
    idx = torch.arange(tq) % tk
    mask[..., torch.arange(tq), idx] = True
    return mask


def make_cases():
    g = torch.Generator().manual_seed(37)
    f64 = torch.float64

    def rnd(*shape):
        return torch.randn(*shape, generator=g, dtype=f64)

    def rmask(*shape):
        return _rowsafe(torch.rand(*shape, generator=g) < 0.6, shape[-1])

    def causal(tq, tk):
        i = torch.arange(tq).unsqueeze(-1)
        j = torch.arange(tk)
        return j <= i + (tk - tq)

    cases = []

    def add(name, lead, tq, tk, d, dv, mask):
        q, k = rnd(*lead, tq, d), rnd(*lead, tk, d)
        v, dout = rnd(*lead, tk, dv), rnd(*lead, tq, dv)
        cases.append((name, q, k, v, dout, mask))

    add("BH Tq<Tk d!=dv no mask", (2, 3), 5, 9, 8, 6, None)
    add("BH Tq==Tk d!=dv no mask", (2, 3), 7, 7, 8, 5, None)
    add("B Tq>Tk d!=dv no mask", (3,), 10, 6, 4, 7, None)
    add("B Tq==Tk d==dv no mask", (2,), 6, 6, 16, 16, None)
    add("BH Tq<Tk mask(Tq,Tk)", (2, 3), 5, 11, 8, 6, rmask(5, 11))
    add("BH Tq==Tk causal (Tq,Tk)", (2, 2), 8, 8, 6, 10, causal(8, 8))
    add("BH Tq<Tk causal bottom-right", (1, 2), 4, 9, 8, 3, causal(4, 9))
    add("BH Tq==Tk full mask (B,H,Tq,Tk)", (2, 3), 6, 6, 4, 9, rmask(2, 3, 6, 6))
    add("BH Tq>Tk full mask", (2, 2), 9, 5, 8, 6, rmask(2, 2, 9, 5))
    add("BH Tq==Tk mask (B,1,Tq,Tk)", (2, 3), 7, 7, 8, 5, rmask(2, 1, 7, 7))
    add("BH key padding (B,1,1,Tk)", (2, 2), 6, 10, 8, 6,
        _rowsafe(torch.rand(2, 1, 1, 10, generator=g) < 0.6, 10))
    add("B Tq==Tk mask (Tq,Tk)", (4,), 6, 6, 12, 5, rmask(6, 6))
    add("B Tq!=Tk full mask (B,Tq,Tk)", (3,), 7, 12, 6, 9, rmask(3, 7, 12))
    add("BH Tq==Tk longer (blocks)", (1, 2), 40, 40, 8, 6, causal(40, 40))
    add("BH Tq<Tk longer (blocks) mask", (1, 2), 20, 37, 8, 6, rmask(20, 37))
    return cases


# ---------------------------------------------------------------- running files
CALLS = []
_ACTIVE = [False]


def _spy(name, fn):
    def wrapper(*a, **kw):
        if _ACTIVE[0]:
            CALLS.append(name)
        return fn(*a, **kw)
    return wrapper


torch.autograd.grad = _spy("torch.autograd.grad", torch.autograd.grad)
torch.autograd.backward = _spy("torch.autograd.backward", torch.autograd.backward)
torch.Tensor.backward = _spy("Tensor.backward", torch.Tensor.backward)


def load(path, tag):
    spec = importlib.util.spec_from_file_location(f"blind37_{tag}", ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.attention_backward


def maxerr(a, b):
    if a.shape != b.shape:
        return math.inf
    return (a - b).abs().max().item()


def grads_err(got, want):
    return max(maxerr(x, y) for x, y in zip(got, want))


def run_call(fn, case):
    _, q, k, v, dout, mask = case
    args = [t.clone() for t in (q, k, v, dout)]
    _ACTIVE[0] = True
    try:
        res = fn(*args, mask=mask)
        res = tuple(t.detach() for t in res)
        assert len(res) == 3
        return res, None
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"
    finally:
        _ACTIVE[0] = False


def check_row(row, cases):
    fname, slug, path = row["file"], row["expected_slug"], row["path"]
    notes = []
    # the MISTAKE marker sits on the manifest's line, once
    lines = (ROOT / path).read_text().splitlines()
    marked = [i + 1 for i, l in enumerate(lines) if "# MISTAKE" in l]
    want_marked = [] if row["mistake_line"] == "-" else [int(row["mistake_line"])]
    if marked != want_marked:
        notes.append(f"MISTAKE marker at {marked}, manifest says {want_marked}")
    if (slug == "ok") != (not marked):
        notes.append("ok/mistake marker mismatch")

    CALLS.clear()
    fn = load(path, fname.replace(".", "_"))
    flag = FLAGS[fname]
    differs_somewhere = False
    for case in cases:
        name, q, k, v, dout, mask = case
        tq, tk = q.shape[-2], k.shape[-2]
        want = autograd_grads(q, k, v, dout, mask)
        got, err = run_call(fn, case)
        if slug in ("ok", "forbidden-builtin"):
            if err is not None:
                notes.append(f"[{name}] raised {err}")
            elif grads_err(got, want) > TOL:
                notes.append(f"[{name}] off autograd by {grads_err(got, want):.2e}")
            continue
        # a wrong file: matches the reference with its mistake switched on
        try:
            ref = hand_reference(q, k, v, dout, mask, flag)
            ref_err = None
        except RuntimeError as e:
            ref, ref_err = None, str(e)
        if ref is None:
            if not (flag in TRANSPOSED and tq != tk):
                notes.append(f"[{name}] mistaken reference raised unexpectedly: {ref_err}")
            if err is None:
                notes.append(f"[{name}] expected a shape error (transposed operand, Tq != Tk), got values")
            continue
        if err is not None:
            notes.append(f"[{name}] raised {err}")
            continue
        e_ref = grads_err(got, ref)
        if e_ref > TOL:
            notes.append(f"[{name}] off the mistaken reference ({flag}) by {e_ref:.2e}")
        if grads_err(got, want) > 1e-6:
            differs_somewhere = True
    if slug == "forbidden-builtin":
        if not CALLS:
            notes.append("no autograd derivative call recorded")
    else:
        if CALLS:
            notes.append(f"autograd used: {sorted(set(CALLS))}")
        if slug != "ok" and not differs_somewhere:
            notes.append("never differs from autograd")
    return notes, sorted(set(CALLS))


def main():
    torch.set_default_dtype(torch.float64)
    cases = make_cases()
    # sanity: the hand reference without a mistake is autograd
    for case in cases:
        _, q, k, v, dout, mask = case
        assert grads_err(hand_reference(q, k, v, dout, mask), autograd_grads(q, k, v, dout, mask)) < 1e-10
    with MANIFEST.open() as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    agree = 0
    for row in rows:
        notes, calls = check_row(row, cases)
        ok = not notes
        agree += ok
        extra = f" (autograd calls: {', '.join(calls)})" if calls else ""
        print(f"{'AGREE   ' if ok else 'DISAGREE'} {row['file']:7s} {row['expected_slug']:28s} "
              f"line {row['mistake_line']:>2s}  {Path(row['path']).name}{extra}")
        for n in notes:
            print(f"          - {n}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
