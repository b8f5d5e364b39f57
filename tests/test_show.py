"""`attn-drill show`: every head's attention weights, the user's beside the reference's.

- the worker's side (judge/show.py), in this process: every attention exercise's model answer draws the
  reference's maps; the weights read through one-hot values (flash, kv-cache) are the softmax itself, computed
  here independently; a known mistake shows where it is; a module with `self_attn` and `cross_attn` children
  gets one map per sub-layer, by name;
- the plain numbers (entropy, strongest key);
- the command: CliRunner for the words and the exit codes, matplotlib only with --png (a probe), the image,
  and one real subprocess.
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attn_drill.practice import show as attention_maps
from attn_drill import catalogue, cli

ROOT = Path(__file__).parent.parent
CORPUS = Path(__file__).parent / "corpus"
ATTENTION = ["sdpa", "mha", "mha-fused", "gqa", "kv-cache", "flash"]


def invoke(*args: str):
    return CliRunner().invoke(cli.get_app(), list(args))


@pytest.fixture
def in_process(tmp_path):
    """maps.run arms the audit hook for the user's file, as the worker does; disarmed after."""
    from attn_drill.judge import audit
    from attn_drill.judge.specs.base import load_references

    yield
    audit.arm(tmp_path / "nobody.py", load_references())
    audit.take()


def user_copy(src: Path, folder: Path, name: str | None = None) -> Path:
    """A copy of src in a folder of its own: the audit hook treats the file's folder as the user's."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(src, folder / (name or src.name)))


def maps_of(path: Path, exercise: str, seed: int = 0) -> dict:
    from attn_drill.judge import show as maps

    r = maps.run(path, exercise, seed)
    assert "maps" in r, r
    return r


# -- the worker's side ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("exercise", ATTENTION)
def test_every_model_answer_draws_the_references_maps(in_process, tmp_path, exercise):
    ex = catalogue.get(exercise)
    r = maps_of(user_copy(ex.reference, tmp_path / "user"), exercise)
    [item] = r["maps"]
    assert item["yours"] == item["reference"] and not item["note"]
    assert len(item["reference"]) >= 2  # every head, not one
    for head in item["reference"]:
        assert 1 <= len(head) <= 8 and all(1 <= len(row) <= 8 for row in head)  # small enough to read
        for row in head:
            assert all(p >= 0 for p in row) and abs(sum(row) - 1) < 1e-3 or sum(row) == 0
    assert all(h.same for h in attention_maps.heads(item))


def test_flash_weights_read_through_identity_values_are_the_softmax(in_process, tmp_path):
    import torch

    from attn_drill.judge import show as maps

    r = maps_of(user_copy(ROOT / "reference" / "flash.py", tmp_path / "user"), "flash", seed=5)
    x = maps.flash_example(torch.Generator().manual_seed(5))  # the same example, from the same seed
    q, k = x["q"][0], x["k"][0]  # (H, Tq, d), (H, Tk, d)
    Tq, Tk = q.size(-2), k.size(-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    visible = torch.arange(Tk)[None, :] <= torch.arange(Tq)[:, None] + (Tk - Tq)  # bottom-right causal
    want = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    assert torch.allclose(torch.tensor(r["maps"][0]["reference"], dtype=torch.float64), want, atol=1e-4)


def test_kv_cache_weights_read_through_one_hot_values_are_the_softmax(in_process, tmp_path, monkeypatch):
    """The probabilities the reference's own softmax computes, call by call, caught here by wrapping torch.softmax."""
    import torch
    import torch.nn.functional as F

    from attn_drill.judge import show as maps
    from attn_drill.judge.specs import SPECS
    from attn_drill.judge.specs.base import reference_module

    r = maps_of(user_copy(ROOT / "reference" / "kv_cache.py", tmp_path / "user"), "kv-cache", seed=2)
    case, _ = maps.kv_example(torch.Generator().manual_seed(2))
    spec = SPECS["kv-cache"]
    module, _ = spec.build(reference_module(spec.file).CachedSelfAttention, case, torch.float64)
    caught, softmax = [], torch.softmax
    monkeypatch.setattr(torch, "softmax", lambda t, dim: caught.append(softmax(t, dim)) or caught[-1])
    x, T, cache, start = case.inputs["x"], case.dims["T"], None, 0
    with torch.no_grad():
        for n in maps.KV_STEPS:
            _, cache = module(x[:, start:start + n], cache=cache)
            start += n
    want = torch.cat([F.pad(w, (0, T - w.size(-1))) for w in caught], dim=-2)[0]  # (H, T, T)
    assert len(caught) == len(maps.KV_STEPS)
    assert torch.allclose(torch.tensor(r["maps"][0]["reference"], dtype=torch.float64), want, atol=1e-4)


