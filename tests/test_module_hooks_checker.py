"""What the hooks on a module's layers add to a head-merge finding (module_hooks.locate and merge_is_permuted),
seen through the checker on two corpus files: one merge that is wrong block by block, one that only reorders."""

import re
from functools import lru_cache
from pathlib import Path

import torch

from attn_drill.process import Job, run_checks
from attn_drill.judge.specs import SPECS

CORPUS = Path(__file__).parent / "corpus" / "mha"
NO_TRANSPOSE = CORPUS / "wrong-head-merge__reshape_no_transpose.py"
PERMUTED = CORPUS / "wrong-head-merge__permute_wrong_order.py"
SEED = 1234


@lru_cache(maxsize=None)
def merge_evidence() -> dict[str, str]:
    """The wrong-head-merge evidence of each file, both checked in one worker."""
    reports = run_checks([Job(NO_TRANSPOSE, "mha"), Job(PERMUTED, "mha")], seed=SEED, timeout=10)
    out = {}
    for r in reports:
        assert r.findings and r.findings[0].slug == "wrong-head-merge", (r.file, [f.slug for f in r.findings])
        out[Path(r.file).name] = r.findings[0].evidence
    return out


def test_a_merge_without_transpose_is_located_at_the_input_to_W_o():
    """reshape(B, T, D) with no transpose: the projections give the reference's outputs, W_o's input does not."""
    located = merge_evidence()[NO_TRANSPOSE.name]
    assert "W_q, W_k, W_v give the reference's outputs" in located
    blocks = re.search(r"the input to W_o differs in (\d+) of (\d+) \(batch, position, head\) blocks", located)
    assert blocks, located
    case = SPECS["mha"].cases(torch.Generator().manual_seed(SEED))[0]
    differ, total = int(blocks[1]), int(blocks[2])
    assert total == case.dims["B"] * case.dims["Tq"] * case.dims["H"]
    assert 0 < differ <= total
    assert case.label in located


def test_a_merge_in_another_order_is_named_from_what_W_o_receives():
    """permute(0, 2, 3, 1): the right numbers reach W_o, rearranged, which no variant reproduces."""
    permuted = merge_evidence()[PERMUTED.name]
    assert "W_o receives exactly the values of the correctly merged heads, in another order" in permuted
    assert "your attention weights match on every case" in permuted
    assert "reproduces your outputs" not in permuted
