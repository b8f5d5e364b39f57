"""Blind harness for the sliding-window batch: compare every file to a reference
written from the contract (EXERCISES.md, "### sliding-window")."""
import csv
import importlib.util
import math
import os
import sys
import traceback

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository


def reference(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    qq, kk, vv = q.double(), k.double(), v.double()
    s = qq @ kk.transpose(-2, -1) / math.sqrt(d)
    p = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    allowed = (j <= p) & (j > p - window)
    s = s.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        col = sinks.double().view(1, H, 1, 1).expand(B, H, Tq, 1)
        s = torch.cat([s, col], dim=-1)
    w = torch.softmax(s, dim=-1)[..., :Tk]
    out = w @ vv
    return out.to(q.dtype), w.to(q.dtype)


def make_cases():
    g = torch.Generator().manual_seed(0)
    B, H, d = 2, 3, 8
    cases = []
    for dtype in (torch.float64,):
        for (Tq, Tk) in ((7, 7), (3, 9), (1, 8), (6, 10)):
            for window in (1, 2, 4):
                assert Tk > window + 2
                for with_sinks in (False, True):
                    q = torch.randn(B, H, Tq, d, generator=g, dtype=dtype)
                    k = torch.randn(B, H, Tk, d, generator=g, dtype=dtype)
                    v = torch.randn(B, H, Tk, d, generator=g, dtype=dtype)
                    sinks = torch.randn(H, generator=g, dtype=dtype) * 3 if with_sinks else None
                    cases.append((f"f64 Tq={Tq} Tk={Tk} w={window} sinks={with_sinks}",
                                  q, k, v, window, sinks, 1e-6))
    # float32 cases, compared loosely
    for (Tq, Tk, window, with_sinks) in ((7, 7, 3, True), (4, 11, 5, False), (2, 9, 2, True)):
        q = torch.randn(B, H, Tq, d, generator=g)
        k = torch.randn(B, H, Tk, d, generator=g)
        v = torch.randn(B, H, Tk, d, generator=g)
        sinks = torch.randn(H, generator=g) * 3 if with_sinks else None
        cases.append((f"f32 Tq={Tq} Tk={Tk} w={window} sinks={with_sinks}",
                      q, k, v, window, sinks, 1e-4))
    return cases


def _forbidden(*a, **kw):
    raise RuntimeError("forbidden builtin called")


def load(path):
    name = "cand_" + os.path.basename(path)[:-3].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.sliding_window_attention


def check_file(path, cases):
    """Return (all_match, first_failure_description)."""
    try:
        fn = load(path)
    except Exception as e:  # noqa: BLE001
        return False, f"import failed: {e!r}"
    for (label, q, k, v, window, sinks, atol) in cases:
        ref_out, ref_w = reference(q, k, v, window, sinks)
        try:
            res = fn(q.clone(), k.clone(), v.clone(), window,
                     None if sinks is None else sinks.clone())
        except Exception as e:  # noqa: BLE001
            return False, f"{label}: raised {type(e).__name__}: {e}"
        if not (isinstance(res, tuple) and len(res) == 2):
            return False, f"{label}: wrong return type {type(res)}"
        out, w = res
        if out.shape != ref_out.shape or w.shape != ref_w.shape:
            return False, (f"{label}: shape out {tuple(out.shape)} vs {tuple(ref_out.shape)}, "
                           f"weights {tuple(w.shape)} vs {tuple(ref_w.shape)}")
        if out.dtype != q.dtype or w.dtype != q.dtype:
            return False, f"{label}: dtype {out.dtype}/{w.dtype} vs {q.dtype}"
        if not torch.allclose(out, ref_out, atol=atol, rtol=0):
            err = (out - ref_out).abs().nan_to_num(float("inf")).max().item()
            return False, f"{label}: out differs (max abs err {err:.3g})"
        if not torch.allclose(w, ref_w, atol=atol, rtol=0):
            err = (w - ref_w).abs().nan_to_num(float("inf")).max().item()
            return False, f"{label}: weights differ (max abs err {err:.3g})"
    return True, ""


def main():
    # forbid the built-ins the contract rules out
    F.scaled_dot_product_attention = _forbidden
    torch.nn.MultiheadAttention = _forbidden
    cases = make_cases()
    with open(os.path.join(HERE, "MANIFEST.tsv")) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    agree = 0
    for row in rows:
        path = os.path.join(ROOT, row["path"])  # where the file lives now, in tests/corpus
        match, why = check_file(path, cases)
        expected_ok = row["expected_slug"] == "ok"
        good = match == expected_ok
        agree += good
        verdict = "MATCHES reference" if match else f"DIFFERS: {why}"
        print(f"[{'agree' if good else 'DISAGREE'}] {row['file']:<28} "
              f"({row['expected_slug']}): {verdict}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")


if __name__ == "__main__":
    main()
