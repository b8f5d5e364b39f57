"""The paged-attention model answer against the same attention over each sequence's tokens laid out contiguously
(what the pool and the table stand for); the cases as the contract builds them; the checker's variant with
default knobs against the model answer; each knob changes the outputs somewhere."""

import math

import pytest
import torch

from conftest import reference

from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.paged_attention import STALE
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.paged import PagedKnobs

paged = reference("paged_attention")


def contiguous(q, k_cache, v_cache, table, lengths):
    """Each sequence's keys and values copied out token by token, then plain GQA attention over them."""
    B, H, d = q.shape
    bs, Hkv = k_cache.shape[1], k_cache.shape[2]
    outs = []
    for b in range(B):
        ks = torch.stack([k_cache[table[b, t // bs], t % bs] for t in range(int(lengths[b]))])  # (n, Hkv, d)
        vs = torch.stack([v_cache[table[b, t // bs], t % bs] for t in range(int(lengths[b]))])
        ks, vs = ks.repeat_interleave(H // Hkv, 1), vs.repeat_interleave(H // Hkv, 1)
        w = torch.softmax(torch.einsum("hd,nhd->hn", q[b], ks) / math.sqrt(d), -1)
        outs.append(torch.einsum("hn,nhd->hd", w, vs))
    return torch.stack(outs)


def test_the_model_answer_is_attention_over_each_sequence_laid_out():
    spec = SPECS["paged-attention"]
    for case in spec.cases(torch.Generator().manual_seed(2)):
        x = case.inputs
        args = (x["q"], x["k_cache"], x["v_cache"], x["block_table"], x["lengths"])
        torch.testing.assert_close(paged.paged_attention(*args), contiguous(*args))


def test_the_cases_are_built_as_the_contract_says():
    spec = SPECS["paged-attention"]
    ends = set()
    for case in spec.cases(torch.Generator().manual_seed(3)):
        x, bs = case.inputs, case.dims["block_size"]
        assert bool((x["block_table"] >= 0).all()) and bool((x["block_table"] < case.dims["num_blocks"]).all())
        owned = [x["block_table"][b, :-(-int(n) // bs)].tolist() for b, n in enumerate(x["lengths"])]
        flat = [blk for blocks in owned for blk in blocks]
        assert len(flat) == len(set(flat)), "no block holds two sequences' tokens"
        assert flat != sorted(flat) or len(flat) < 3, "the pool is shuffled"
        for b, n in enumerate(x["lengths"].tolist()):
            ends.add("one" if n == 1 else "end" if n % bs == 0 else "inside")
            if n % bs:  # the last block's tail is stale
                assert bool((x["k_cache"][owned[b][-1], n % bs:] >= STALE).all())  # large: at least STALE
    assert ends == {"one", "end", "inside"}
    assert any(c.dims["Hkv"] == c.dims["H"] for c in spec.cases(torch.Generator().manual_seed(3)))
    assert any(1 < c.dims["Hkv"] < c.dims["H"] for c in spec.cases(torch.Generator().manual_seed(3)))


def test_the_variant_with_default_knobs_is_the_model_answer():
    spec = SPECS["paged-attention"]
    for case in spec.cases(torch.Generator().manual_seed(4)):
        torch.testing.assert_close(spec.variant(case, PagedKnobs())[0], spec.reference(case)[0])


KNOBS = [PagedKnobs(index=i) for i in ("swapped", "next", "previous", "slot_mod_blocks", "slot_major")] + \
    [PagedKnobs(length=n) for n in ("all", "short", "long", "blocks")] + \
    [PagedKnobs(table="pool"), PagedKnobs(table="offset"), PagedKnobs(fill="zero"),
     PagedKnobs(attn=Knobs(kv_repeat="tile")), PagedKnobs(attn=Knobs(scale=1.0)),
     PagedKnobs(attn=Knobs(softmax_dim=1))]


@pytest.mark.parametrize("knobs", KNOBS)
def test_every_knob_changes_the_outputs_somewhere(knobs):
    spec = SPECS["paged-attention"]
    differs = 0
    for c in spec.cases(torch.Generator().manual_seed(5)):
        try:
            differs += spec.distance(spec.variant(c, knobs), (spec.reference(c)[0],), None) > 1e-3
        except IndexError:  # an index past the table or the pool
            differs += 1
    assert differs, knobs
