"""flash: flash_attention(q, k, v, causal=False, block_size=64) -> out, tiled, with an online softmax.

Every call of the user's code runs under memory.Allocations: an allocation of Tq * Tk entries or more per
(batch, head) (the full score matrix, or a full mask) stops the code there. The cases keep B * H * block_size
< Tk and B * H * d < min(Tq, Tk), so no tensor a blockwise version needs (a block of scores, the output, a
transposed key) reaches that size even when flattened over batch and heads; and T is several blocks long
and not a multiple of them.
"""

from __future__ import annotations

import time
from functools import lru_cache

import torch

from attn_drill.i18n import t
from attn_drill.judge import memory
from attn_drill.judge.compare import closeness
from attn_drill.judge.specs.base import Case, Spec, reference_module, resolve_function
from attn_drill.judge.variants.flash import FlashKnobs, flash

DEFAULT_BLOCK = 64  # the contract's default block_size
MEASURE = {"T": 4096, "d": 64, "block_size": 256}  # the memory comparison: B = H = 1, float32
MEASURE_SECONDS = 0.4  # a version slower than this at T=4096 on the meta device is not measured


class FlashSpec(Spec):
    # localise.py: the reference's variables, named as steps
    index_steps = True  # Spec.index_steps: the key positions a block compares are steps
    step_names = {"m": "running max", "m_new": "running max", "shift": "running max", "alpha": "rescale factor",
                  "p": "block probabilities", "l": "running sum", "acc": "accumulator", "out": "normalisation",
                  "future": "causal mask", "last_key": "causal mask"}
    id = "flash"
    file = "flash.py"
    name = "flash_attention"
    outputs = ("out",)
    maps = "values"  # attn-drill show
    axes = {"out": ("batch", "head", "query", "feature")}
    signature = "flash_attention(q, k, v, causal=False, block_size=64)"

    def resolve(self, module):
        calls = [((1, 2, 3), {"causal": True, "block_size": 16}), ((1, 2, 3), {})]  # the checker calls it both ways
        return resolve_function(module, self.name, self.signature, calls)

    def cases(self, gen):
        def case(B, H, Tq, Tk, d, causal, block, gain=1.0):
            q, k, v = (torch.randn(B, H, T, d, generator=gen, dtype=torch.float64) for T in (Tq, Tk, Tk))
            q, k = q * gain, k * gain
            label = t("evidence.cache.specs_flash.label", B=B, H=H, Tq=Tq, Tk=Tk, d=d,
                      causal=(t("evidence.cache.specs_flash.causal") if causal
                              else t("evidence.cache.specs_flash.not_causal")),
                      block=f"block_size={block}" if block
                      else t("evidence.cache.specs_flash.default_block", block=DEFAULT_BLOCK))
            if gain != 1.0:
                top = float((q @ k.transpose(-2, -1)).abs().max()) / d ** 0.5
                label += t("evidence.cache.specs_flash.large_scores", top=top)
            dims = {"B": B, "H": H, "Tq": Tq, "Tk": Tk, "d": d, "causal": causal, "block_size": block}
            return Case(label, {"q": q, "k": k, "v": v}, dims)

        return [
            case(2, 2, 60, 90, 8, True, 16),  # a KV-cache shape: bottom-right vs top-left alignment shows
            case(2, 2, 85, 70, 8, False, 16),  # more queries than keys
            case(1, 3, 77, 77, 4, True, 16),  # square causal: the diagonal shows; 77 = 4 * 16 + 13
            case(2, 1, 50, 100, 8, False, 24),  # a block size that is no power of two; 100 = 4 * 24 + 4
            case(1, 2, 40, 72, 8, True, 16, gain=16.0),  # scores in the hundreds: exp overflows without a max
            case(2, 1, 20, 33, 8, True, None),  # the default block_size: one partial block holds every key
        ]

    def empty_row_case(self, gen) -> Case:
        """Causal with Tq > Tk: the first Tq - Tk queries see no key. Graded only for NaN (a warning)."""
        q, k, v = (torch.randn(1, 1, T, 8, generator=gen, dtype=torch.float64) for T in (55, 40, 40))
        dims = {"B": 1, "H": 1, "Tq": 55, "Tk": 40, "d": 8, "causal": True, "block_size": 16}
        return Case(t("evidence.cache.specs_flash.empty_row"),
                    {"q": q, "k": k, "v": v}, dims)

    def limit(self, case: Case) -> int | None:
        """Entries at which a tensor is a full score matrix; None where one block already holds every key."""
        Tq, Tk = case.dims["Tq"], case.dims["Tk"]
        return Tq * Tk if (case.dims["block_size"] or DEFAULT_BLOCK) < Tk else None

    def call(self, target, case, dtype=torch.float64, device="cpu", grad=False):
        x = case.cast(dtype, device)
        if grad:
            for n in ("q", "k", "v"):
                x[n].requires_grad_(True)
        kwargs = {"causal": case.dims["causal"]}
        if case.dims["block_size"]:
            kwargs["block_size"] = case.dims["block_size"]
        watch = memory.Allocations(user_file(target), limit=self.limit(case), heads=(case.dims["B"], case.dims["H"]))
        with watch:
            out = target(x["q"], x["k"], x["v"], **kwargs)
        if watch.too_big:  # the code caught the TensorTooLarge raised inside it
            raise memory.TensorTooLarge(watch.too_big, watch.limit)
        return out, None, x

    def reference(self, case, dtype=torch.float64, device="cpu", grad=False):
        x = {n: t.double() for n, t in case.cast(dtype).items()}
        if grad:
            for n in ("q", "k", "v"):
                x[n].requires_grad_(True)
        fn = reference_module(self.file).flash_attention
        out = fn(x["q"], x["k"], x["v"], causal=case.dims["causal"],
                 block_size=case.dims["block_size"] or DEFAULT_BLOCK)
        return out, None, x

    def variant(self, case, knobs: FlashKnobs):
        x = case.inputs
        return (flash(x["q"], x["k"], x["v"], case.dims["causal"], case.dims["block_size"] or DEFAULT_BLOCK, knobs),)

    def distance(self, a, b, var):
        """Over the rows the variant can see: a variant that hides every key of a row gives NaN there."""
        rows = torch.isfinite(var[0]).all(-1, keepdim=True)  # (..., Tq, 1)
        x, y = a[0], b[0]
        if x.shape != y.shape:
            return float("inf")
        keep = rows.expand_as(y)
        return closeness(x.detach().double()[keep], y[keep])

    def scale_names(self, case):
        d, Tk, block = case.dims["d"], case.dims["Tk"], case.dims["block_size"] or DEFAULT_BLOCK
        return {"1/d": 1 / d, t("evidence.cache.specs_flash.multiplied"): d ** 0.5,
                f"1/sqrt(block_size) = 1/sqrt({block})": block ** -0.5, f"1/sqrt(Tk) = 1/sqrt({Tk})": Tk ** -0.5,
                t("evidence.cache.specs_flash.zero_scale"): 0.0}

    def expected_shapes(self, case):
        return {"out": tuple(case.inputs["q"].shape)}

    def grad_inputs(self, x, module):
        return {n: x[n] for n in ("q", "k", "v")}

    def pass_note(self, check) -> str:
        """For a passing values stage: the peak extra memory at T=4096, the user's against the reference's."""
        return memory_note(check.target)


