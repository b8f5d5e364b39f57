"""A wrong answer must not pass by forging its verdict: the pieces behind the hostile files' verdicts, one by one.

tests/hostile/*/{torch-modified,checker-reached,output-reused}__*.py go through the real command line; these
tests look at the mechanisms in this process: tamper.py's snapshot (the reference modules, the checker's tables,
torch's kernels and their canary, torch's own wrappers), audit.py's hook and the reference's gate, the tracer's
eye for the checker's code, forgery.py's import scan, provenance and output ledger, and the meta-device probe.
Every change made to torch or the checker here is undone before the test ends.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from attn_drill.judge import audit, calls, forgery
from attn_drill.judge.probes import generic as probes
from attn_drill.judge.variants import attention as variants
from attn_drill.judge.compare import TOL
from attn_drill.judge.specs import SPECS
from attn_drill.judge.specs.base import Case, load_references, reference_module
from attn_drill.judge.trace import Tracer
from attn_drill.judge import tamper

HOSTILE = Path(__file__).parent / "hostile"


@pytest.fixture
def snap():
    s = tamper.snapshot()
    yield s
    tamper.changed_since(s)  # whatever a failing test left behind goes back


def uniform(q, k, v, mask=None):
    w = torch.ones(*q.shape[:-1], k.size(-2), dtype=q.dtype) / k.size(-2)
    return w @ v, w


# --- 1. the reference modules are watched -----------------------------------------------------------------

def test_the_snapshot_watches_every_loaded_reference_module_its_names_and_classes():
    from attn_drill.judge.specs.base import load_references

    load_references(["sdpa.py", "mha.py"])
    snap = tamper.snapshot()
    labels = {s.label for s in snap.spaces}
    assert {"reference/sdpa.py", "reference/mha.py", "reference/mha.py:MultiHeadAttention"} <= labels
    ref = reference_module("sdpa.py")
    real = ref.scaled_dot_product_attention
    ref.scaled_dot_product_attention = uniform
    reference_module("mha.py").MultiHeadAttention.extra = lambda self: None
    changed = tamper.changed_since(snap, deep=False)
    assert "reference/sdpa.py:scaled_dot_product_attention" in changed
    assert "reference/mha.py:MultiHeadAttention.extra" in changed
    assert ref.scaled_dot_product_attention is real and not hasattr(reference_module("mha.py").MultiHeadAttention,
                                                                    "extra")


def test_the_checker_tables_changed_in_place_are_seen_by_the_deep_check_and_put_back(snap):
    tol, spec = TOL[torch.float64], SPECS["sdpa"]
    atol = tol.atol
    tol.atol = float("inf")
    spec.reference = lambda *a, **k: None
    TOL[torch.float16] = TOL[torch.float64]
    assert tamper.changed_since(snap, deep=False) == []  # after each call only the names are looked at
    changed = tamper.changed_since(snap, deep=True)
    assert "attn_drill.judge.compare.TOL[torch.float64].atol" in changed
    assert "attn_drill.judge.specs.SPECS['sdpa'].reference" in changed
    assert "attn_drill.judge.compare.TOL (changed in place)" in changed
    assert tol.atol == atol and "reference" not in vars(spec) and TOL[torch.float16].atol == 2e-2


# --- 2. torch's kernels -----------------------------------------------------------------------------------

def test_a_python_kernel_for_an_aten_operator_is_named_and_taken_out_again(snap):
    x = torch.tensor([-1.0, 2.0])
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("abs", lambda t: torch.zeros_like(t), "CPU")
    assert x.abs().tolist() == [0.0, 0.0]
    changed = tamper.changed_since(snap, deep=False)
    assert any("CPU kernel of torch's operator aten::abs" in c for c in changed)
    assert x.abs().tolist() == [1.0, 2.0]  # destroyed
    assert tamper.changed_since(snap, deep=True) == []  # canary and tables as before


@pytest.mark.filterwarnings("ignore:Warning only once")
def test_register_kernel_is_seen_too_and_new_operators_are_not_blamed(snap):
    torch.library.register_kernel("aten::sub.Tensor", "cpu", lambda a, b, alpha=1: torch.zeros_like(a))
    assert (torch.full((2,), 3.0) - torch.ones(2)).tolist() == [0.0, 0.0]
    with torch.library._scoped_library("forgery_test_ns", "FRAGMENT") as lib:  # a new operator of one's own: fine
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda t: t * 2, "CPU")
        changed = tamper.changed_since(snap, deep=False)
    assert [c for c in changed if "aten::sub.Tensor" in c] and not [c for c in changed if "twice" in c]
    assert (torch.full((2,), 3.0) - torch.ones(2)).tolist() == [2.0, 2.0]  # taken out again


def test_the_canary_catches_a_kernel_registered_underneath_torch_library(snap):
    handle = torch._C._dispatch_library("IMPL", "aten", "", "/__w/pytorch/pytorch/aten/src/ATen/Fake.cpp", 1)
    try:
        handle.impl("abs", "CPU", lambda t: torch.zeros_like(t), False)
        changed = tamper.changed_since(snap, deep=True)
    finally:
        handle.reset()
    assert any("torch's own arithmetic" in c for c in changed)
    assert tamper.canary() == snap.kernels["canary"]


def test_the_canary_is_the_same_every_time():
    assert tamper.canary() == tamper.canary()


# --- 5. torch changing itself ----------------------------------------------------------------------------

def test_a_wrapper_torch_makes_of_its_own_function_is_accepted_a_lookalike_is_not(snap):
    real = torch.manual_seed
    try:
        torch.manual_seed = torch._disable_dynamo(real)  # what `import torch._dynamo` does
        assert tamper.changed_since(snap, deep=False) == []
        assert torch.manual_seed is not real  # accepted: left as torch made it

        @functools.wraps(real)
        def mine(seed):
            return real(seed)

        torch.manual_seed = mine  # its __wrapped__ is torch's, its code is not
        assert tamper.changed_since(snap, deep=False) == ["torch.manual_seed"]
    finally:
        torch.manual_seed = real


def test_a_lazy_import_of_torch_nn_attention_bias_passes(run_script, tmp_path):
    """The real thing behind ok__lazy_torch_import.py: torch.nn.attention.bias imports torch._dynamo, which
    wraps torch.manual_seed. Slow (about 2 s of import), hence a generous time limit."""
    path = tmp_path / "sdpa.py"
    path.write_text(textwrap.dedent('''\
        import math
        import torch

        def scaled_dot_product_attention(q, k, v, mask=None):
            import torch.nn.attention.bias  # noqa: F401
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            w = torch.softmax(scores, dim=-1)
            return w @ v, w
        '''))
    r = run_script("check", str(path), "--json", "--timeout", "120")
    report = json.loads(r.stdout)
    assert report["passed"], report["findings"]
    assert not [f for f in report["findings"] if f["slug"] == "torch-modified"]


# --- 3. the audit hook and the reference's gate ------------------------------------------------------------

@pytest.fixture
def user_module(tmp_path):
    """A module in the 'user's' folder, with the hook armed for its file; disarmed (armed for a file that is
    never run) afterwards."""
    path = tmp_path / "mine.py"
    path.write_text(textwrap.dedent('''\
        import gc, inspect, logging, sys, traceback

        def frame():
            return sys._getframe()

        def stack():
            return inspect.stack()

        def objects():
            return gc.get_objects()

        def tb_frame():
            try:
                raise LookupError
            except LookupError as e:
                return e.__traceback__.tb_frame

        def innocent():
            logging.getLogger("forgery-test").debug("fine")
            return traceback.format_stack()

        def call(fn, *args):
            return fn(*args)

        def read(path):
            return open(path).read()

        def swap(fn):
            fn.__code__ = (lambda *a, **k: None).__code__

        def exec_frame(namespace):
            exec("import sys; sys._getframe()", namespace)
        '''))
    spec = importlib.util.spec_from_file_location("forgery_test_user", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    audit.arm(path, load_references())
    audit.take()
    yield module
    audit.arm(tmp_path / "nobody.py", load_references())
    audit.take()


@pytest.mark.parametrize("name, words", [("frame", "sys._getframe()"), ("stack", "sys._getframe()"),
                                         ("objects", "gc.get_objects()"), ("tb_frame", ".tb_frame")])
def test_the_users_code_gets_no_frame_and_no_object_of_the_checkers(user_module, name, words):
    with pytest.raises(audit.CheckerReached):
        getattr(user_module, name)()
    (slug, what, line), = audit.take()
    assert slug == "checker-reached" and words in what and line


def test_library_code_looking_at_frames_for_the_user_is_allowed(user_module):
    assert user_module.innocent()
    assert audit.take() == []
    assert sys._getframe()  # this test's own file is not the user's


def test_the_reference_is_gated_whatever_torchs_function_modes_say(user_module):
    ref = reference_module("sdpa.py").scaled_dot_product_attention
    q = torch.randn(2, 3, 4, dtype=torch.float64)
    assert ref(q, q, q)[0].shape == (2, 3, 4)  # the checker's own call
    with torch._C.DisableTorchFunction(), pytest.raises(audit.CheckerReached):
        user_module.call(ref, q, q, q)
    (slug, what, _), = audit.take()
    assert "sdpa.py: scaled_dot_product_attention" in what


def test_reading_a_reference_file_and_replacing_a_library_functions_code_are_refused(user_module):
    from attn_drill import paths

    with pytest.raises(audit.CheckerReached):
        user_module.read(paths.REFERENCE / "sdpa.py")
    from attn_drill.judge import compare

    code = compare.diff.__code__
    with pytest.raises(audit.CheckerReached):
        user_module.swap(compare.diff)
    assert compare.diff.__code__ is code
    hits = audit.take()
    assert [h[0] for h in hits] == ["checker-reached", "torch-modified"]
    assert "attn_drill.judge.compare.diff" in hits[1][1]


def test_code_the_user_compiles_counts_as_the_users_whatever_globals_it_runs_in(user_module):
    with pytest.raises(audit.CheckerReached):
        user_module.exec_frame(vars(torch))
    assert audit.take()


# --- 3. the tracer: the checker's own code run from the user's ---------------------------------------------

def test_the_tracer_stops_the_checkers_code_run_from_the_users_and_not_the_checkers_own_hooks(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("def run(fn, *args):\n    return fn(*args)\n")
    spec = importlib.util.spec_from_file_location("forgery_test_tracer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    q = torch.randn(2, 3, 4, dtype=torch.float64)
    with Tracer(path), pytest.raises(audit.CheckerReached):
        module.run(variants.attention, q, q, q, None, variants.Knobs())
    (slug, what, _), = audit.take()
    assert "attn_drill.judge.variants.attention.attention" in what
    with Tracer(path):
        variants.attention(q, q, q, None, variants.Knobs())  # the checker calling its own code: fine
        module.run(torch.matmul, q, q.transpose(-2, -1))
    assert audit.take() == []


# --- 3. imports and provenance -----------------------------------------------------------------------------

@pytest.mark.parametrize("source, line", [
    ("import attn_drill\n", 1),
    ("x = 1\ndef f():\n    from attn_drill.judge import variants\n", 3),
    ("import importlib\nm = importlib.import_module('attn_drill.judge.specs.base')\n", 2),
    ("import sys\nm = sys.modules['attn_drill.judge.variants.attention']\n", 2),
])
def test_an_import_of_attn_drill_is_found_anywhere_in_the_source(source, line):
    assert forgery.imports_checker(source, "x.py")[0] == line


def test_words_about_attn_drill_are_not_an_import():
    assert forgery.imports_checker('"""Checked by attn_drill, the drill."""\nimport attn_drill_helpers\n', "x.py") is None


def test_the_checkers_own_code_handed_in_as_the_answer_is_named():
    ref = reference_module("mha.py").MultiHeadAttention

    class Sub(ref):
        pass

    assert "derives from MultiHeadAttention" in forgery.provenance(Sub)
    assert "attn_drill.judge.variants.attention" in forgery.provenance(functools.partial(variants.attention, knobs=None))
    assert "reference/sdpa.py" in forgery.provenance(reference_module("sdpa.py").scaled_dot_product_attention)
    assert forgery.provenance(uniform) is None
    assert forgery.provenance({"causal_mask": reference_module("masks.py").causal_mask})


# --- 4. fresh outputs --------------------------------------------------------------------------------------

def outcome(case, outputs, inputs, dtype=torch.float64):
    return calls.Outcome(case, outputs=tuple(outputs), inputs=inputs, dtype=dtype)


def test_an_output_must_not_share_memory_with_another_calls_output_or_the_checkers_tensors():
    x1, x2 = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    a, b = Case("a", {"x": x1}, {}), Case("b", {"x": x2}, {})
    ledger = forgery.Ledger()
    ledger.checker([x1, x2], "the checker's own inputs")
    given = {"x": x1.clone()}
    first = outcome(a, [given["x"].exp()], given)
    assert ledger.call(first, ("y",)) is None
    again = {"x": x1.clone()}  # the same inputs again: a memoised answer is fine
    assert ledger.call(outcome(a, first.outputs, again), ("y",)) is None
    view = {"x": x2.clone()}  # a view of its own input is fine
    assert ledger.call(outcome(b, [view["x"][1:]], view), ("y",)) is None
    stale = ledger.call(outcome(b, first.outputs, {"x": x2.clone()}), ("y",))
    assert stale.slug == "output-reused" and "the y your code returned for a" in stale.evidence
    theirs = ledger.call(outcome(b, [x2[:, :2]], {"x": x2.clone()}), ("y",))
    assert "the checker's own inputs" in theirs.evidence
    ledger.checker([first.outputs[0] * 2], "the reference's output")
    ref = ledger.spans[-1].tensor
    assert "reference" in ledger.call(outcome(b, [ref], {"x": x2.clone()}), ("y",)).evidence
    other_dtype = ledger.call(outcome(a, first.outputs, {"x": x1.float()}, torch.float32), ("y",))
    assert other_dtype and "(float32)" in other_dtype.evidence


def test_masks_may_hand_out_one_cached_tensor_for_different_arguments():
    tri = torch.ones(8, 8, dtype=torch.bool).tril()
    ledger = forgery.Ledger(cache_ok=True)
    c1, c2 = Case("causal_mask(3)", {}, {}, config={"tq": 3}), Case("causal_mask(4)", {}, {}, config={"tq": 4})
    assert ledger.call(outcome(c1, [tri[:3, :3]], {}), ("mask",)) is None
    assert ledger.call(outcome(c2, [tri[:4, :4]], {}), ("mask",)) is None


# --- 6. outputs on the meta device -------------------------------------------------------------------------

def test_outputs_on_the_meta_device_for_a_cpu_call_are_the_users_mistake():
    spec = SPECS["sdpa"]
    case = spec.cases(torch.Generator().manual_seed(0))[0]
    meta = (torch.empty(2, 3, 5, 4, device="meta"), torch.empty(2, 3, 5, 6, device="meta"))
    bad = probes.elsewhere(spec, calls.Outcome(case, outputs=meta, device="cpu"))
    assert bad.slug == "wrong-return-type" and bad.level == "error" and "meta device" in bad.evidence
    assert probes.elsewhere(spec, calls.Outcome(case, outputs=meta, device="meta")) is None


def test_every_new_hostile_kind_has_its_file():
    stems = {p.stem.split("__")[0] for p in HOSTILE.glob("*/*.py")}
    assert {"checker-reached", "output-reused"} <= stems


def test_a_check_loads_only_the_references_it_reads():
    """Each reference costs a parse and a compile (about 15 ms, 21 of them): a check loads its exercise's and the
    canary's (sdpa), and one never loaded is one the checked code cannot reach."""
    code = ("from pathlib import Path\nfrom attn_drill.judge.engine import check_file\n"
            "from attn_drill.judge.specs.base import REFERENCES\n"
            "r = check_file(Path('reference/rope.py'), 'rope', 0)\nprint(r.passed, sorted(REFERENCES))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).parent.parent)
    assert out.stdout.split() == ["True", "['rope.py',", "'sdpa.py']"], out.stdout + out.stderr
