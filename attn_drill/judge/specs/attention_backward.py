"""attention-backward: attention_backward(q, k, v, dout, mask=None) -> (dq, dk, dv).

The reference is the hand-derived model answer, which tests/test_reference_attention_backward.py holds to
autograd. The user's code may not use autograd or torch.func (trace.py's exact names "grad" and "backward": every
derivative they take surfaces as one of the two), nor a built-in attention or softmax backward. Cases: Tq != Tk
and Tq == Tk (where a transposed operand gives wrong values, not a shape error), d != dv, masks broadcast from
(Tq, Tk) and full ones, leading dims (B, H) and (B,).
"""

from __future__ import annotations

import torch

from attn_drill.i18n import t
from attn_drill.judge.specs.base import Case, Spec, random_mask, reference_module, resolve_function
from attn_drill.judge.trace import FORBIDDEN
from attn_drill.judge.variants.backward import BackwardKnobs, attention_backward


def backward_forbidden() -> dict:
    """trace.FORBIDDEN and autograd's ways in, each worded in the language in use (the keys are matched names)."""
    return FORBIDDEN | {
        "=grad": t("evidence.modern.specs_attention_backward.grad"),
        "=backward": t("evidence.modern.specs_attention_backward.backward"),
        "_softmax_backward_data": t("evidence.modern.specs_attention_backward.softmax_backward"),
        "attention_backward": t("evidence.modern.specs_attention_backward.attention_backward"),
    }


class AttentionBackwardSpec(Spec):
    id = "attention-backward"
    file = "attention_backward.py"
    name = "attention_backward"
    outputs = ("dq", "dk", "dv")
    axes = {"dq": ("batch", "head", "query", "feature"), "dk": ("batch", "head", "key", "feature"),
            "dv": ("batch", "head", "key", "feature")}
    signature = "attention_backward(q, k, v, dout, mask=None)"
    step_names = {"p": "softmax", "dp": "dP", "ds": "dS", "dv": "dv", "dq": "dq", "dk": "dk"}

    @property
    def forbidden(self) -> dict:
        return backward_forbidden()

    @property
    def no_gradients(self) -> str:
        return t("evidence.modern.specs_attention_backward.no_gradients")

    def resolve(self, module):
        calls = [((1, 2, 3, 4), {}), ((1, 2, 3, 4), {"mask": None})]
        return resolve_function(module, self.name, self.signature, calls)

    def cases(self, gen):
        def case(lead, Tq, Tk, d, dv, mask):
            q = torch.randn(*lead, Tq, d, generator=gen, dtype=torch.float64)
            k = torch.randn(*lead, Tk, d, generator=gen, dtype=torch.float64)
            v = torch.randn(*lead, Tk, dv, generator=gen, dtype=torch.float64)
            dout = torch.randn(*lead, Tq, dv, generator=gen, dtype=torch.float64)
            m, said = None, t("evidence.modern.specs_attention_backward.no_mask")
            if mask == "shared":
                m = random_mask(gen, Tq, Tk)
                said = t("evidence.modern.specs_attention_backward.mask_shared", Tq=Tq, Tk=Tk)
            elif mask == "full":
                m = random_mask(gen, *lead, Tq, Tk)
                said = t("evidence.modern.specs_attention_backward.mask_full", shape=tuple(lead) + (Tq, Tk))
            label = t("evidence.modern.specs_attention_backward.case", lead=tuple(lead), Tq=Tq, Tk=Tk, d=d, dv=dv,
                      said=said)
            dims = {"lead": tuple(lead), "Tq": Tq, "Tk": Tk, "d": d, "dv": dv, "B": lead[0],
                    "H": lead[1] if len(lead) > 1 else 1}
            return Case(label, {"q": q, "k": k, "v": v, "dout": dout, "mask": m}, dims)

        return [
            case((2, 3), 5, 7, 8, 6, "shared"),  # Tq != Tk: a transposed operand raises here
            case((2, 2), 6, 6, 4, 10, None),  # Tq == Tk: a transposed operand gives wrong values instead
            case((3,), 4, 9, 16, 5, "full"),  # leading dims (B,), a mask per batch element
            case((2, 3), 7, 7, 8, 8, "full"),  # square with a mask, d == dv
            case((1, 2), 3, 5, 4, 7, None),
        ]

    def empty_row_case(self, gen):
        return None

    def hides(self, case) -> bool:
        return case.inputs["mask"] is not None

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)
        kwargs = {"mask": x["mask"]} if x["mask"] is not None else {}
        return target(x["q"], x["k"], x["v"], x["dout"], **kwargs), None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = {n: (v.double() if v is not None and v.is_floating_point() else v) for n, v in case.cast(dtype).items()}
        fn = reference_module(self.file).attention_backward
        return fn(x["q"], x["k"], x["v"], x["dout"], x["mask"]), None, x

    def variant(self, case, knobs):
        kn = knobs if isinstance(knobs, BackwardKnobs) else BackwardKnobs(scale=getattr(knobs, "scale", None))
        x = case.inputs
        return attention_backward(x["q"], x["k"], x["v"], x["dout"], x["mask"], kn)

    def visible(self, case):
        return case.inputs["mask"]

    def expected_return(self):
        return t("evidence.modern.specs_attention_backward.expected_return")

    def expected_shapes(self, case):
        x = case.inputs
        return {"dq": tuple(x["q"].shape), "dk": tuple(x["k"].shape), "dv": tuple(x["v"].shape)}

    def grad_inputs(self, x, module):
        return {}
