"""Mistakes of paged attention (paged-attention): where token t is read from (the block, the slot, the table),
which tokens are attended (the length), and the attention around them (the kv-head order, the scale, the
softmax's axis, the fill of the hidden tokens).

Each is a knob of variants/paged.py held to the outputs on every case; the stale slots hold large values, so a
token read from the wrong place, or one past the length, changes the output by far more than the tolerance.
An index that leaves the table or the pool raises in the variant as in the user's code.
"""

from __future__ import annotations

import torch

from attn_drill import findings
from attn_drill.i18n import t
from attn_drill.judge import calls
from attn_drill.judge.diagnoses import diagnosis, fitted_scale
from attn_drill.judge.diagnoses import first_variant as first  # (knobs, how) tried in turn
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.paged import PagedKnobs

PAGED = ("paged-attention",)



# --- which pool slots the code reads, from behaviour -----------------------------------------------------------

def probe_case():
    """Every key 0 (each query spreads its weight evenly over what it attends) and every pool slot's value a one-hot
    of its own: the output of sequence b is the average of the one-hots of the slots it reads."""
    from attn_drill.judge.specs.paged_attention import paged_case

    gen = torch.Generator().manual_seed(17)
    bs, lengths, spare = 3, [5, 3, 1, 7], 5
    n_slots = (sum(-(-n // bs) for n in lengths) + spare) * bs
    case = paged_case(gen, 2, 1, n_slots, bs, lengths, spare)
    x = case.inputs
    x["k_cache"] = torch.zeros_like(x["k_cache"])
    x["v_cache"] = torch.eye(n_slots, dtype=torch.float64).view(x["v_cache"].shape)
    case.label = t("evidence.modern.diagnoses_paged.probe", bs=bs, lengths=lengths)
    return case


def slots_read(check):
    """(case, per sequence (the slots its output reads, the slots it should)), or None when the code cannot run on the
    probe or its output is no average of one-hots."""
    case = probe_case()
    o = calls.run(check.spec, check.target, case, check.path)
    if o.outputs is None:
        return None
    out = o.outputs[0].detach().double()[:, 0]  # (B, n_slots): head 0
    if not bool(torch.isfinite(out).all()):
        return None
    x, bs = case.inputs, case.dims["block_size"]
    seqs = []
    for b, n in enumerate(x["lengths"].tolist()):
        read = {i for i, w in enumerate(out[b].tolist()) if abs(w) > 1e-9}
        want = {int(x["block_table"][b, p // bs]) * bs + p % bs for p in range(n)}
        seqs.append((read, want))
    return case, seqs


def pool_order(case, b: int) -> set:
    """The slots of sequence b's first lengths[b] tokens if its own blocks were taken in pool order (sorted ids)."""
    x, bs = case.inputs, case.dims["block_size"]
    n = int(x["lengths"][b])
    own = sorted(x["block_table"][b, :-(-n // bs)].tolist())
    return {own[p // bs] * bs + p % bs for p in range(n)}


def positions_of(case, b: int) -> dict[int, int]:
    """Pool slot -> token position t, for every position sequence b's table can address."""
    x, bs = case.inputs, case.dims["block_size"]
    T = x["block_table"].size(1) * bs
    slots: dict[int, int] = {}
    for p in range(T):  # a slot the table reaches twice is its first position
        slots.setdefault(int(x["block_table"][b, p // bs]) * bs + p % bs, p)
    return slots


def read_finding(check):
    """Which of the three paged slugs the slots read say, with them as evidence; None when every sequence reads
    exactly its own first lengths[b] tokens.

    - the table's mapping right, the positions not 0 .. lengths[b] - 1 but a prefix of another length (the whole
      table too), or another run of positions inside its own blocks: paged-length-ignored;
    - the table's own blocks in pool order, or the pool read as if it were laid out sequence by sequence (a run of
      lengths[b] consecutive slots from a block's start): paged-table-ignored;
    - anything else (a shifted window, slots the table's mapping never gives): paged-block-index."""
    found = slots_read(check)
    if found is None:
        return None
    case, seqs = found
    x, bs = case.inputs, case.dims["block_size"]
    wrong = [(b, read, want) for b, (read, want) in enumerate(seqs) if read != want]
    if not wrong:
        return None
    b, read, want = wrong[0]
    n = int(x["lengths"][b])
    said = t("evidence.modern.diagnoses_paged.reads", label=case.label, b=b, n=n, read=sorted(read), want=sorted(want),
             bs=bs)

    def kind(b_, r):
        n_ = int(x["lengths"][b_])
        pos = positions_of(case, b_)
        if r <= pos.keys():
            ts = sorted(pos[i] for i in r)
            own = -(-n_ // bs) * bs  # the positions of its own blocks
            # a prefix of another length, or a run of positions inside its own blocks (the last n of them)
            if ts == list(range(len(ts))) or ts == list(range(ts[0], ts[0] + len(ts))) and ts[-1] < own:
                return "length"
        if r == pool_order(case, b_):
            return "sorted"
        lo = min(r) if r else 0
        if lo % bs == 0 and r == set(range(lo, lo + n_)):  # the pool read as laid out, sequence by sequence
            return "table"
        return "index"

    kinds = {kind(b_, r) for b_, r, _ in wrong}
    if kinds == {"length"}:
        return "paged-length-ignored", t("evidence.modern.diagnoses_paged.length", said=said)
    if kinds & {"table", "sorted"} and kinds <= {"table", "sorted", "length"}:
        how = t("evidence.modern.diagnoses_paged.sorted") if "table" not in kinds else \
            t("evidence.modern.diagnoses_paged.pool")
        return "paged-table-ignored", t("evidence.modern.diagnoses_paged.table", said=said, how=how)
    return "paged-block-index", t("evidence.modern.diagnoses_paged.index", said=said)


def read_cause(check, slug: str):
    """The slots read, as a finding of `slug` when that is what they say. The probe runs once a check: the three
    paged diagnoses share its answer."""
    if not hasattr(check, "_slots_read"):
        check._slots_read = read_finding(check)
    found = check._slots_read
    if found is None or found[0] != slug:
        return None
    return findings.make(slug, found[1], score=0.9)


@diagnosis("paged-block-index", PAGED)
def block_index(check):
    return _block_index(check) or read_cause(check, "paged-block-index")


def _block_index(check):
    return first(check, "paged-block-index", [
        (PagedKnobs(index=how), t(f"evidence.modern.diagnoses_paged.{how}"))
        for how in ("swapped", "next", "previous", "slot_mod_blocks", "slot_major")])


@diagnosis("paged-length-ignored", PAGED)
def length_ignored(check):
    return _length_ignored(check) or read_cause(check, "paged-length-ignored")


def _length_ignored(check):
    """The form that reproduces the most cases: one more stale slot and a whole last block read agree on the
    cases whose length ends one short of a block, so the first that fits is not enough."""
    found = [first(check, "paged-length-ignored", [(PagedKnobs(length=how),
                                                     t(f"evidence.modern.diagnoses_paged.length_{how}"))])
             for how in _LENGTH_FORMS]
    return max(filter(None, found), key=lambda f: f.score, default=None)


_LENGTH_FORMS = ("all", "short", "long", "blocks")  # PagedKnobs' lengths, each worded in evidence.modern


@diagnosis("paged-table-ignored", PAGED)
def table_ignored(check):
    return _table_ignored(check) or read_cause(check, "paged-table-ignored")


def _table_ignored(check):
    return first(check, "paged-table-ignored", [
        (PagedKnobs(table="pool"), t("evidence.modern.diagnoses_paged.table_pool")),
        (PagedKnobs(table="offset"), t("evidence.modern.diagnoses_paged.table_offset"))])


@diagnosis("kv-repeat-order", PAGED)
def kv_repeat(check):
    return first(check, "kv-repeat-order", [(PagedKnobs(attn=Knobs(kv_repeat="tile")),
                                             t("evidence.modern.diagnoses_paged.kv_tiled"))])


@diagnosis("softmax-wrong-dim", PAGED)
def softmax_dim(check):
    return first(check, "softmax-wrong-dim", [(PagedKnobs(attn=Knobs(softmax_dim=1)),
                                               t("evidence.modern.diagnoses_paged.softmax_heads"))])


@diagnosis("mask-fill-zero", PAGED)
def fill_zero(check):
    return first(check, "mask-fill-zero", [(PagedKnobs(fill="zero"), t("evidence.modern.diagnoses_paged.fill_zero"))])


@diagnosis(("missing-scale", "wrong-scale"), PAGED)
def scale(check):
    """The one factor s for which the scores * s reproduce the outputs, on every case."""
    return fitted_scale(check, lambda s: PagedKnobs(attn=Knobs(scale=s)))
