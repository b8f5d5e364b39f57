"""The masks model answer agrees with explicit Python loops over (b, i, j), and the checker's cases and
variants tell every known mistake apart."""

import itertools

import pytest
import torch

from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.masks import RIGHT, MaskKnobs
from conftest import reference


def loop_causal(tq, tk):
    return torch.tensor([[j <= i + (tk - tq) for j in range(tk)] for i in range(tq)], dtype=torch.bool)


def loop_attention(lengths, t, causal):
    out = torch.zeros(len(lengths), 1, t, t, dtype=torch.bool)
    for b, i, j in itertools.product(range(len(lengths)), range(t), range(t)):
        out[b, 0, i, j] = j < lengths[b] and (not causal or j <= i)
    return out


@pytest.mark.parametrize("tq,tk", [(5, None), (1, 1), (4, 7), (6, 3), (1, 6), (3, 3)])
def test_causal_mask_matches_loops(tq, tk):
    got = reference("masks").causal_mask(tq, tk)
    assert got.dtype == torch.bool
    assert torch.equal(got, loop_causal(tq, tq if tk is None else tk))


def test_causal_mask_on_device():
    assert reference("masks").causal_mask(3, 5, device="meta").device.type == "meta"


@pytest.mark.parametrize("lengths,t", [([3, 6, 1], 6), ([4, 2], 5), ([1], 1), ([5, 5, 5, 2], 5)])
def test_padding_mask_matches_loops(lengths, t):
    got = reference("masks").padding_mask(torch.tensor(lengths), t)
    want = torch.tensor([[j < n for j in range(t)] for n in lengths], dtype=torch.bool)
    assert got.dtype == torch.bool and torch.equal(got, want)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lengths,t", [([3, 6, 1], 6), ([4, 2], 5), ([1], 1)])
def test_attention_mask_matches_loops(lengths, t, causal):
    got = reference("masks").attention_mask(torch.tensor(lengths), t, causal=causal)
    assert got.dtype == torch.bool and got.shape == (len(lengths), 1, t, t)
    assert torch.equal(got, loop_attention(lengths, t, causal))


def test_results_follow_lengths_device():
    lengths = torch.tensor([2, 3], device="meta")
    assert reference("masks").padding_mask(lengths, 4).device.type == "meta"
    assert reference("masks").attention_mask(lengths, 4, causal=True).device.type == "meta"


def test_variants_with_default_knobs_are_the_reference():
    spec = SPECS["masks"]
    for case in spec.cases(torch.Generator().manual_seed(3)):
        assert torch.equal(spec.reference(case)[0], spec.variant(case, RIGHT)[0]), case.label


MISTAKES = [MaskKnobs(inverted=True), MaskKnobs(diagonal=-1), MaskKnobs(diagonal=1), MaskKnobs(top_left=True),
            MaskKnobs(length_shift=1), MaskKnobs(length_shift=-1), MaskKnobs(rows="queries"), MaskKnobs(rows="both"),
            MaskKnobs(inverted=True, top_left=True), MaskKnobs(diagonal=-1, top_left=True)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cases_tell_every_mistake_apart(seed):
    """Each mistake changes some case, and no two mistakes give the same masks on every case."""
    spec = SPECS["masks"]
    cases = spec.cases(torch.Generator().manual_seed(seed))
    seen = {}
    for knobs in [RIGHT, *MISTAKES]:
        masks = tuple(spec.variant(c, knobs)[0] for c in cases)
        for other, theirs in seen.items():
            assert not all(torch.equal(a, b) for a, b in zip(masks, theirs)), (knobs, other)
        seen[knobs] = masks


def test_cases_cover_the_traps():
    cases = SPECS["masks"].cases(torch.Generator().manual_seed(0))
    causal = [c.config for c in cases if c.config["fn"] == "causal_mask"]
    assert any(c.get("tk") is None for c in causal)
    assert any(c.get("tk") and c["tk"] > c["tq"] for c in causal) and any(c.get("tk") and c["tk"] < c["tq"]
                                                                           for c in causal)
    assert any(c.get("tq") == 1 for c in causal)
    for c in cases:
        if "lengths" in c.inputs:
            ls = c.inputs["lengths"].tolist()
            assert c.inputs["lengths"].dtype == torch.int64 and 1 in ls and c.config["t"] in ls
    fns = {c.config["fn"] for c in cases}
    assert fns == {"causal_mask", "padding_mask", "attention_mask"}
