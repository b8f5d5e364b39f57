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
     "at the mask", "keeps finite values (0) where the reference has -inf"),
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
     "at the mask", "keeps finite values (0) where the reference has -inf"),
    # said with the user's own variable, never the model answer's (`y`): here the user calls it `merged`
    ("mha", "mha.py", "y = y.transpose(1, 2).reshape(B, Tq, D)  # (B, Tq, H, d) -> (B, Tq, D)",
     "merged = y.flip(1).transpose(1, 2).reshape(B, Tq, D)\n        y = merged",
     "at the merge of the heads (`merged`)", "the right numbers in another arrangement"),
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
    assert first.fix == findings.STEP_FIX["angles"]
