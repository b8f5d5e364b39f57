"""Blind batch 36 (attention-backward): check every file against autograd and
against a hand-written reference with the file's one mistake switched on.

Run from the repository root:
    .venv/bin/python tests/blind36/harness.py

Only this harness uses autograd (for the ground truth); the files under test
run with inputs that do not require grad, inside torch.no_grad().
"""
from __future__ import annotations

import csv
import importlib.util
import math
import pathlib
import sys
import traceback

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
TOL_OK = 1e-8  # a correct file must match autograd this closely
TOL_DIFF = 1e-6  # a wrong file must differ from autograd by more than this somewhere

# The one mistake each manifest row carries, as switches of `reference` below.
MISTAKES: dict[str, dict] = {
    "ok_01": {},
    "ok_02": {},
    "ok_03": {},
    "ok_04": {},
    "ok_05": {},
    "bad_01": {"no_rowsum": True},
    "bad_02": {"no_rowsum": True},
    "bad_03": {"rowsum_dp_only": True},
    "bad_04": {"bwd_noscale_q": True},
    "bad_05": {"bwd_noscale_k": True},
    "bad_06": {"bwd_noscale_q": True, "bwd_noscale_k": True},
    "bad_07": {"dv_transposed": True},
    "bad_08": {"dk_transposed": True},
    "bad_09": {"dq_transposed": True},
    "bad_10": {"fwd_noscale": True},
    "bad_11": {"fwd_noscale": True, "bwd_noscale_q": True, "bwd_noscale_k": True},
    "bad_12": {"mask_ignored": True},
    "bad_13": {"mask_ignored": True},
    "bad_14": {"softmax_dim": -2},
    "bad_15": {"softmax_dim": -2},
}


# --------------------------------------------------------------------------
# ground truth and the switchable hand-written reference
# --------------------------------------------------------------------------
def autograd_grads(q, k, v, dout, mask):
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    out = torch.softmax(s, dim=-1) @ v
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), grad_outputs=dout)
    return dq, dk, dv


def reference(q, k, v, dout, mask, *, fwd_noscale=False, mask_ignored=False,
              softmax_dim=-1, no_rowsum=False, rowsum_dp_only=False,
              bwd_noscale_q=False, bwd_noscale_k=False,
              dv_transposed=False, dk_transposed=False, dq_transposed=False):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1)
    if not fwd_noscale:
        s = s * scale
    if mask is not None and not mask_ignored:
        s = s.masked_fill(~mask, float("-inf"))
    s = s - s.amax(dim=softmax_dim, keepdim=True)
    e = s.exp()
    p = e / e.sum(dim=softmax_dim, keepdim=True)

    dv = (p if dv_transposed else p.transpose(-2, -1)) @ dout
    dp = dout @ v.transpose(-2, -1)
    if no_rowsum:
        ds = p * dp
    elif rowsum_dp_only:
        ds = p * (dp - dp.sum(-1, keepdim=True))
    else:
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    # a file that leaves the forward unscaled "consistently" also leaves the
    # backward unscaled (bad_11 switches both bwd flags with fwd_noscale)
    dq = (ds.transpose(-2, -1) if dq_transposed else ds) @ k
    dk = (ds if dk_transposed else ds.transpose(-2, -1)) @ q
    if not bwd_noscale_q:
        dq = dq * scale
    if not bwd_noscale_k:
        dk = dk * scale
    return dq, dk, dv


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------
def bottom_right_causal(tq, tk):
    i = torch.arange(tq)[:, None]
    j = torch.arange(tk)[None, :]
    return j <= i + (tk - tq)


def random_mask(shape, gen):
    """Random bool mask where every (Tq) row and every (Tk) column keeps a key."""
    m = torch.rand(shape, generator=gen, dtype=torch.float64) < 0.6
    tq, tk = shape[-2], shape[-1]
    for i in range(max(tq, tk)):
        m[..., i % tq, i % tk] = True
    return m


def make_cases():
    gen = torch.Generator().manual_seed(36)
    specs = [
        # name, lead dims, Tq, Tk, d, dv, mask kind
        ("BH Tq<Tk no mask", (2, 3), 5, 7, 4, 6, None),
        ("BH Tq==Tk no mask", (2, 3), 6, 6, 4, 5, None),
        ("BH Tq==Tk causal (Tq,Tk)", (2, 3), 6, 6, 4, 5, "causal2d"),
        ("BH Tq<Tk causal (Tq,Tk)", (2, 3), 4, 7, 8, 3, "causal2d"),
        ("BH Tq<Tk full (B,H,Tq,Tk)", (2, 3), 4, 9, 8, 3, "full"),
        ("BH Tq==Tk full (B,H,Tq,Tk)", (2, 3), 5, 5, 4, 7, "full"),
        ("BH Tq>Tk (B,1,Tq,Tk)", (2, 3), 7, 5, 6, 2, "b1"),
        ("B Tq==Tk random (Tq,Tk)", (3,), 5, 5, 4, 7, "rand2d"),
        ("B Tq>Tk full (B,Tq,Tk)", (3,), 6, 4, 5, 2, "full"),
        ("B Tq<Tk no mask", (3,), 3, 8, 16, 5, None),
        ("B Tq==Tk no mask", (3,), 7, 7, 9, 4, None),
    ]
    cases = []
    for name, lead, tq, tk, d, dv, mk in specs:
        def rn(*shape):
            return torch.randn(*shape, generator=gen, dtype=torch.float64)
        q, k, v, dout = rn(*lead, tq, d), rn(*lead, tk, d), rn(*lead, tk, dv), rn(*lead, tq, dv)
        if mk is None:
            mask = None
        elif mk == "causal2d":
            mask = bottom_right_causal(tq, tk)
        elif mk == "rand2d":
            mask = random_mask((tq, tk), gen)
        elif mk == "full":
            mask = random_mask((*lead, tq, tk), gen)
        elif mk == "b1":
            mask = random_mask((lead[0], 1, tq, tk), gen)
        cases.append((name, q, k, v, dout, mask))
    return cases