def test_a_misaligned_causal_mask_shows_in_the_rows_after_the_prefill(in_process, tmp_path):
    f = user_copy(CORPUS / "kv-cache" / "causal-misaligned__tril_no_offset.py", tmp_path / "user", "kv_cache.py")
    [item] = maps_of(f, "kv-cache")["maps"]
    hs = attention_maps.heads(item)
    assert all(not h.same for h in hs)
    prefill = 4  # the first call has no cache: its queries are right
    assert all(i >= prefill for h in hs for i, _ in h.cells)
    assert any(h.tops for h in hs) and any(h.entropy_differs for h in hs)


def test_kv_cache_values_that_no_hook_can_reach_are_said_not_drawn(in_process, tmp_path):
    """F.linear(x, self.W_v.weight) is right, but W_v's hook never runs: no map of the user's is made up."""
    f = tmp_path / "user" / "kv_cache.py"
    f.parent.mkdir()
    f.write_text((ROOT / "reference" / "kv_cache.py").read_text().replace(
        "v = self.W_v(x)", "v = torch.nn.functional.linear(x, self.W_v.weight)"))
    [item] = maps_of(f, "kv-cache")["maps"]
    assert item["yours"] is None and "never calls self.W_v" in item["note"] and item["reference"]


@pytest.mark.parametrize("exercise, name", [("flash", "causal-misaligned__top_left.py"),
                                            ("mha", "mask-inverted__fill_where_true.py"),
                                            ("gqa", "kv-repeat-order__repeat_tiles.py")])
def test_a_known_mistake_draws_maps_that_differ(in_process, tmp_path, exercise, name):
    f = user_copy(CORPUS / exercise / name, tmp_path / "user", catalogue.get(exercise).file)
    [item] = maps_of(f, exercise)["maps"]
    assert item["yours"] is not None and item["yours"] != item["reference"]
    assert any(not h.same for h in attention_maps.heads(item))


def test_broken_code_is_one_verdict_from_the_existing_findings(in_process, tmp_path):
    from attn_drill.judge import show as maps

    bad = tmp_path / "user" / "mha.py"
    bad.parent.mkdir()
    bad.write_text("import torch\n\ndef f(:\n    pass\n")
    assert maps.run(bad, "mha", 0)["verdict"]["slug"] == "syntax-error"
    bad.write_text((ROOT / "reference" / "mha.py").read_text().replace(
        "        B, Tq, D = query.shape\n", "        B, Tq, D = query.shape\n        raise ValueError('boom')\n"))
    line = bad.read_text().splitlines().index("        raise ValueError('boom')") + 1
    v = maps.run(bad, "mha", 0)["verdict"]
    assert v["slug"] == "exception" and "boom" in v["evidence"] and v["line"] == line
    assert maps.run(bad, "rope", 0)["usage"] is True  # rope has no attention weights


# -- a module with attention sub-layers ----------------------------------------------------------------------
LAYER = (ROOT / "reference" / "mha.py").read_text() + '''

class TinyDecoder(nn.Module):
    """Causal self-attention, then cross-attention to memory: two attention sub-layers, by name."""

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)

    def forward(self, x, memory, memory_mask=None):
        T = x.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None]  # (1, T, T)
        x = x + self.self_attn(x, x, x, causal)[0]
        return x + self.cross_attn(x, memory, memory, MEMORY_MASK)[0]
'''


