"""paged-attention: paged_attention(q, k_cache, v_cache, block_table, lengths) -> out (B, H, d).

The cases are built as a paged cache is: each sequence's blocks are drawn from a shuffled pool, the table's
entries past a sequence's last block point at other sequences' blocks, and every slot no sequence owns (a last
block's tail, the blocks no one holds) is filled with large values, so reading one shows. Lengths end inside a
block, at a block's end and at one token; 1 < num_kv_heads < num_heads and num_kv_heads == num_heads. No meta-device
run: the code reads lengths' values (contract).
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.specs.base import Case, Spec, reference_module, resolve_function
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.paged import PagedKnobs, paged_attention

STALE = 1e4  # what every slot no sequence owns holds


class PagedAttentionSpec(Spec):
    id = "paged-attention"
    file = "paged_attention.py"
    name = "paged_attention"
    outputs = ("out",)
    axes = {"out": ("batch", "head", "feature")}
    signature = "paged_attention(q, k_cache, v_cache, block_table, lengths)"
    meta_run = False  # it reads lengths' values: the meta device cannot run it, which says nothing about devices
    maps = "values"  # attn-drill show: every pool slot's value one-hot, read back through the table (judge/show.py)
    step_names = {"t": "positions", "blocks": "blocks", "slots": "slots", "valid": "lengths", "k": "tokens read",
                  "v": "tokens read"}
    per_sequence = True  # localise.py: its steps are indices (kept), and a loop over sequences makes each one's part

    def resolve(self, module):
        return resolve_function(module, self.name, self.signature, [((1, 2, 3, 4, 5), {})])

    def cases(self, gen):
        def case(H, Hkv, d, bs, lengths, spare):
            return paged_case(gen, H, Hkv, d, bs, lengths, spare)

        return [
            case(4, 2, 8, 4, [6, 8, 1], 2),  # inside a block, at a block's end, one token; groups of 2
            case(6, 3, 4, 3, [7, 3, 5], 1),  # block_size 3; groups of 2
            case(4, 4, 8, 4, [9, 2], 3),  # as many kv heads as query heads
            case(8, 2, 4, 2, [5, 1, 4, 3], 2),  # groups of 4, blocks of 2
            case(2, 1, 16, 4, [13, 4], 1),  # one kv head
        ]

    def empty_row_case(self, gen):
        return None  # lengths >= 1: every sequence has a token

    def hides(self, case) -> bool:
        return True

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)
        if grad:
            for n in ("q", "k_cache", "v_cache"):
                x[n].requires_grad_(True)
        return target(x["q"], x["k_cache"], x["v_cache"], x["block_table"], x["lengths"]), None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = {n: (v.double() if v.is_floating_point() else v) for n, v in case.cast(dtype).items()}
        if grad:
            for n in ("q", "k_cache", "v_cache"):
                x[n].requires_grad_(True)
        fn = reference_module(self.file).paged_attention
        return fn(x["q"], x["k_cache"], x["v_cache"], x["block_table"], x["lengths"]), None, x

    def variant(self, case, knobs):
        kn = knobs if isinstance(knobs, PagedKnobs) else PagedKnobs(attn=knobs if isinstance(knobs, Knobs) else
                                                                    Knobs())
        x = case.inputs
        return (paged_attention(x["q"], x["k_cache"], x["v_cache"], x["block_table"], x["lengths"], kn),)

    def visible(self, case):
        return None

    def scale_names(self, case):
        names = super().scale_names(case)
        H, d = case.dims["H"], case.dims["d"]
        names[f"1/sqrt({H * d}) = 1/sqrt(H * d)"] = (H * d) ** -0.5
        return names

    def expected_shapes(self, case):
        return {"out": tuple(case.inputs["q"].shape)}

    def grad_inputs(self, x, module):
        return {n: x[n] for n in ("q", "k_cache", "v_cache")}


def paged_case(gen, H: int, Hkv: int, d: int, bs: int, lengths: list[int], spare: int) -> Case:
    """A case as a paged cache is: a shuffled pool, tables, stale slots (see the module's docstring)."""
    B = len(lengths)
    max_blocks = max(-(-n // bs) for n in lengths)
    owned = [-(-n // bs) for n in lengths]
    num_blocks = sum(owned) + spare
    order = torch.randperm(num_blocks, generator=gen)  # the pool, shuffled: block ids are not in order
    # large, and each slot its own: which stale slots a mistake reads shows in the output, not only that it reads one
    # (positive: a value at or below -1e4 would read as a hidden score to the localiser, localise.HIDDEN)
    k_cache = STALE * (1 + torch.rand(num_blocks, bs, Hkv, d, generator=gen, dtype=torch.float64))
    v_cache = STALE * (1 + torch.rand(num_blocks, bs, Hkv, d, generator=gen, dtype=torch.float64))
    table = torch.empty(B, max_blocks, dtype=torch.int64)
    starts = [sum(owned[:b]) for b in range(B)]
    for b, n in enumerate(lengths):
        mine = order[starts[b]:starts[b] + owned[b]]
        for j, blk in enumerate(mine.tolist()):
            fill = min(bs, n - j * bs)  # the last block's tail stays stale
            k_cache[blk, :fill] = torch.randn(fill, Hkv, d, generator=gen, dtype=torch.float64)
            v_cache[blk, :fill] = torch.randn(fill, Hkv, d, generator=gen, dtype=torch.float64)
        # past its last block, the table points at blocks holding other sequences' tokens (the pool's spare blocks
        # when there is no other sequence)
        others = torch.cat([order[:starts[b]], order[starts[b] + owned[b]:sum(owned)]])
        others = others if len(others) else order[sum(owned):]
        rest = others[torch.randint(0, len(others), (max_blocks - owned[b],), generator=gen)]
        table[b] = torch.cat([mine, rest])
    q = torch.randn(B, H, d, generator=gen, dtype=torch.float64)
    lens = torch.tensor(lengths, dtype=torch.int64)
    label = t("evidence.modern.specs_paged_attention.case", B=B, H=H, Hkv=Hkv, d=d, bs=bs, lengths=lengths,
              blocks=num_blocks)
    dims = {"B": B, "H": H, "Hkv": Hkv, "d": d, "block_size": bs, "num_blocks": num_blocks,
            "max_blocks": max_blocks, "Tq": 1, "Tk": max_blocks * bs}
    return Case(label, {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_table": table,
                        "lengths": lens}, dims)
