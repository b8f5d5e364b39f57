"""Blind harness for sliding-window: own reference from the contract, compared to every file."""
import csv
import importlib.util
import math
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository


def reference(q, k, v, window, sinks=None):
    B, H, Tq, d = q.shape
    Tk = k.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
    p = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
    j = torch.arange(Tk, device=q.device)[None, :]
    allowed = (j <= p) & (j > p - window)
    scores = scores.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        col = sinks.to(q.dtype).view(1, H, 1, 1).expand(B, H, Tq, 1)
        scores = torch.cat([scores, col], dim=-1)
    w = torch.softmax(scores, dim=-1)[..., :Tk]
    return w @ v, w


def make_cases():
    cases = []
    shapes = [
        # B, H, Tq, Tk, d, window
        (2, 3, 10, 10, 8, 3),
        (2, 3, 4, 12, 8, 4),
        (3, 2, 7, 7, 16, 1),
        (3, 2, 3, 9, 4, 1),
        (2, 4, 1, 11, 8, 5),
        (1, 3, 6, 15, 8, 6),
        (2, 3, 12, 12, 32, 2),
        (2, 3, 5, 16, 8, 9),
    ]
    seed = 0
    for (B, H, Tq, Tk, d, window) in shapes:
        assert Tk > window + 2
        for dtype in (torch.float64, torch.float32):
            for with_sinks in (False, True):
                g = torch.Generator().manual_seed(seed)
                seed += 1
                q = torch.randn(B, H, Tq, d, generator=g, dtype=dtype) * 1.5
                k = torch.randn(B, H, Tk, d, generator=g, dtype=dtype) * 1.5
                v = torch.randn(B, H, Tk, d, generator=g, dtype=dtype)
                sinks = (torch.randn(H, generator=g, dtype=dtype) * 3) if with_sinks else None
                name = f"B{B} H{H} Tq{Tq} Tk{Tk} d{d} w{window} {str(dtype)[6:]} sinks={with_sinks}"
                cases.append((name, q, k, v, window, sinks))
    return cases


def load(path):
    spec = importlib.util.spec_from_file_location("cand_" + os.path.basename(path)[:-3].replace("-", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.sliding_window_attention


def compare(fn, case):
    name, q, k, v, window, sinks = case
    ref_out, ref_w = reference(q, k, v, window, sinks)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fn(q.clone(), k.clone(), v.clone(), window, None if sinks is None else sinks.clone())
    except Exception as e:  # noqa: BLE001
        return f"raised {type(e).__name__}: {e}"
    if not (isinstance(res, tuple) and len(res) == 2):
        return f"returned {type(res).__name__}"
    out, w = res
    if out.shape != ref_out.shape or w.shape != ref_w.shape:
        return f"shape out {tuple(out.shape)} w {tuple(w.shape)}"
    if out.dtype != q.dtype or w.dtype != q.dtype:
        return f"dtype {out.dtype}/{w.dtype}"
    tol = dict(rtol=1e-9, atol=1e-10) if q.dtype == torch.float64 else dict(rtol=1e-5, atol=1e-6)
    if not torch.allclose(out, ref_out, **tol):
        return f"out differs, max {(out - ref_out).abs().nan_to_num(float('inf')).max().item():.3g}"
    if not torch.allclose(w, ref_w, **tol):
        return f"weights differ, max {(w - ref_w).abs().nan_to_num(float('inf')).max().item():.3g}"
    return None


def main():
    cases = make_cases()
    rows = list(csv.DictReader(open(os.path.join(HERE, "MANIFEST.tsv")), delimiter="\t"))
    agree = 0
    for row in rows:
        path = os.path.join(ROOT, row["path"])  # where the file lives now, in tests/corpus
        expected_ok = row["expected_slug"] == "ok"
        try:
            fn = load(path)
        except Exception as e:  # noqa: BLE001
            fails = [("import", f"{type(e).__name__}: {e}")]
        else:
            fails = [(c[0], r) for c in cases if (r := compare(fn, c)) is not None]
        ok = (not fails) if expected_ok else bool(fails)
        agree += ok
        status = "AGREE" if ok else "DISAGREE"
        detail = "matches everywhere" if not fails else f"{len(fails)}/{len(cases)} cases differ; first: {fails[0][0]}: {fails[0][1]}"
        print(f"{status:9s} {row['file']:28s} {row['expected_slug']:20s} {detail}")
    print(f"SUMMARY: {agree}/{len(rows)} rows agree with the manifest")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
