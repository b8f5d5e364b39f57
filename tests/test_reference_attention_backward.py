"""The attention-backward model answer against autograd (the contract's reference), with and without masks, any
leading dims; the checker's variant with default knobs against the model answer; each knob changes the outputs
somewhere; and autograd in a user's file is a forbidden built-in, found from what runs."""

import pytest
import torch

from conftest import reference

from attn_drill.judge.specs import SPECS
from attn_drill.judge.trace import Tracer
from attn_drill.judge.variants.backward import BackwardKnobs

ab = reference("attention_backward")


def autograd(q, k, v, dout, mask):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    out = torch.softmax(s, -1) @ v
    return torch.autograd.grad(out, (q, k, v), dout)


def test_the_model_answer_is_autograds_on_every_case():
    spec = SPECS["attention-backward"]
    for case in spec.cases(torch.Generator().manual_seed(2)):
        x = case.inputs
        torch.testing.assert_close(ab.attention_backward(x["q"], x["k"], x["v"], x["dout"], x["mask"]),
                                   autograd(x["q"], x["k"], x["v"], x["dout"], x["mask"]))


def test_the_variant_with_default_knobs_is_the_model_answer():
    spec = SPECS["attention-backward"]
    for case in spec.cases(torch.Generator().manual_seed(3)):
        torch.testing.assert_close(spec.variant(case, BackwardKnobs()), spec.reference(case)[0])


KNOBS = [BackwardKnobs(rowsum="none"), BackwardKnobs(rowsum="dp"), BackwardKnobs(forward_scale=1.0), BackwardKnobs(unscaled="both"), BackwardKnobs(unscaled="dq"),
         BackwardKnobs(unscaled="dk"), BackwardKnobs(transposed="dv"), BackwardKnobs(transposed="dk"),
         BackwardKnobs(transposed="dq"), BackwardKnobs(transposed="dp"), BackwardKnobs(mask="ignored"), BackwardKnobs(softmax_dim=-2),
         BackwardKnobs(scale=1.0)]


@pytest.mark.parametrize("knobs", KNOBS)
def test_every_knob_changes_the_outputs_somewhere(knobs):
    spec = SPECS["attention-backward"]
    differs = 0
    for c in spec.cases(torch.Generator().manual_seed(4)):
        try:
            var = spec.variant(c, knobs)
        except RuntimeError:  # a transposed operand where Tq != Tk
            differs += 1
            continue
        differs += spec.distance(var, spec.reference(c)[0], None) > 1e-3
    assert differs, knobs


def test_autograd_is_a_forbidden_built_in(tmp_path):
    path = tmp_path / "user.py"
    path.write_text("import torch\n\ndef run(x):\n    y = (x * x).sum()\n    return torch.autograd.grad(y, x)\n\n"
                    "def run2(x):\n    (x * x).sum().backward()\n    return x.grad\n\n"
                    "def ok(x):\n    with torch.no_grad():\n        return x.requires_grad_(False) * 2\n")
    import importlib.util
    mod_spec = importlib.util.spec_from_file_location("user", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    spec = SPECS["attention-backward"]
    for fn, bad in ((mod.run, True), (mod.run2, True), (mod.ok, False)):
        with Tracer(path, spec.forbidden) as t:
            fn(torch.randn(3, requires_grad=True))
        assert bool(t.forbidden_calls) == bad, (fn.__name__, t.forbidden_calls)
