"""The diagnoses' registry: every slug a diagnosis may name has its wording, and the corpus must prove it on
every exercise it is registered for (test_corpus.REQUIRED lists what the corpus holds two files or more of)."""

from __future__ import annotations

from pathlib import Path

from test_corpus import REQUIRED

from attn_drill import findings
from attn_drill.judge import diagnoses

# registered for every exercise (None) but unable to fire on some: the reason is the exemption
CANNOT = {("masks", "nan-output"): "a boolean mask holds no NaN"}


def registered() -> list[tuple[str, str, str]]:
    """(exercise, slug, function name) for every slug each diagnosis may name, on each exercise it runs for."""
    out = []
    for slugs, exercises, fn in diagnoses.REGISTRY:
        for exercise in REQUIRED if exercises is None else exercises:
            out += [(exercise, slug, fn.__name__) for slug in slugs]
    return out


def test_every_registered_slug_has_its_wording():
    unworded = sorted({(slug, name) for _, slug, name in registered() if slug not in findings.WORDING})
    assert not unworded, f"slugs with no entry in findings.WORDING (one slug per string): {unworded}"


def test_every_registered_pair_is_required_of_the_corpus():
    untested = sorted({(exercise, slug, name) for exercise, slug, name in registered()
                       if slug not in REQUIRED.get(exercise, ()) and (exercise, slug) not in CANNOT})
    assert not untested, f"(exercise, slug) pairs no corpus file must prove: {untested}"


def test_the_exemptions_are_still_needed():
    pairs = {(exercise, slug) for exercise, slug, _ in registered()}
    for pair in CANNOT:
        assert pair in pairs and pair[1] not in REQUIRED[pair[0]], pair


def test_a_diagnosis_registers_one_slug_or_several():
    before = len(diagnoses.REGISTRY)
    try:
        diagnoses.diagnosis("missing-scale", ("sdpa",))(lambda check: None)
        diagnoses.diagnosis(("missing-scale", "wrong-scale"), None)(lambda check: None)
        assert [r[:2] for r in diagnoses.REGISTRY[before:]] == [
            (("missing-scale",), ("sdpa",)), (("missing-scale", "wrong-scale"), None)]
    finally:
        del diagnoses.REGISTRY[before:]


# A diagnosis with a bug of ours, run first: it raises on every check.
BROKEN_DIAGNOSIS = """
import json, sys
from pathlib import Path
from attn_drill.judge import diagnoses
from attn_drill.judge.engine import check_file

def broken(check):
    raise KeyError("a bug of ours")

diagnoses.REGISTRY.insert(0, (("missing-scale",), None, broken))
print(json.dumps(check_file(Path(sys.argv[1]), "sdpa", 7).to_dict()))
"""


def test_a_diagnosis_that_raises_leaves_the_verdict_standing():
    """pytest's rule for a broken assertrepr hook: an explanation that fails never sinks the report."""
    import json
    import subprocess
    import sys

    no_scale = Path(__file__).parent / "corpus" / "sdpa" / "missing-scale__no_div.py"
    run = subprocess.run([sys.executable, "-c", BROKEN_DIAGNOSIS, str(no_scale)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    rep = json.loads(run.stdout.splitlines()[-1])
    errors = [f["slug"] for f in rep["findings"] if f["level"] == "error"]
    notes = [f for f in rep["findings"] if f["slug"] == "internal-error"]
    assert errors == ["missing-scale"] and not rep["passed"], rep["findings"]
    assert len(notes) == 1 and notes[0]["level"] == "warning"
    assert "the diagnosis broken failed: KeyError" in notes[0]["evidence"]


def test_an_exception_from_another_line_is_not_called_the_same_mistake(tmp_path):
    """A cause seen only where the code runs (the departure) explains the cases that raise only when they raise at
    its line. This attention merges its heads d-major (the departure sees the merge at line 46) and, with
    bias=False, raises where it adds a None bias (line 49): two things, said as two ("also raises"), never "the
    same mistake is why your code raises"."""
    from attn_drill.process import Job, run_checks

    text = (Path(__file__).parent.parent / "reference" / "mha.py").read_text()
    text = text.replace("        y = y.transpose(1, 2).reshape(B, Tq, D)  # (B, Tq, H, d) -> (B, Tq, D)",
                        "        y = y.permute(0, 2, 3, 1).reshape(B, Tq, D)  # d-major")
    text = text.replace("        return self.W_o(y), weights",
                        "        out = y @ self.W_o.weight.T\n        return out + self.W_o.bias, weights")
    path = tmp_path / "mha.py"
    path.write_text(text)
    (report,) = run_checks([Job(path, "mha")], seed=3, timeout=120)
    first = report.findings[0]
    assert first.slug == "wrong-head-merge" and first.line == 46, (first.slug, first.line)
    assert "your code also raises: TypeError" in first.evidence and "the same mistake is why" not in first.evidence