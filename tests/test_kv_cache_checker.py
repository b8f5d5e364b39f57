"""The kv-cache checker's own plumbing: how a case's calls become (out, k_cache, v_cache), what happens to a
malformed or ill-shaped result, and the probes that read a cache (the join axis, the turn of its keys)."""

from pathlib import Path

import torch

from attn_drill.judge.probes import cache as cache_probes
from attn_drill.judge.variants import cache as variants_cache
from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.base import reference_module
from attn_drill.judge.specs.kv_cache import Steps, join
from attn_drill.judge.variants.cache import CacheKnobs

SPEC = SPECS["kv-cache"]


def cases():
    return SPEC.cases(torch.Generator().manual_seed(5))


def test_unpack_joins_every_call_and_keeps_the_last_cache():
    outs = [torch.full((2, n, 6), float(i)) for i, n in enumerate((3, 1, 2))]
    caches = [(torch.zeros(2, 1, t, 4), torch.ones(2, 1, t, 4)) for t in (3, 4, 6)]
    out, k, v = SPEC.unpack(Steps(zip(outs, caches)))
    assert out.shape == (2, 6, 6) and out[0, :, 0].tolist() == [0, 0, 0, 1, 2, 2]
    assert k is caches[-1][0] and v is caches[-1][1]
    assert SPEC.unpack((outs[0], caches[0])) is None  # a raw result is not a case's Steps


def test_an_out_that_cannot_join_comes_back_alone_so_its_shape_is_reported():
    good, bad = torch.zeros(2, 3, 6), torch.zeros(2, 1, 7)
    assert join([good, bad]) is bad
    assert join([good, torch.zeros(2, 3, 6)]).shape == (2, 6, 6)


def test_a_malformed_result_ends_the_case_and_is_returned_as_it_is():
    class Flat(torch.nn.Module):  # returns (out, k, v): the nesting is wrong
        def forward(self, x, cache=None):
            return x, x, x

    case = cases()[0]
    result = SPEC.steps(Flat(), case, case.cast(torch.float64))
    assert isinstance(result, tuple) and len(result) == 3
    assert SPEC.unpack(result) is None


def test_the_case_with_a_given_cache_starts_from_the_reference_cache():
    case = next(c for c in cases() if c.dims["T_past"])
    module, _ = SPEC.build(reference_module(SPEC.file).CachedSelfAttention, case, torch.float64)
    steps = SPEC.steps(module, case, case.cast(torch.float64))
    k, v = steps[-1][1]
    assert k.shape[2] == case.dims["T_past"] + case.dims["T"]
    torch.testing.assert_close(k[:, :, :case.dims["T_past"]], case.inputs["k_past"])


def test_join_watch_sees_the_axis_a_cache_is_joined_on(tmp_path: Path):
    past = torch.randn(2, 2, 4, 8)
    new = torch.randn(2, 2, 3, 8)
    watch = cache_probes.JoinWatch([past], tmp_path / "user.py")
    with watch:
        torch.cat([past.contiguous(), new], dim=2)
        try:
            torch.cat([past, new], dim=1)
        except RuntimeError:
            pass  # the join is recorded before it raises
        torch.cat([new, new], dim=0)  # no cache in it: not recorded
    assert [j["dim"] for j in watch.joins] == [2, 1]
    assert watch.joins[1]["shapes"] == [(2, 2, 4, 8), (2, 2, 3, 8)]


def test_cached_keys_read_back_as_positions():
    case = cases()[0]

    class Outcome:  # what the engine keeps of a call: the case and the flat outputs
        def __init__(self, outputs):
            self.case, self.outputs = case, outputs

    right = SPEC.variant(case, variants_cache.RIGHT)
    restart = SPEC.variant(case, CacheKnobs(positions="restart"))
    want = cache_probes.positions(case).tolist()
    assert cache_probes.turned_as(cache_probes.key_rotation(Outcome(right)), case) == want
    seen = cache_probes.turned_as(cache_probes.key_rotation(Outcome(restart)), case)
    assert seen == cache_probes.positions(case, restart=True).tolist() != want