def user_file(target) -> str | None:
    code = getattr(target, "__code__", None)
    return code.co_filename if code else None


def measure(fn, user: str | None = None, seconds: float | None = None) -> memory.Allocations | str:
    """Run fn at T=4096 on the meta device (shapes, no arithmetic) under Allocations; the tracker, or why not."""
    T, d, block = MEASURE["T"], MEASURE["d"], MEASURE["block_size"]
    q, k, v = (torch.empty(1, 1, T, d, device="meta") for _ in range(3))
    deadline = time.perf_counter() + seconds if seconds else None
    watch = memory.Allocations(user, stop=False, deadline=deadline)
    try:
        with torch.no_grad(), watch:
            fn(q, k, v, causal=False, block_size=block)
    except memory.TooSlow:
        pass
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - e.g. .item() or a data-dependent branch, which meta cannot run
        return t("evidence.cache.specs_flash.not_on_meta", error=type(e).__name__)
    if watch.late:
        return t("evidence.cache.specs_flash.too_slow", seconds=seconds)
    return watch


@lru_cache(maxsize=1)
def reference_peak() -> int:
    """Measured once per process, with no time limit: its first meta matmul pays for importing sympy (0.7 s)."""
    ref = measure(reference_module("flash.py").flash_attention)
    return ref.peak if isinstance(ref, memory.Allocations) else 0


def memory_note(target) -> str:
    T, d, block = MEASURE["T"], MEASURE["d"], MEASURE["block_size"]
    where = t("evidence.cache.specs_flash.peak", T=T, d=d, block=block)
    ref = memory.mib(reference_peak())
    yours = measure(target, user_file(target), MEASURE_SECONDS)
    if isinstance(yours, str):
        return t("evidence.cache.specs_flash.not_measured", where=where, why=yours, ref=ref)
    return t("evidence.cache.specs_flash.measured", where=where, yours=memory.mib(yours.peak), ref=ref,
             full=memory.mib(T * T * 4))