def layer_spec(maps: str | None = "sublayers"):
    """A spec for TinyDecoder, as a Transformer layer's spec would be: its sub-layers' weights copied in by name.
    With maps=None it says nothing: a module exercise is then looked at through its sub-layers all the same."""
    import torch

    from attn_drill.judge.specs.base import Case, ModuleSpec, random_mask

    class TinySpec(ModuleSpec):
        id, file, name = "tiny-layer", "tiny_layer.py", "TinyDecoder"
        outputs, layers, positional = ("out",), (), ("d_model", "num_heads")
        forward = ((None, 1, 2), {"memory_mask": None}, "forward(self, x, memory, memory_mask=None)")
        signature = "__init__(self, d_model, num_heads, bias=True)"

        def cases(self, gen):
            B, H, Tq, Tk, D = 2, 2, 5, 7, 8
            params = {f"{sub}.{w}.{p}": torch.randn(*((D, D) if p == "weight" else (D,)), generator=gen,
                                                     dtype=torch.float64) / D ** 0.5
                      for sub in ("self_attn", "cross_attn") for w in ("W_q", "W_k", "W_v", "W_o")
                      for p in ("weight", "bias")}
            inputs = {"x": torch.randn(B, Tq, D, generator=gen, dtype=torch.float64),
                      "memory": torch.randn(B, Tk, D, generator=gen, dtype=torch.float64),
                      "memory_mask": random_mask(gen, B, 1, Tk)}
            return [Case(f"B={B} H={H} Tq={Tq} Tk={Tk} D={D}", inputs, {"B": B, "H": H, "Tq": Tq, "Tk": Tk},
                         {"d_model": D, "num_heads": H, "bias": True}, params)]

        def build(self, cls, case, dtype, device="cpu"):
            module = cls(case.config["d_model"], case.config["num_heads"]).to(dtype).eval()
            module.load_state_dict(case.params)
            return module, None

        def feed(self, module, case, x, grad):
            return module(x["x"], x["memory"], x["memory_mask"])

    spec = TinySpec()
    spec.maps = maps
    return spec


def load_file(path: Path):
    spec = importlib.util.spec_from_file_location(f"tiny_reference_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mistake", [None, "~memory_mask", "cross_attn-no-weights"])
def test_every_attention_sub_layer_gets_its_maps_by_name(in_process, tmp_path, monkeypatch, mistake):
    from attn_drill.judge.specs import SPECS
    from attn_drill.judge.specs import base

    ref = tmp_path / "ref" / "tiny_layer.py"
    ref.parent.mkdir()
    ref.write_text(LAYER.replace("MEMORY_MASK", "memory_mask"))
    user = tmp_path / "user" / "tiny_layer.py"
    user.parent.mkdir()
    mine = LAYER.replace("MEMORY_MASK", "~memory_mask" if mistake == "~memory_mask" else "memory_mask")
    if mistake == "cross_attn-no-weights":  # a cross-attention module that returns its output alone
        mine += ("\n\nclass Plain(MultiHeadAttention):\n    def forward(self, *a):\n"
                 "        return super().forward(*a)[0]\n")
        mine = mine.replace("self.cross_attn(x, memory, memory, memory_mask)[0]",
                            "self.cross_attn(x, memory, memory, memory_mask)")
        mine = mine.replace("self.cross_attn = MultiHeadAttention(", "self.cross_attn = Plain(")
    user.write_text(mine)
    monkeypatch.setitem(SPECS, "tiny-layer", layer_spec(None if mistake is None else "sublayers"))
    monkeypatch.setitem(base.REFERENCES, "tiny_layer.py", load_file(ref))
    r = maps_of(user, "tiny-layer")
    assert [m["name"] for m in r["maps"]] == ["self_attn", "cross_attn"]
    self_attn, cross = (attention_maps.heads(m) for m in r["maps"])
    assert len(self_attn) == len(cross) == 2
    assert [len(h.reference[0]) for h in self_attn + cross] == [5, 5, 7, 7]  # Tq x Tq, then Tq x Tk
    assert all(h.same for h in self_attn)
    assert all(h.reference[i][j] == 0 for h in self_attn for i in range(5) for j in range(i + 1, 5))  # causal
    if mistake is None:
        assert all(h.same for h in cross)
    elif mistake == "~memory_mask":
        assert all(not h.same for h in cross)
    else:
        assert r["maps"][1]["yours"] is None and "cross_attn" in r["maps"][1]["note"]


