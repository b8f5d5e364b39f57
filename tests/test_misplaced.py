"""The variants behind issue 10's slugs (diagnoses/misplaced.py): each knob is the mistake it names, and the
forms that are the same computation as the reference stay the reference."""

from __future__ import annotations

import torch

from attn_drill.judge.variants import attention as variants
from attn_drill.judge.diagnoses import misplaced
from attn_drill.judge.specs.base import Case
from attn_drill.judge.variants.attention import Knobs
from attn_drill.judge.variants.flash import FlashKnobs, flash


def params(D: int, bias: bool = True, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name in ("W_q", "W_k", "W_v", "W_o"):
        out[f"{name}.weight"] = torch.randn(D, D, generator=g, dtype=torch.float64)
        if bias:
            out[f"{name}.bias"] = torch.randn(D, generator=g, dtype=torch.float64)
    return out


def inputs(B: int, T: int, D: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_w_o_by_column_blocks_with_the_bias_once_is_the_reference_and_the_other_forms_are_not():
    p, x, H = params(12), inputs(2, 5, 12), 3
    right, _ = variants.mha(p, H, x, x, x)
    y = torch.randn(2, H, 5, 4, dtype=torch.float64)
    merged = variants.linear(variants.merge_heads(y), p, "W_o")
    per_head = variants.project_per_head(p, y, "bias")  # the bias H times
    assert torch.allclose(per_head, merged + (H - 1) * p["W_o.bias"])
    assert torch.allclose(variants.project_per_head(p, y, "rows"), variants.merge_heads(y) @ p["W_o.weight"]
                          + p["W_o.bias"])
    for how in ("bias", "rows", "diagonal", "first"):
        assert not torch.allclose(variants.mha(p, H, x, x, x, knobs=Knobs(per_head=how))[0], right), how


def test_without_a_bias_w_o_per_head_with_its_bias_is_the_reference():
    p, x = params(12, bias=False), inputs(2, 5, 12)
    right, _ = variants.mha(p, 3, x, x, x)
    assert torch.allclose(variants.mha(p, 3, x, x, x, knobs=Knobs(per_head="bias"))[0], right)


def test_scale_after_softmax_scales_what_it_says():
    q, k, v = (inputs(2, 5, 4, seed=s) for s in (1, 2, 3))
    raw_out, raw_w = variants.attention(q, k, v, knobs=Knobs(scale=1.0))
    out, w = variants.attention(q, k, v, knobs=Knobs(scale_at="weights"))
    assert torch.allclose(w, raw_w / 2) and torch.allclose(out, raw_out / 2)  # d = 4
    out, w = variants.attention(q, k, v, knobs=Knobs(scale_at="output"))
    assert torch.allclose(w, raw_w) and torch.allclose(out, raw_out / 2)


def test_a_modest_fill_leaves_the_hidden_keys_weight_and_a_very_low_one_does_not():
    q, k, v = (inputs(1, 4, 4, seed=s) for s in (1, 2, 3))
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    _, right = variants.attention(q, k, v, mask)
    _, zero = variants.attention(q, k, v, mask, Knobs(fill_value=0.0))
    _, low = variants.attention(q, k, v, mask, Knobs(fill_value=-1e4))
    assert float(zero[..., ~mask].min()) > 0 and torch.allclose(low, right)


def test_the_flash_variants_drop_the_division_or_divide_by_a_stale_sum():
    q, k, v = (torch.randn(1, 2, 6, 4, generator=torch.Generator().manual_seed(s), dtype=torch.float64)
               for s in (1, 2, 3))
    right = flash(q, k, v, False, 2)
    dense = torch.softmax(q @ k.transpose(-2, -1) / 2, -1) @ v
    assert torch.allclose(right, dense)
    never = flash(q, k, v, False, 2, FlashKnobs(normalise="never"))
    assert not torch.allclose(never, right)
    assert torch.allclose(flash(q, k, v, False, 8, FlashKnobs(normalise="stale")).isinf().all(), torch.tensor(True))


def test_a_swapped_case_gives_the_reference_on_the_swapped_weights():
    p, x = params(12), inputs(2, 5, 12)
    case = Case("c", {"x": x}, {"H": 3}, params=p)
    changed = misplaced.use_param("W_v", "W_k")(case)
    assert changed.params["W_v.weight"] is p["W_k.weight"] and case.params["W_v.weight"] is p["W_v.weight"]
    swapped = misplaced.swap_params("W_q", "W_k")(case)
    assert swapped.params["W_q.weight"] is p["W_k.weight"] and swapped.params["W_k.weight"] is p["W_q.weight"]
    narrow = dict(p, **{"W_k.weight": p["W_k.weight"][:6], "W_k.bias": p["W_k.bias"][:6]})
    assert not misplaced.applies(misplaced.use_param("W_q", "W_k"), [Case("c", {}, {}, params=narrow)])


def test_the_line_of_a_swap_is_found_in_code_never_in_a_docstring(tmp_path):
    f = tmp_path / "mha.py"
    f.write_text('"""k = self.W_v(x) in a docstring"""\n\ndef f(x):\n    """\n    k = self.W_v(x)\n    """\n'
                 '    q = self.W_q(x)  # k = self.W_v(x)\n    k = self.W_v(x)\n', encoding="utf-8")
    assert misplaced.source_line(f, r"^\s*k\w*\s*=.*\bW_v\b") == 8
