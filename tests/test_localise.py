"""Every failing values stage names where the computation departs from the reference (judge/localise.py): the
step, the user's line that made the nearest tensor, and what differs. The files are the model answers with one
line changed, into mistakes no slug was written for as well as catalogued ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from attn_drill import findings
from attn_drill.process import Job, run_checks

REFERENCE = Path(__file__).parent.parent / "reference"

# (exercise, file, the line as the model answer has it, as the mistake has it, the step, what differs)
CASES = [
    ("mha", "mha.py", 'scores = scores.masked_fill(~mask, float("-inf"))', "scores = scores.masked_fill(~mask, 0.0)",
     "at the mask", "fills the hidden scores with 0, not -inf"),
    ("mha", "mha.py", "v = self.W_v(value)", "v = self.W_k(value)", "at the projection (`v`)", ""),
    ("mha", "mha.py", "weights = torch.softmax(scores, dim=-1)",
     "weights = scores.exp() / scores.exp().nansum()", "at the softmax", "sums to 1 over the whole tensor"),
    ("mha", "mha.py", "y = y.transpose(1, 2).reshape(B, Tq, D)", "y = y.flip(1).transpose(1, 2).reshape(B, Tq, D)",
     "at the merge of the heads", "the right numbers in another arrangement"),
    ("sdpa", "sdpa.py", "scores = q @ k.transpose(-2, -1) / math.sqrt(d)", "scores = q @ k.transpose(-2, -1) / d",
     "at the scale", "times 0.378 "),
    ("flash", "flash.py", "s = q @ kb.transpose(-2, -1) * scale", "s = q @ kb.transpose(-2, -1)",
     "at the scale", "times 2.828"),
    # the row max of 0-filled scores often equals the reference's: a max never vouches for the step it reads
    ("flash", "flash.py", 's = s.masked_fill(future, float("-inf"))', "s = s * (~future)",
     "at the mask", "fills the hidden scores with 0, not -inf"),
    # said with the user's own variable, never the model answer's (`y`): here the user calls it `merged`
    ("mha", "mha.py", "y = y.transpose(1, 2).reshape(B, Tq, D)  # (B, Tq, H, d) -> (B, Tq, D)",
     "merged = y.flip(1).transpose(1, 2).reshape(B, Tq, D)\n        y = merged",
     "at the merge of the heads (`merged`)", "the right numbers in another arrangement"),
    # a mask that shows one more key per row: said of the masked scores, never of the probabilities made after
    ("sliding-window", "sliding_window.py", 'scores = scores.masked_fill(~visible, float("-inf"))',
     'scores = scores.masked_fill(~(visible | (j == p - window)), float("-inf"))', "at the mask", "shows "),
    ("rope", "rope.py", "theta = positions.to(angle_dtype)[..., None] * inv_freq",
     "theta = (positions + 1).to(angle_dtype)[..., None] * inv_freq", "at the angles", ""),
]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("localise")
    jobs, lines = [], []
    for i, (exercise, name, before, after, _, _) in enumerate(CASES):
        source = (REFERENCE / name).read_text()
        assert before in source, f"{name} no longer has {before!r}"
        path = folder / f"case{i}_{name}"
        path.write_text(source.replace(before, after, 1))
        jobs.append(Job(path, exercise))
        lines.append(source[:source.index(before)].count("\n") + 1)
    return list(zip(run_checks(jobs, seed=5, timeout=20.0), lines))


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{c[0]}:{c[4]}" for c in CASES])
def test_the_values_stage_names_the_step_the_line_and_what_differs(reports, i):
    report, line = reports[i]
    _, _, _, _, step, how = CASES[i]
    values = next(s for s in report.stages if s.name == "values")
    assert values.status == "fail"
    # in the stage's detail, or in values-mismatch's evidence when no slug names the mistake
    said = values.detail if report.findings[0].slug != "values-mismatch" else report.findings[0].evidence
    assert f"departs from the reference {step}" in said, said
    assert f"at your line {line}:" in said, said
    assert how in said, said


def test_values_mismatch_takes_its_fix_from_the_step(reports):
    """A mistake no slug names (RoPE positions off by one) still gets a step, a line and a fix for that step."""
    report, line = reports[-1]
    first = report.findings[0]
    assert first.slug == "values-mismatch", [f.slug for f in report.findings]
    assert first.line == line and "the angles" in first.message
    assert first.fix == findings.step_fix("angles")


# --- the relation at the departing step, as a code: with the step's kind it names the mistake ----------------

def _op(out, kind, parents=()):
    from attn_drill.judge.localise import Op

    return Op(line=None, name="softmax" if kind == "softmax" else "masked_fill", out=out, parents=parents, kind=kind)


def _causal_scores(seed=0, Tq=4, Tk=6):
    import torch

    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, Tq, Tk, generator=g, dtype=torch.float64)
    seen = torch.ones(Tq, Tk, dtype=torch.bool).tril(Tk - Tq)
    return scores, seen


def test_a_mask_that_adds_a_constant_is_a_fill_with_its_value():
    from attn_drill.judge.localise import relation

    scores, seen = _causal_scores()
    ref = [_op(scores, "scores"), _op(scores.masked_fill(~seen, float("-inf")), "mask", (0,))]
    code, how, params = relation(scores + (seen.double() - 1.0), ref[1], ref, 1)
    assert code == "filled" and params == {"value": "their score - 1"}, how
    code, _, params = relation(scores.masked_fill(~seen, -1e3 + 1), ref[1], ref, 1)  # shown, not HIDDEN: a fill
    assert code == "filled" and params == {"value": "-999"}


def test_hidden_scores_left_as_they_are_are_shown_keys_not_a_fill():
    from attn_drill.judge.localise import relation

    scores, seen = _causal_scores()
    ref = [_op(scores, "scores"), _op(scores.masked_fill(~seen, float("-inf")), "mask", (0,))]
    code, how, _ = relation(scores.clone(), ref[1], ref, 1)
    assert code == "shows", how


def test_a_mask_with_as_many_keys_per_query_but_other_ones_is_moved():
    """A chunk after a cache with its mask's blocks in the wrong order: each query hides as many keys, other ones."""
    import torch

    from attn_drill.judge.localise import relation

    scores, seen = _causal_scores(Tq=3, Tk=5)
    past = 2
    wrong = torch.cat([torch.ones(3, 3, dtype=torch.bool).tril(), torch.ones(3, past, dtype=torch.bool)], dim=1)
    ref = [_op(scores, "scores"), _op(scores.masked_fill(~seen, float("-inf")), "mask", (0,))]
    code, how, _ = relation(scores.masked_fill(~wrong, float("-inf")), ref[1], ref, 1)
    assert code == "moved", how
    diagonal = torch.ones(3, 5, dtype=torch.bool).tril(past - 1)  # one key fewer per query: not moved
    code, _, _ = relation(scores.masked_fill(~diagonal, float("-inf")), ref[1], ref, 1)
    assert code == "hides"


