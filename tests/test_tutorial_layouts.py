"""Memorised tutorial code at the api stage: the Annotated Transformer's `self.linears`, Hugging Face's `q_proj`,
Meta's `wq`, GPT-2's `c_attn` are named as such, with exactly what to rename (the weights go in by name)."""

from __future__ import annotations

from pathlib import Path

from attn_drill.process import Job, run_checks

CORPUS = Path(__file__).parent / "corpus"
EXPECTED = {  # file -> (words of the evidence, the renames the fix asks for)
    "mha/missing-name__annotated_transformer_linears.py":
        ("the Annotated Transformer's", ["self.linears[0] -> self.W_q", "self.linears[3] -> self.W_o"]),
    "mha/missing-name__hugging_face_q_proj.py": ("Hugging Face's layout", ["self.q_proj -> self.W_q",
                                                                           "self.o_proj -> self.W_o"]),
    "gqa/missing-name__meta_llama_wq.py": ("Meta's LLaMA layout", ["self.wk -> self.W_k", "self.wv -> self.W_v"]),
    "mha-fused/missing-name__gpt2_c_attn.py": ("GPT-2's and nanoGPT's layout", ["self.c_attn -> self.W_qkv",
                                                                                "self.c_proj -> self.W_o"]),
    "encoder-layer/missing-name__annotated_transformer_linears.py":
        ("your self.self_attn follows the Annotated Transformer's", ["self.self_attn.linears[1] -> self.self_attn.W_k"]),
}


def test_a_tutorials_layout_is_named_with_its_renames():
    files = [CORPUS / f for f in EXPECTED]
    for f, rep in zip(EXPECTED, run_checks([Job(p, p.parent.name) for p in files], seed=3, timeout=30)):
        words, renames = EXPECTED[f]
        first = rep.errors[0]
        assert first.slug == "missing-name" and words in first.evidence, (f, first)
        assert all(r in first.fix for r in renames), (f, first.fix)