ONE_HEAD = """
import math
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim, dk, dv, bias=True):
        super().__init__()
        self.W_q, self.W_k = nn.Linear(dim, dk, bias=bias), nn.Linear(dim, dk, bias=bias)
        self.W_v = nn.Linear(dim, dv, bias=bias)

    def forward(self, x, mask=None):
        scores = self.W_q(x) @ self.W_k(x).transpose(-2, -1) / math.sqrt(SCALE)  # (B, T, T)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ self.W_v(x), weights
"""


def one_head_spec():
    """A spec for one head whose weights are (B, T, T), as the self-attention exercise's are: axes with no head."""
    import torch

    from attn_drill.judge.specs.base import Case, ModuleSpec, random_mask, random_params

    class OneHeadSpec(ModuleSpec):
        id, file, name, maps = "one-head", "one_head.py", "SelfAttention", "returned"
        outputs, layers, positional = ("out", "weights"), ("W_q", "W_k", "W_v"), ("dim", "dk", "dv")
        axes = {"out": ("batch", "query", "feature"), "weights": ("batch", "query", "key")}

        def resolve(self, module):
            return module.SelfAttention, None

        def layer_shapes(self, config):
            dim, dk, dv = config["dim"], config["dk"], config["dv"]
            return {"W_q": (dk, dim), "W_k": (dk, dim), "W_v": (dv, dim)}

        def cases(self, gen):
            config = {"dim": 5, "dk": 3, "dv": 4, "bias": True}
            inputs = {"x": torch.randn(2, 6, 5, generator=gen, dtype=torch.float64),
                      "mask": random_mask(gen, 2, 6, 6)}
            return [Case("B=2 T=6 dim=5 dk=3 dv=4", inputs, {"B": 2, "T": 6}, config,
                         random_params(gen, self.layer_shapes(config), True))]

        def feed(self, module, case, x, grad):
            return module(x["x"], mask=x["mask"])

    return OneHeadSpec()


@pytest.mark.parametrize("scale", ["self.W_q.out_features", "0.05"])
def test_weights_of_one_head_are_drawn_as_one_head(in_process, tmp_path, monkeypatch, scale):
    from attn_drill.judge.specs import SPECS
    from attn_drill.judge.specs import base

    ref = tmp_path / "ref" / "one_head.py"
    ref.parent.mkdir()
    ref.write_text(ONE_HEAD.replace("SCALE", "self.W_q.out_features"))
    user = tmp_path / "user" / "one_head.py"
    user.parent.mkdir()
    user.write_text(ONE_HEAD.replace("SCALE", scale))  # sqrt(0.05) for sqrt(dk): a wrong scale
    monkeypatch.setitem(SPECS, "one-head", one_head_spec())
    monkeypatch.setitem(base.REFERENCES, "one_head.py", load_file(ref))
    [item] = maps_of(user, "one-head")["maps"]
    [head] = attention_maps.heads(item)  # batch 0's (T, T): one head, not B of them
    assert len(head.reference) == len(head.reference[0]) == 6
    assert head.same == (scale == "self.W_q.out_features")


def test_a_module_exercise_with_no_weights_anywhere_is_a_usage_error(in_process, tmp_path, monkeypatch):
    """A module spec that sets no `maps` is looked at through hooks; when its model answer has no sub-layer that
    returns 4-D weights (here one head's (B, T, T), which only maps = "returned" reads), there is nothing to draw."""
    from attn_drill.judge import show as maps
    from attn_drill.judge.specs import SPECS
    from attn_drill.judge.specs import base

    for folder in ("ref", "user"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "one_head.py").write_text(ONE_HEAD.replace("SCALE", "self.W_q.out_features"))
    spec = one_head_spec()
    spec.maps = None
    monkeypatch.setitem(SPECS, "one-head", spec)
    monkeypatch.setitem(base.REFERENCES, "one_head.py", load_file(tmp_path / "ref" / "one_head.py"))
    r = maps.run(tmp_path / "user" / "one_head.py", "one-head", 0)
    assert r["usage"] is True and "one-head has no attention weights to draw" in r["error"]