def test_a_softmax_over_rows_a_reshape_cut_across_the_keys_is_over_other_rows():
    import torch

    from attn_drill.judge.localise import relation

    g = torch.Generator().manual_seed(1)
    scores = torch.randn(2, 3, 5, 7, generator=g, dtype=torch.float64)  # Tq = 5, Tk = 7
    ref = [_op(scores, "scores"), _op(torch.softmax(scores, -1), "softmax", (0,))]
    wrong = torch.softmax(scores.reshape(-1, 5), -1).reshape(scores.shape)  # rows of Tq scores, not Tk
    code, how, _ = relation(wrong, ref[1], ref, 1)
    assert code == "other-rows" and "cut across the rows" in how, how
    code, _, _ = relation(torch.softmax(scores, -2), ref[1], ref, 1)
    assert code == "other-rows"


def test_every_relation_the_naming_reads_is_one_the_localiser_gives():
    """A relation code misspelt in NAMED would leave its slug never named by the departure."""
    from attn_drill.judge.diagnoses import NAMED
    from attn_drill.judge.localise import RELATIONS

    assert {relation for _, relation in NAMED} <= set(RELATIONS)


# (corpus file, the departure's kind, line and relation, a phrase its words hold): each form the localiser learnt
DEPARTURES = [
    # a loop over sequences, each reading its own lengths[b] tokens: the index that went wrong, with its values
    ("paged-attention/paged-block-index__blind_b38_block_minus_one.py", "blocks", 14, "differs", "yours holds [-1, "),
    ("paged-attention/paged-table-ignored__blind_b40_pool_prefix.py", "blocks", 14, "differs", "yours holds ["),
    # an index in a form the model answer lacks (one flat slot number): the tokens it reads, and the line it is made
    ("paged-attention/paged-block-index__blind_b41_slot_no_stride.py", "tokens read", 15, "differs", "differs by up"),
    # a loop over sequences, its softmax over the heads: seen at its own sequence's part of the probabilities
    ("paged-attention/softmax-wrong-dim__blind_b38_over_heads.py", "softmax", 19, "other-rows", "axis 0"),
    # a running sum taken as a whole one: the reduction to another shape
    ("linear-attention/linear-causal-leak__blind_b44_total_keysum.py", "sums", 12, "reduced", "(2, 2, 1, 4)"),
    # a tensor the model answer never makes (the input centred before the norm) is where the numbers went wrong
    ("mla/rmsnorm-mean-subtracted__blind_b28_centred.py", "norm", 13, "differs", "differs by up to"),
    # ... but not a right value the model answer makes another way (the rms, where it takes the mean square)
    ("mla/rmsnorm-eps-misplaced__blind_b29_norm_plus_eps.py", "norm", 14, "differs", "differs by up to"),
    # ... nor a line that computes right elsewhere (a norm helper called twice: the second call is the mistake)
    ("mla/mla-latent-not-normalised__blind_b29_norm_twice.py", "projection", 64, "differs", "differs by up to"),
    # a step left out: right after the line that makes its input (the latent's norm, never applied)
    ("mla/mla-latent-not-normalised__blind_b28_kv_norm_skipped.py", "norm", 54, "other-step",
     "the step is left out after your line 54"),
    # a step absent that the model answer makes on its input's own statement (`p * (dp - rowsum)`): that statement
    ("attention-backward/softmax-backward-no-rowsum__blind_b37_plain.py", "dS", 16, "absent", "none of your"),
    # a mask compared on one line and given an axis on the next (`valid[:, None, :]`): the comparison's line
    ("paged-attention/paged-length-ignored__blind_b38_mask_le.py", "mask", 20, "shows", "shows 6 of the 36"),
    # ... filled with finfo.min where it hides: the keys it shows make the pattern wrong, not the fill
    ("paged-attention/paged-length-ignored__blind_b39_mask_le.py", "mask", 17, "shows", "shows 8 of the 36"),
    # ... applied by torch.where from a full_like(-inf): one value repeated stands for no step
    ("paged-attention/paged-length-ignored__blind_b46_matmul_mask_le.py", "mask", 17, "shows", "shows 6 of the 36"),
    # the right numbers in another order, read through an index the code computed: the index's line
    ("paged-attention/kv-repeat-order__blind_b39_head_modulo.py", "kv repeat", 12, "arranged",
     "put in that order at your line 12"),
    # ... put in that order by a view before the step (blocks transposed before the flatten): the view's line
    ("paged-attention/paged-block-index__blind_b40_transpose_flatten.py", "kv repeat", 12, "arranged",
     "put in that order at your line 12"),
    # a factor that is a Python number kept by the constructor (`self.scale = 1 / math.sqrt(d_model)`)
    ("mha/wrong-scale__blind_b44_sqrt_dmodel.py", "scale", 12, "factor", "a number your line 12 computes"),
    # ... a scale that came out 1.0 (`1 / d ** (1 // 2)`): the scores are multiplied by it unchanged
    ("attention-backward/missing-scale__blind_b37_intdiv_exponent.py", "scale", 6, "factor",
     "a number your line 6 computes"),
    # ... a scale right for another whole number than the one the code takes (`head_dim = v.shape[-1]`, then
    # `head_dim ** -0.5`): the line that made that number
    ("sdpa/wrong-scale__blind_b47_value_width.py", "scale", 7, "factor",
     "from the whole number 4 your line 7 computes, where the reference's comes from 7"),
    # ... a scale that came out the whole number 1 (`head_dim ** (1 // 2)`)
    ("gqa/missing-scale__blind_b47_int_exponent.py", "scale", 29, "factor",
     "from the whole number 1 your line 29 computes, where the reference's comes from 4"),
    # ... but not a model width right for its own reshapes, used for the scale: the scale's line
    ("mla/wrong-scale__blind_b30_scale_by_dv.py", "scale", 37, "factor", "a number your line 37 computes"),
    # absorbed MLA makes no values, which the model answer makes before its scores: the scores' scale departs too,
    # and the output (the values' stand-in) was made from it: the scale is the departure
    ("mla/wrong-scale__blind_b29_absorbed_rank_scale.py", "scale", 49, "factor", "a number your line 49 computes"),
    # a helper whose lines make a step right for one call (RoPE on k_pe) and wrong numbers for another (`q =
    # self.rotary(q, positions)`, the whole head turned): the call that went wrong, not the helper's line
    ("mla/mla-rope-misplaced__blind_b29_rope_full_q.py", "head split", 59, "differs",
     "made from what your line 59 computes"),
    # ... the step never made, its helper line run from another call on other numbers (q_nope turned, not q_pe)
    ("mla/mla-rope-misplaced__blind_b30_rope_on_q_nope.py", "head split", 61, "called-on-other",
     "your line 33 makes this step for another call, and the call at your line 61 runs it on other numbers"),
    # a term kept with the other sign (ALiBi's bias made negative) is a convention: the difference made from it
    # (`scores - alibi`, which adds the penalty back) is the departure, not the bias
    ("alibi/alibi-sign__blind_b33_double_negation.py", "step", 28, "differs", "differs by up to"),
    # ... or the step's own product, its helper run from another call (apply_rope(q_nope), Hugging Face style)
    ("mla/mla-rope-misplaced__blind_b44_nope_rotated.py", "rotation", 56, "called-on-other",
     "the call at your line 56 runs it on other numbers"),
    # a step held in one half of a tensor twice its size (Hugging Face's RoPE turns both halves at once, with
    # cat((freqs, freqs))): rotate_half's cat(x2, -x1) is where the turn goes the other way
    ("rope/rope-wrong-direction__blind_b49_rotate_half.py", "rotation", 7, "other-step", "in the first half of yours"),
    # a loop over heads with a helper called per head (`self._attend(Q[:, :, sl], ...)`): each pass is its head's
    # part of the step, and the scale of 1 made in the constructor is the line
    ("mha/missing-scale__blind_b50_head_loop_intdiv.py", "scale", 12, "factor",
     "from the whole number 1 your line 12 computes"),
    # ... a feature-map helper called twice a head: its passes are the heads' parts; the input's slice `q[:, h]`,
    # only read, stands for no step that computes
    ("linear-attention/linear-feature-map__blind_b35_handmade_elu.py", "step", 6, "differs", "differs by up to"),
    # a tensor made from a Python list (the ALiBi slopes): the return statement that built the list
    ("alibi/alibi-slopes__blind_b44_contiguous_extra.py", "slopes", 14, "differs",
     "made from numbers your line 14 computes"),
    # an index in an exercise whose steps are no indices (GQA's `arange(H) % Hkv`): the user's integer tensors
    ("gqa/kv-repeat-order__blind_b47_arange_mod.py", "kv repeat", 24, "arranged", "put in that order at your line 24"),
    # kv heads never repeated (the queries grouped instead) is no departure: the mask after it is
    ("paged-attention/paged-length-ignored__blind_b47_le_length.py", "mask", 17, "shows", "shows 6 of the 36"),
    # the input read at the wrong places (RoPE's pairs through `2 * i`): the line that computed the index
    ("rope/rope-interleaved__blind_b47_pair_index.py", "pairs", 8, "differs", "read through the index your line 8"),
    # a step made from constants alone is judged by its result: `arange(d/2)` is another way to `arange(0, d, 2)`,
    # and the exponent that lacks its 2 is on the line that finishes the frequencies
    ("llama-block/rope-wrong-frequencies__blind_b27_rope_wrong_frequencies_01.py", "frequencies", 33, "differs",
     "differs by up to"),
    # a mask's pattern compared on one line and applied by torch.where on the next: the finding takes the
    # comparison's line from the departure, not the where's
    ("flash/causal-diagonal__blind_b20_strict_offset.py", "mask", 23, "hides", "hides 8 scores the reference shows"),
    # the model answer's result left out: the code hands the step's input on as its result (`out = num`, then
    # `return out.reshape(...)`): the line that did
    ("linear-attention/linear-no-normaliser__blind_b46_bmm_den_unused.py", "normaliser", 21, "other-step",
     "your line 21 hands its input on as the result"),
    # ... returned straight away (`return num`): the return statement
    ("linear-attention/linear-no-normaliser__blind_b34_unused_den.py", "normaliser", 17, "other-step",
     "your line 17 hands its input on as the result"),
    # ... flash's accumulator handed on undivided (`out = numer`): named at that line (online-softmax-no-normalise)
    ("flash/online-softmax-no-normalise__blind_b44_split_zip.py", "normalisation", 30, "other-step",
     "your line 30 hands its input on as the result"),
    # ... a block's last residual never added (`out = self.ffn(self.ffn_norm(h))`): the feed-forward's output is a
    # projection of its own, not the attention's output projection
    ("llama-block/missing-residual__blind_b25_missing_residual_02.py", "step", 88, "other-step",
     "the reference's projection returned; the step is left out: your line 88 hands its input on as the result"),
    # a mistake that shows only with a cache (MLA's mask aligned top-left): traced on a case that starts from one
    ("mla/causal-misaligned__blind_b28_top_left_where.py", "mask", 76, "hides", "hides 160 scores the reference shows"),
    # positions made as integers and cast where the angles are taken (`pos.to(calc)`): the line that made them
    ("mla/rope-positions-ignored__blind_b44_naive_einsum.py", "angles", 52, "differs", "differs by up to"),
]