# --------------------------------------------------------------------------
def load(path: pathlib.Path, tag: str):
    spec = importlib.util.spec_from_file_location(f"blind36_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.attention_backward


def maxdiff(a, b):
    return max((x - y).abs().max().item() for x, y in zip(a, b))


def run_file(fn, q, k, v, dout, mask):
    with torch.no_grad():
        res = fn(q.clone(), k.clone(), v.clone(), dout.clone(),
                 None if mask is None else mask.clone())
    if not (isinstance(res, tuple) and len(res) == 3):
        raise TypeError(f"returned {type(res).__name__}, not a 3-tuple")
    for r, t in zip(res, (q, k, v)):
        if r.shape != t.shape or r.dtype != t.dtype:
            raise TypeError(f"shape/dtype {tuple(r.shape)}/{r.dtype} != {tuple(t.shape)}/{t.dtype}")
    return res


FORBIDDEN_SOURCE = ("autograd", ".backward(", "torch.func", "functorch",
                    "scaled_dot_product_attention", "MultiheadAttention")


def check_row(row, cases):
    short, slug = row["file"], row["expected_slug"]
    path = ROOT / row["path"]
    notes = []
    ok = True
    src = path.read_text()
    lines = src.splitlines()
    marked = [i + 1 for i, l in enumerate(lines) if l.rstrip().endswith("# MISTAKE")]
    want_line = [] if row["mistake_line"] == "-" else [int(row["mistake_line"])]
    if marked != want_line:
        ok = False
        notes.append(f"MISTAKE markers at {marked}, manifest says {want_line}")
    if path.name.split("__")[0] != slug:
        ok = False
        notes.append("file name prefix != expected_slug")
    for bad in FORBIDDEN_SOURCE:
        if bad in src:
            ok = False
            notes.append(f"source mentions {bad!r}")

    try:
        fn = load(path, short)
    except Exception as e:  # noqa: BLE001
        return False, [f"import failed: {e!r}"]

    flags = MISTAKES[short]
    differs_somewhere = False
    raised_cases = 0
    for name, q, k, v, dout, mask in cases:
        truth = autograd_grads(q, k, v, dout, mask)
        try:
            want = reference(q, k, v, dout, mask, **flags)
            want_err = None
        except RuntimeError as e:
            want, want_err = None, e
        try:
            got = run_file(fn, q, k, v, dout, mask)
            got_err = None
        except Exception as e:  # noqa: BLE001
            got, got_err = None, e

        if slug == "ok":
            if got_err is not None:
                ok = False
                notes.append(f"[{name}] raised {got_err!r}")
                continue
            err = maxdiff(got, truth)
            if not err <= TOL_OK:
                ok = False
                notes.append(f"[{name}] off autograd by {err:.2e}")
            continue

        # a wrong file
        if want_err is not None:
            if got_err is None:
                ok = False
                notes.append(f"[{name}] reference-with-mistake raises, file does not")
            else:
                raised_cases += 1
            continue
        if got_err is not None:
            ok = False
            notes.append(f"[{name}] raised {got_err!r}; reference-with-mistake does not")
            continue
        err_ref = maxdiff(got, want)
        if not err_ref <= TOL_OK:
            ok = False
            notes.append(f"[{name}] off reference-with-mistake by {err_ref:.2e}")
        # (a case may be unable to show the mistake, e.g. mask-ignored without a mask)
        if maxdiff(got, truth) > TOL_DIFF:
            differs_somewhere = True

    if slug != "ok":
        if not differs_somewhere:
            ok = False
            notes.append("never gives values that differ from autograd")
        # the mistake must show as wrong values (not only a shape error) on Tq == Tk
        if flags.get("dv_transposed") or flags.get("dk_transposed") or flags.get("dq_transposed"):
            if raised_cases == 0:
                ok = False
                notes.append("transposed operand never raised on Tq != Tk")
            notes.append(f"raised on {raised_cases} Tq != Tk cases")
    return ok, notes


def main():
    torch.set_default_dtype(torch.float64)
    cases = make_cases()
    # sanity: the switchable reference with no switch is autograd
    for name, q, k, v, dout, mask in cases:
        err = maxdiff(reference(q, k, v, dout, mask), autograd_grads(q, k, v, dout, mask))
        assert err <= 1e-12, (name, err)
    with open(HERE / "MANIFEST.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    agree = 0
    for row in rows:
        try:
            ok, notes = check_row(row, cases)
        except Exception:  # noqa: BLE001
            ok, notes = False, [traceback.format_exc()]
        agree += ok
        status = "AGREE   " if ok else "DISAGREE"
        print(f"{status} {row['file']:7s} {row['expected_slug']:27s} {pathlib.Path(row['path']).name}"
              + ("" if not notes else "  (" + "; ".join(notes) + ")"))
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
