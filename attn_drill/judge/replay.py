"""Replay one case of a check outside the checker: what the scripts `attn-drill repro` writes call.

The case is built by the exercise's own spec from the check's seed, so its inputs and weights are the very
numbers the check used; your file is imported as a plain module (a traceback points at your line) and called
as the checker calls it; the model answer runs on the same inputs and weights. Only numbers are printed,
never the model answer's code. No sandbox: this runs your code as `python your_file.py` would.
"""

from __future__ import annotations

import importlib.util
import sys
import unicodedata
from pathlib import Path

import torch

from attn_drill.i18n import t
from attn_drill.judge.compare import TOL, diff, where
from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.base import Case

SHOWN = 5  # values of the mismatching row printed side by side (fits 80 columns)


def _say(key: str, /, **params) -> str:
    """This module's sentence `key` (i18n/<lang>/evidence/show.toml, [replay])."""
    return t(f"evidence.show.replay.{key}", **params)


def _ljust(text: str, width: int) -> str:
    """`text` padded with spaces to `width` terminal columns (a Chinese character takes two)."""
    cells = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return text + " " * (width - cells)


def build_case(exercise: str, seed: int, index: int) -> Case:
    """The check's case number `index` (0-based), from its seed: the same generator, the same order."""
    cases = SPECS[exercise].cases(torch.Generator().manual_seed(seed))
    return cases[index]


def describe(exercise: str, case: Case, index: int) -> None:
    """Print the case: its label, the sizes, each input's shape; for a module, how it is built."""
    spec = SPECS[exercise]
    print(_say("case", n=index + 1, label=case.label))
    print(_say("sizes", sizes=", ".join(f"{k}={v}" for k, v in case.dims.items() if isinstance(v, int))))
    for name, x in case.inputs.items():
        shown = "None" if x is None else f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"
        print(_say("input", name=name, shown=shown))
    if case.config:
        print(_say("module", module=spec.constructor(case)))
        print(_say("weights_copied"))
    sys.stdout.flush()  # before a traceback on stderr


def load_file(path: Path):
    """Import your file as a module, its folder first on the path (as for a script)."""
    path = Path(path)
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"yours_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_yours(exercise: str, path: Path, case: Case) -> tuple:
    """Your code on the case, called as the checker calls it; its outputs (out, weights...) as a tuple."""
    spec = SPECS[exercise]
    target, bad = spec.resolve(load_file(path))
    if bad:
        raise SystemExit(_say("unusable", title=bad.title, evidence=bad.evidence))
    try:
        result = spec.call(target, case)[0]
    except Exception as e:  # noqa: BLE001 - your code may raise anything: show where, in your file
        _raised(e, Path(path))
    outputs = spec.unpack(result)
    if outputs is None:
        raise SystemExit(_say("returned", type=type(result).__name__, expected=spec.expected_return()))
    return outputs


def _raised(e: BaseException, path: Path) -> None:
    """Your code raised: the traceback's frames in your file's folder (not torch's, not the checker's)."""
    import os
    import traceback

    folder = os.path.realpath(path.parent)
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.realpath(f.filename).startswith(folder + os.sep)]
    print(_say("raised"), file=sys.stderr)
    print("".join(traceback.format_list(frames)).rstrip("\n"), file=sys.stderr)
    print("".join(traceback.format_exception_only(type(e), e)).rstrip("\n"), file=sys.stderr)
    raise SystemExit(1)


def run_model_answer(exercise: str, case: Case) -> tuple:
    """The model answer on the same inputs and weights (its numbers only)."""
    spec = SPECS[exercise]
    return spec.unpack(spec.reference(case)[0])


def compare(exercise: str, yours: tuple, expected: tuple) -> int:
    """Print each output against the expected at its first mismatch; 1 if one differs, else 0."""
    spec, tol, status = SPECS[exercise], TOL[torch.float64], 0
    for name, got, want in zip(spec.outputs, yours, expected):
        if tuple(got.shape) != tuple(want.shape):
            print(_say("shape", name=name, got=tuple(got.shape), want=tuple(want.shape)))
            status = 1
            continue
        d = diff(got, want, tol)
        if d.ok:
            print(_say("matches", name=name, max_abs=d.max_abs))
            continue
        status = 1
        print(_say("differs_at", name=name, where=where(d.index, spec.axes[name])))
        print(_say("yours_expected", got=d.got, want=d.want))
        print(_say("error_tolerance", max_abs=d.max_abs, atol=tol.atol, rtol=tol.rtol))
        _row(got, want, d.index)
    print(_say("same") if status == 0 else _say("differs"))
    return status


def _row(got: torch.Tensor, want: torch.Tensor, index: tuple) -> None:
    """The row (last axis) holding the first mismatch, yours above the expected, around it."""
    if not index:
        return
    lead, j = index[:-1], index[-1]
    start = max(0, min(j - SHOWN // 2, got.shape[-1] - SHOWN))
    cols = slice(start, start + SHOWN)
    at = f"[{', '.join(map(str, lead))}, {start}:{start + len(range(*cols.indices(got.shape[-1])))}]"
    fmt = lambda t: " ".join(f"{float(v):9.4f}" for v in t[lead][cols].detach().double())  # noqa: E731
    print(f"  {_ljust(_say('row_yours'), 9)}{at}  {fmt(got)}")
    print(f"  {_ljust(_say('row_expected'), 9)}{at}  {fmt(want)}")