def _departure(path: Path, seed: int, monkeypatch):
    """(the departure the check of the corpus file `path` found, its report)."""
    from attn_drill.judge import diagnoses, engine

    seen = []
    keep = diagnoses.line_from_departure

    def spy(check, out):
        seen.append(diagnoses.departure(check))
        return keep(check, out)

    monkeypatch.setattr(diagnoses, "line_from_departure", spy)
    report = engine.check_file(path.resolve(), path.parent.name, seed)
    return seen[0], report


@pytest.mark.parametrize("name, kind, line, relation, words", DEPARTURES, ids=[d[0] for d in DEPARTURES])
def test_the_departure_finds_the_line_a_loop_a_reduction_or_an_extra_tensor_went_wrong(name, kind, line, relation,
                                                                                         words, monkeypatch):
    path = Path(__file__).parent / "corpus" / name
    assert "# MISTAKE" in path.read_text().splitlines()[line - 1]
    gone, report = _departure(path, 1234, monkeypatch)
    assert (gone.kind, gone.line, gone.relation) == (kind, line, relation), gone
    assert words in gone.how, gone.how
    first = next(f for f in report.findings if f.level == "error")
    assert (first.slug, first.line) == (path.stem.split("__")[0], line), first


@pytest.mark.parametrize("seed", [1, 3])
def test_a_step_made_from_steps_the_code_never_makes_yields_to_one_on_its_own_branch(seed, monkeypatch):
    """Absorbed MLA makes no values: under seeds 1 and 3 the values' head split was stood for by the queries read
    into the latent (as many numbers, made from nothing of its inputs); the scale's factor, on a branch of its own,
    is the departure under every seed."""
    path = Path(__file__).parent / "corpus" / "mla" / "missing-scale__blind_b50_absorbed_cis.py"
    gone, report = _departure(path, seed, monkeypatch)
    assert (gone.kind, gone.line, gone.relation) == ("scale", 73, "factor"), gone
    first = next(f for f in report.findings if f.level == "error")
    assert (first.slug, first.line) == ("missing-scale", 73), first
