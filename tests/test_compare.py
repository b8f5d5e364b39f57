"""The judge's comparisons (judge/compare.py): where two outputs first differ, found without torch's own helpers
that import sympy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def test_a_failing_check_never_imports_sympy(isolated):
    """torch.unravel_index (and torch._check) import sympy on first use, about half a second of a check: the
    judge's comparisons find their index by plain arithmetic, so a check that fails on its values never pays it.
    (The meta device's run still does, inside torch's own meta kernels.)"""
    bad = Path(__file__).parent / "corpus" / "mha" / "wrong-head-merge__permute_wrong_order.py"
    code = ("import sys\nfrom pathlib import Path\nfrom attn_drill.judge.engine import check_file\n"
            f"r = check_file(Path({str(bad)!r}), 'mha', 0)\n"
            "print(r.passed, [f.slug for f in r.findings][:1], 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["False", "['wrong-head-merge']", "False"], out.stdout + out.stderr


@pytest.mark.parametrize("shape", [(7,), (2, 3), (2, 1, 4, 5), (3, 4, 1)])
def test_unravel_agrees_with_torch(shape):
    import torch

    from attn_drill.judge.compare import unravel

    n = 1
    for s in shape:
        n *= s
    for flat in range(n):
        assert unravel(flat, shape) == tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape))
