"""The flash checker's own parts: the allocation tracker, the full-score rule, the T=4096 memory comparison,
and the variants (default knobs equal the reference; every knob is visible on the cases)."""

import math
from types import SimpleNamespace

import pytest
import torch

from attn_drill.judge import memory
from attn_drill.judge.compare import closeness
from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs import flash as flash_spec
from attn_drill.judge.specs.base import reference_module
from attn_drill.judge.variants.flash import FlashKnobs

SPEC = SPECS["flash"]
ME = __file__


def test_live_bytes_and_peak_follow_allocations_and_frees():
    with memory.Allocations() as watch:
        x = torch.empty(1000)  # 4000 bytes
        y = torch.empty(500, dtype=torch.float64)  # 4000 bytes
        del x
        z = torch.empty(100, dtype=torch.int8)  # 100 bytes
    assert watch.peak == 8000
    assert watch.now == 4100
    del y
    assert watch.now == 100  # freed after the mode ended: the weakref callback still runs
    assert watch.biggest.entries == 1000 and watch.biggest.shape == (1000,)
    del z


def test_views_and_in_place_writes_of_existing_tensors_cost_nothing():
    given = torch.randn(64, 64)
    with memory.Allocations() as watch:
        a = given[3:].t()
        given.mul_(2.0)
        b = given.view(-1)
    assert watch.peak == 0
    del a, b


def test_an_allocation_at_the_limit_stops_the_code_at_its_line():
    def user():
        small = torch.ones(10, 9)  # 90 entries: under the limit
        return small @ torch.ones(9, 10)  # 100 entries: stopped here

    with pytest.raises(memory.TensorTooLarge) as caught, memory.Allocations(ME, limit=100):
        user()
    alloc = caught.value.alloc
    assert alloc.shape == (10, 10) and alloc.entries == 100 and alloc.dtype == "float32"
    assert alloc.line == user.__code__.co_firstlineno + 2
    assert "aten.mm" in alloc.op


def test_the_spec_stops_code_that_catches_the_stop():
    def sneaky(q, k, v, causal=False, block_size=64):
        try:
            return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), -1) @ v
        except memory.TensorTooLarge:
            return torch.zeros_like(q)

    case = SPEC.cases(torch.Generator().manual_seed(0))[0]
    with pytest.raises(memory.TensorTooLarge):
        SPEC.call(sneaky, case)


def test_the_rule_counts_per_batch_and_head():
    """(B, H, 16, Tk) query chunks are linear in T and pass, though B * H * 16 * Tk > Tq * Tk; (Tq, Tk) for one
    head in a Python loop over heads is the whole matrix and stops."""
    def query_chunks(q, k, v, causal=False, block_size=64):
        Tq, Tk = q.size(-2), k.size(-2)
        outs = []
        for i in range(0, Tq, block_size):
            s = q[..., i:i + block_size, :] @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
            if causal:
                rows = torch.arange(i, min(i + block_size, Tq))[:, None] + Tk - Tq
                s = s.masked_fill(torch.arange(Tk)[None, :] > rows, float("-inf"))
            outs.append(torch.softmax(s, -1) @ v)
        return torch.cat(outs, dim=-2)

    def per_head(q, k, v, causal=False, block_size=64):
        return torch.stack([torch.stack([naive(q[b, h], k[b, h], v[b, h]) for h in range(q.size(1))])
                            for b in range(q.size(0))])

    case = SPEC.cases(torch.Generator().manual_seed(0))[0]
    B, H, Tq, Tk = (case.dims[n] for n in ("B", "H", "Tq", "Tk"))
    assert B * H * case.dims["block_size"] * Tk > Tq * Tk
    out = SPEC.call(query_chunks, case)[0]
    assert closeness(out, SPEC.reference(case)[0]) < 1e-12
    with pytest.raises(memory.TensorTooLarge) as caught:
        SPEC.call(per_head, case)
    assert caught.value.alloc.shape == (Tq, Tk) and caught.value.alloc.per_head == Tq * Tk


def test_cases_leave_room_for_every_blockwise_tensor():
    """A block of scores, the output and a transposed key all stay under Tq * Tk; T spans several blocks."""
    cases = SPEC.cases(torch.Generator().manual_seed(0)) + [SPEC.empty_row_case(torch.Generator().manual_seed(0))]
    limited = [c for c in cases if SPEC.limit(c)]
    assert len(limited) >= 5
    for c in limited:
        B, H, Tq, Tk, d, block = (c.dims[n] for n in ("B", "H", "Tq", "Tk", "d", "block_size"))
        assert B * H * max(Tq * block, Tq * d, Tk * d) < SPEC.limit(c) == Tq * Tk, c.label
        assert Tk > 2 * block and Tk % block, c.label
    shapes = {(c.dims["Tq"] > c.dims["Tk"], c.dims["Tq"] < c.dims["Tk"], c.dims["causal"]) for c in cases}
    assert {(True, False, False), (False, True, True), (False, False, True), (False, True, False)} <= shapes
    assert any(c.dims["block_size"] is None for c in cases)  # the default block_size is exercised too


def naive(q, k, v, causal=False, block_size=64):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), -1) @ v


def test_memory_at_4096_separates_blockwise_from_full_scores():
    full = 4096 * 4096 * 4
    ref = flash_spec.measure(reference_module("flash.py").flash_attention)
    mine = flash_spec.measure(naive)
    assert ref.peak < full / 2  # a few (4096, 256) blocks
    assert mine.peak >= 2 * full  # the scores and their softmax
    assert mine.biggest.entries == 4096 * 4096
    note = flash_spec.memory_note(reference_module("flash.py").flash_attention)
    mib = memory.mib(ref.peak)
    assert f"yours {mib}, blockwise reference {mib}; a full score matrix alone is 64.0 MiB" in note


def test_memory_note_says_why_it_could_not_measure():
    def needs_numbers(q, k, v, causal=False, block_size=64):
        if float(q.sum()) > 1e9:  # .item() on the meta device raises
            return q
        return naive(q, k, v)

    assert "cannot run on the meta device" in flash_spec.memory_note(needs_numbers)


def test_pass_note_measures_the_users_function():
    check = SimpleNamespace(target=naive)
    assert "yours 128.0 MiB" in SPEC.pass_note(check)  # q k^T and its scaled copy, 64 MiB each


def test_default_knobs_give_the_reference():
    for case in SPEC.cases(torch.Generator().manual_seed(1)):
        ref = SPEC.reference(case)[0]
        assert closeness(SPEC.variant(case, FlashKnobs())[0], ref) < 1e-12, case.label


@pytest.mark.parametrize("knobs", [FlashKnobs(scale=1.0), FlashKnobs(causal="diagonal"), FlashKnobs(causal="future"),
                                   FlashKnobs(causal="topleft"), FlashKnobs(rescale="acc"), FlashKnobs(rescale="sum"),
                                   FlashKnobs(rescale="none"), FlashKnobs(rescale="blockmax")])
def test_every_knob_shows_on_most_cases(knobs):
    """A mistake the cases cannot see could never be named; one they see only once would be fragile."""
    telling = 0
    for case in SPEC.cases(torch.Generator().manual_seed(2)):
        var = SPEC.variant(case, knobs)[0]
        rows = torch.isfinite(var).all(-1, keepdim=True).expand_as(var)
        telling += closeness(var[rows], SPEC.reference(case)[0][rows]) > 1e-4
    assert telling >= 3, knobs
