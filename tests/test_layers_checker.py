"""What the layers' checker says beyond the corpus's first slug: the sub-layer named in the title of a mistake
inside the user's MultiHeadAttention, the first departing sub-module of a mistake no slug names (probes/layers.py),
the placement fitted for norm-placement, and the layers in explain and the mock."""

import json
import random
from functools import lru_cache
from pathlib import Path

from attn_drill import catalogue, findings
from attn_drill.practice import mock
from attn_drill.process import Job, run_checks
from attn_drill.report import Finding

CORPUS = Path(__file__).parent / "corpus"
SEED = 1234
TEXTBOOK = (CORPUS / "encoder-layer" / "ok__textbook.py").read_text()


def gelu(tmp: Path) -> Path:
    """A feed-forward with GELU for ReLU: no slug for it, so the finding says where the layer departs."""
    path = tmp / "encoder_layer_gelu.py"
    path.write_text(TEXTBOOK.replace("torch.relu(", "torch.nn.functional.gelu("))
    return path


@lru_cache(maxsize=None)
def reports(tmp: Path) -> dict[str, object]:
    jobs = [Job(CORPUS / "decoder-layer" / "mask-head-broadcast__no_unsqueeze.py", "decoder-layer"),
            Job(CORPUS / "encoder-layer" / "norm-placement__always_post.py", "encoder-layer"),
            Job(CORPUS / "decoder-layer" / "cross-attention-swapped__args.py", "decoder-layer"),
            Job(gelu(tmp), "encoder-layer")]
    return {Path(r.file).name: r for r in run_checks(jobs, seed=SEED, timeout=20)}


def test_the_layers_checker(tmp_path_factory):
    got = reports(tmp_path_factory.mktemp("layers"))
    # a mistake inside MultiHeadAttention: its bare slug, the sub-layer in the title, the mha check's evidence
    first = got["mask-head-broadcast__no_unsqueeze.py"].findings[0]
    assert first.slug == "mask-head-broadcast"
    assert first.title == "in self_attn: the mask is broadcast without a head axis"
    assert "self_attn departs from multi-head attention on the very inputs your layer hands it" in first.evidence
    assert "checked on its own as in the mha exercise" in first.evidence and "with B != H it raises" in first.evidence
    # the norms: which sub-layer is placed how, for which norm_first
    first = got["norm-placement__always_post.py"].findings[0]
    assert first.slug == "norm-placement"
    assert "with norm_first=True your layer computes self_attn post-LN" in first.evidence
    assert "with norm_first=False it is right" in first.evidence
    # a cause that also raises: named first, the exception as its evidence, the user's line
    swapped = got["cross-attention-swapped__args.py"]
    assert [f.slug for f in swapped.findings][:1] == ["cross-attention-swapped"]
    assert "exception" not in [f.slug for f in swapped.findings]  # one cause, one error: the exception is evidence
    assert "your layer raises, as this mistake does there (RuntimeError" in swapped.findings[0].evidence
    assert swapped.findings[0].line is not None
    # no slug for GELU: values-mismatch names the first departing sub-module, in the reference's order
    (finding,) = got["encoder_layer_gelu.py"].errors
    assert finding.slug == "values-mismatch"
    assert "ff2 is the first sub-module to depart: its input differs" in finding.evidence
    assert "everything up to ff1's output matched, so look between them: the activation" in finding.evidence


def test_a_sublayer_title_reads_as_the_table_in_a_choice():
    f = Finding("mask-inverted", "error", "The mask is inverted", "", "", "")
    f = findings.in_sublayer(f, ["self_attn", "cross_attn"], "both depart")
    assert f.title == "in self_attn and cross_attn: the mask is inverted" and f.evidence == "both depart"
    assert findings.without_sublayer(f.title) == "The mask is inverted"
    assert findings.without_sublayer("RoPE rotates adjacent pairs") == "RoPE rotates adjacent pairs"


def test_the_mock_can_pick_the_layers():
    layers = [catalogue.get("encoder-layer"), catalogue.get("decoder-layer")]
    picked = {mock.pick(random.Random(s), layers)[0].id for s in range(20)}
    assert picked == {"encoder-layer", "decoder-layer"}


def test_explain_asks_about_a_passing_decoder_layer(isolated, run_module):
    assert run_module("start", "decoder-layer").returncode == 0
    (isolated / "attn-practice" / "decoder_layer.py").write_text(
        (CORPUS / "decoder-layer" / "ok__textbook.py").read_text())
    r = run_module("explain", "decoder-layer", "--json", "--seed", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    asked = json.loads(r.stdout)
    assert asked["symbols"]["Tq"] != asked["symbols"]["Tk"] and len(asked["questions"]) >= 4
    shapes = [q for q in asked["questions"] if q["kind"] == "shape"]
    assert shapes and all(q["answer"] for q in shapes)
    for q in asked["questions"]:
        if q["kind"] == "breaks":  # the right choice worded as the others: no "in self_attn: " giveaway
            assert not any(c.startswith("in ") and "_attn:" in c for c in q["choices"]), q["choices"]


def test_a_llama_block_without_a_residual_says_which_sub_layer_in_its_title_and_fix():
    from attn_drill.judge import engine

    corpus = Path(__file__).parent / "corpus" / "llama-block"
    for name, which in (("missing-residual__blind_b25_missing_residual_02.py", "the feed-forward"),
                        ("missing-residual__blind_b25_missing_residual_01.py", "the attention")):
        report = engine.check_file((corpus / name).resolve(), "llama-block", 1234)
        first = next(f for f in report.findings if f.level == "error")
        assert first.slug == "missing-residual"
        assert first.title == f"No residual connection around {which}", first.title
        assert first.fix.startswith(f"Add {which}'s output to its input"), first.fix