# -- the numbers ---------------------------------------------------------------------------------------------
def test_entropy_in_bits_and_the_strongest_key_per_query():
    m = [[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.0, 0.0, 0.0, 0.0], [0.1, 0.2, 0.7, None]]
    assert attention_maps.row_entropy(m[0]) == 0.0 and attention_maps.row_entropy(m[1]) == 2.0
    assert attention_maps.row_entropy(m[2]) is None and attention_maps.row_entropy(m[3]) is None
    assert attention_maps.entropy(m) == 1.0  # rows with no key or a NaN are left out
    assert attention_maps.strongest(m) == [0, 0, None, None]
    [h] = attention_maps.heads({"yours": [[[0.9, 0.1], [0.4, 0.6]]], "reference": [[[0.9, 0.1], [0.6, 0.4]]]})
    assert h.cells == {(1, 0), (1, 1)} and h.tops == [1] and not h.same


# -- the command ---------------------------------------------------------------------------------------------
def started(exercise: str, src: Path | None = None) -> Path:
    assert invoke("start", exercise).exit_code == 0
    path = Path("attn-practice") / catalogue.get(exercise).file
    if src is not None:
        shutil.copy(src, path)
    return path


def lines_fit(out: str) -> None:
    for line in out.splitlines():
        assert len(line.rstrip()) <= 80, line


def test_show_draws_every_head_side_by_side_within_80_columns(isolated):
    started("mha", ROOT / "reference" / "mha.py")
    r = invoke("show")
    assert r.exit_code == 0, r.output
    for word in ("head 0", "head 1", "head 2", "yours", "reference", "top", "entropy",
                 "Yours matches the reference on all 3 heads."):
        assert word in r.stdout
    assert r.stdout.count("✓ same as the reference") == 3
    lines_fit(r.stdout)
    assert any(line.count("head ") == 2 for line in r.stdout.splitlines())  # two heads to a line


def test_show_marks_the_heads_and_queries_that_differ(isolated):
    started("flash", CORPUS / "flash" / "causal-misaligned__top_left.py")
    r = invoke("show", "flash", "--seed", "3")
    assert r.exit_code == 0, r.output
    words = " ".join(r.stdout.split())  # as read, whatever the wrapping
    assert "✗" in words and "top key differs at q" in words and "*" in words
    assert "Yours differs: heads 0, 1. attn-drill check names the mistake." in r.stdout
    lines_fit(r.stdout)


def test_broken_code_is_one_line_and_never_our_traceback(isolated):
    path = started("sdpa")
    path.write_text("def scaled_dot_product_attention(q, k, v, mask=None):\n    return q @ k.T(\n")
    r = invoke("show")
    assert r.exit_code == 1
    assert r.stdout.startswith("✗ syntax-error  The file does not parse:") and "Traceback" not in r.output
    assert len(r.stdout.strip().splitlines()) <= 3
    path.write_text("def scaled_dot_product_attention(q, k, v, mask=None):\n    raise KeyError('no')\n")
    r = invoke("show", "sdpa")
    assert r.exit_code == 1 and "(your line 2)" in r.stdout and "Traceback" not in r.output


def test_usage_errors_are_one_line_and_exit_2(isolated, tmp_path):
    r = invoke("show")
    assert r.exit_code == 2 and "no exercise started yet" in r.output
    r = invoke("show", "gqa")
    assert r.exit_code == 2 and "gqa has no file yet" in r.output
    started("rope")
    r = invoke("show", "rope")
    assert r.exit_code == 2 and "rope has no attention weights to draw" in r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1
    r = invoke("show", "rope", "--png", str(tmp_path / "nowhere" / "maps.png"))
    assert r.exit_code == 2 and "no folder" in r.output


def test_a_bad_png_path_is_named_with_or_without_matplotlib(isolated, tmp_path, monkeypatch):
    started("mha", ROOT / "reference" / "mha.py")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as on a machine without the [plot] extra
    r = invoke("show", "--png", str(tmp_path / "nowhere" / "maps.png"))
    assert r.exit_code == 2 and r.output.startswith("error: no folder ")
    r = invoke("show", "--png", str(tmp_path))
    assert r.exit_code == 2 and "is a folder; give a file name" in r.output


def test_png_without_matplotlib_says_how_to_install_it(isolated, monkeypatch):
    started("mha", ROOT / "reference" / "mha.py")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    r = invoke("show", "--png", "maps.png")
    assert r.exit_code == 2
    assert r.output == 'error: --png needs matplotlib, an optional extra: pip install "attn-drill[plot]"\n'
    assert not Path("maps.png").exists()


def test_png_writes_an_image(isolated):
    pytest.importorskip("matplotlib")
    started("gqa", ROOT / "reference" / "gqa.py")
    r = invoke("show", "--png", "maps.png")
    assert r.exit_code == 0, r.output
    assert Path("maps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "Wrote the maps to maps.png" in r.stdout


PROBE = """
import sys
from attn_drill.cli import main
sys.argv = ["attn-drill", *{args!r}]
try:
    main()
except SystemExit as e:
    if e.code:
        raise
print("LOADED=" + ",".join(m for m in ("torch", "matplotlib") if m in sys.modules), file=sys.stderr)
"""


def loaded_by(*args: str) -> set:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", PROBE.format(args=list(args))], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stderr.splitlines() if x.startswith("LOADED="))
    return set(filter(None, line[len("LOADED="):].split(",")))


def test_show_imports_matplotlib_only_for_png_and_never_torch(isolated):
    pytest.importorskip("matplotlib")
    started("sdpa", ROOT / "reference" / "sdpa.py")
    assert loaded_by("show") == set()  # the user's code ran in the worker, not here
    assert loaded_by("show", "--png", "maps.png") == {"matplotlib"}  # the probe sees it when it is there


def test_a_real_process_shows_the_kv_cache_maps(isolated):
    """python -m attn_drill, as typed (this checkout's code: PYTHONPATH), in a terminal 80 columns wide."""
    started("kv-cache", ROOT / "reference" / "kv_cache.py")
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")
    r = subprocess.run([sys.executable, "-m", "attn_drill", "show"], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "W_v's rows one-hot by position" in r.stdout and r.stdout.count("head ") == 4
    assert "Yours matches the reference on all 4 heads." in r.stdout
    lines_fit(r.stdout)


# -- the modern set: the band and the sink's share; the LLaMA block's attention read inside it -------------------
def test_sliding_window_draws_the_band_and_what_the_sink_takes(in_process, tmp_path):
    import torch

    from attn_drill.judge.specs import SPECS
    from attn_drill.judge.specs.base import reference_module

    r = maps_of(user_copy(ROOT / "reference" / "sliding_window.py", tmp_path / "user"), "sliding-window", seed=4)
    [item] = r["maps"]
    assert item["yours"] == item["reference"]
    spec = SPECS["sliding-window"]
    case = spec.example(torch.Generator().manual_seed(4))
    x = case.inputs
    _, w = reference_module(spec.file).sliding_window_attention(x["q"], x["k"], x["v"], 3, x["sinks"])
    assert torch.allclose(torch.tensor(item["reference"], dtype=torch.float64), w[0], atol=1e-4)
    hs = attention_maps.heads(item)
    for h, head in zip(hs, w[0]):
        mine, theirs = h.rest
        assert mine == theirs and all(abs(t - float(1 - row.sum())) < 1e-3 for t, row in zip(theirs, head))
        assert all(t > 0.01 for t in theirs)  # each sink takes a real share
    assert all(row[j] == 0 for head in item["reference"] for i, row in enumerate(head)
               for j in range(len(row)) if not 0 <= i + 2 - j < 3)  # outside the band: exactly 0


def test_a_window_off_by_one_draws_one_more_key_per_row(in_process, tmp_path):
    f = user_copy(CORPUS / "sliding-window" / "window-off-by-one__ge_lower_bound.py", tmp_path / "user",
                  "sliding_window.py")
    [item] = maps_of(f, "sliding-window")["maps"]
    shown = [sum(p > 0 for p in row) for row in item["yours"][0]]
    want = [sum(p > 0 for p in row) for row in item["reference"][0]]
    assert shown[-1] == want[-1] + 1


def test_llama_block_weights_read_where_they_enter_w_o_are_the_softmax(in_process, tmp_path, monkeypatch):
    import torch

    r = maps_of(user_copy(ROOT / "reference" / "llama_block.py", tmp_path / "user"), "llama-block", seed=1)
    [item] = r["maps"]
    assert item["yours"] == item["reference"] and not item["note"]
    for head in item["reference"]:
        for i, row in enumerate(head):
            assert abs(sum(row) - 1) < 1e-3 and all(p == 0 for p in row[i + 1:])  # causal: nothing after i
    bad = user_copy(CORPUS / "llama-block" / "causal-diagonal__one_future.py", tmp_path / "bad", "llama_block.py")
    [item] = maps_of(bad, "llama-block", seed=1)["maps"]
    assert any(row[i + 1] > 0 for head in item["yours"] for i, row in enumerate(head[:-1]))
    assert torch.tensor(item["yours"]).shape == torch.tensor(item["reference"]).shape


def test_the_sink_line_is_drawn_only_where_a_row_leaves_a_share():
    from rich.console import Console

    from attn_drill.render.show import show

    full = [[[1.0, 0.0], [0.4, 0.6]]]
    sunk = [[[0.7, 0.0], [0.2, 0.3]]]
    for ref, said in ((full, False), (sunk, True)):
        out = Console(width=80, record=True, color_system=None)
        show(out, {"case": "c", "maps": [{"name": "weights", "yours": ref, "reference": ref, "note": ""}]}, "x",
             "f.py", 0)
        text = out.export_text()
        assert ("sink takes .30 .50" in text) is said and ("sink takes =" in text) is said


def _finding_with_picture():
    from attn_drill.report import Finding, Report, Stage

    yours = [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]
    expected = [[1.0, 0.0, 0.0], [0.2, 0.3, 0.5], [0.9, 0.1, 0.0]]
    pic = {"title": "weights (batch 0, head 1): rows = queries, columns = keys", "yours": yours,
           "expected": expected}
    f = Finding("mask-after-softmax", "error", "Mask applied after softmax", "why", "evidence", "fix", line=3,
                score=1.0, picture=pic)
    return Report("sdpa", "sdpa.py", 0, [Stage("values", "fail", "2 of 5 cases differ")], [f])


def test_a_notebooks_report_draws_a_findings_heatmaps_as_an_image(monkeypatch):
    pytest.importorskip("matplotlib")
    import base64
    import io
    import re

    from PIL import Image

    from attn_drill.notebook.result import CheckResult
    from attn_drill.render import png

    rep = _finding_with_picture()
    html = CheckResult(rep)._repr_html_()
    (data,) = re.findall(r'<img alt="heatmaps" src="data:image/png;base64,([^"]+)">', html)
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    assert image.format == "PNG" and image.size[0] > 1.5 * image.size[1] > 300  # two maps side by side
    # the differing cells of yours are boxed: rows 0 and 2 (four cells), never row 1
    boxed = []
    monkeypatch.setattr("matplotlib.axes.Axes.add_patch", lambda ax, p: boxed.append(p.get_xy()))
    png.finding_picture(rep.findings[0].picture)
    assert sorted((round(x + 0.5), round(y + 0.5)) for x, y in boxed) == [(0, 0), (0, 2), (1, 0), (1, 2)]
    rep.findings[0].picture = None  # no picture: no image, the report alone
    assert "<img" not in CheckResult(rep)._repr_html_()


def test_without_matplotlib_a_notebooks_report_has_its_text_heatmaps_only(monkeypatch):
    import importlib.util

    from attn_drill.notebook.result import CheckResult

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    html = CheckResult(_finding_with_picture())._repr_html_()
    assert "<img" not in html and "expected" in html  # the text heatmap's header
