"""The "What breaks if you ...?" questions (attn_drill/practice/mutants.py).

mutants() on small sources: each kind is found, the mutant parses, only the named line changes. what_breaks()
on the model answers: every answer is the first finding of a fresh `check` of that very mutant, and no asked
mutant passes. The exhaustive variant (every reference and corpus styles, every distinct verdict) is slow.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from attn_drill import catalogue, findings, paths
from attn_drill.practice import mutants as mut
from attn_drill.process import runner
from attn_drill.process.warm import WarmPool
from attn_drill.report import Report, Stage

CORPUS = Path(__file__).parent / "corpus"


def changed_lines(a: str, b: str) -> list[int]:
    la, lb = a.split("\n"), b.split("\n")
    assert len(la) == len(lb), "a mutant keeps the number of lines"
    return [i + 1 for i, (x, y) in enumerate(zip(la, lb)) if x != y]


def only(source: str, kind: str) -> list[mut.Mutant]:
    return [m for m in mut.mutants(source) if m.kind == kind]


def line_of(m: mut.Mutant) -> str:
    return m.source.split("\n")[m.line - 1].strip()


# -- mutants(): each kind ----------------------------------------------------------------------------------

KINDS = [
    # (kind, source, the mutated line as expected, words in `what`)
    ("unsqueeze", "def f(mask):\n    mask = mask.unsqueeze(1)\n    return mask\n", "mask = mask", "unsqueeze(1)"),
    ("unsqueeze", "import torch\ndef f(m):\n    return torch.unsqueeze(m, 1)\n", "return m", "unsqueeze(1)"),
    ("unsqueeze", "def f(l, t):\n    return t < l[:, None]\n", "return t < l", "[:, None]"),
    ("unsqueeze", "def f(l):\n    return l[..., None, :]\n", "return l", "[..., None, :]"),
    ("scale", "import math\ndef f(q, k, d):\n    s = q @ k / math.sqrt(d)\n    return s\n", "s = q @ k", "division"),
    ("scale", "def f(q, k, d):\n    return q @ k * d ** -0.5\n", "return q @ k", "d ** -0.5"),
    ("scale", "def f(self, s):\n    return self.scale * s\n", "return s", "self.scale"),
    ("scale", "import math\ndef f(s, d):\n    s /= math.sqrt(d)\n    return s\n", "pass", "s /= math.sqrt(d)"),
    ("scale", "import math\ndef f(s, d):\n    return s.div(math.sqrt(d))\n", "return s", ".div(math.sqrt(d))"),
    ("transpose", "def f(y, B, T, D):\n    return y.transpose(1, 2).reshape(B, T, D)\n", "return y.reshape(B, T, D)",
     "transpose(1, 2)"),
    ("transpose", "def f(y, B, T, D):\n    return y.permute(0, 2, 1, 3).contiguous().view(B, T, D)\n",
     "return y.contiguous().view(B, T, D)", "permute(0, 2, 1, 3)"),
    ("transpose", "def f(q, k):\n    return q @ k.transpose(-2, -1)\n", "return q @ k", "transpose(-2, -1)"),
    ("transpose", "import torch\ndef f(q, k):\n    return torch.matmul(q, k.mT)\n", "return torch.matmul(q, k)", ".mT"),
    ("dim", "import torch\ndef f(s):\n    return torch.softmax(s, dim=-1)\n", "return torch.softmax(s, dim=-2)",
     "dim=-2 instead of dim=-1"),
    ("dim", "import torch.nn.functional as F\ndef f(s):\n    return F.softmax(s, -1)\n", "return F.softmax(s, -2)",
     "in the softmax"),
    ("dim", "def f(e):\n    return e / e.sum(-2, keepdim=True)\n", "return e / e.sum(-1, keepdim=True)", "in the sum"),
    ("dim", "import torch\ndef f(x):\n    return torch.logsumexp(x, dim=1)\n", "return torch.logsumexp(x, dim=0)",
     "logsumexp"),
    ("repeat", "def f(k, g):\n    k = k.repeat_interleave(g, dim=1)\n    return k\n", "k = k.repeat(1, g, 1, 1)",
     "repeat(1, g, 1, 1) instead of repeat_interleave(g, dim=1)"),
    ("repeat", "import torch\ndef f(k, g):\n    return torch.repeat_interleave(k, g, dim=-2)\n",
     "return k.repeat(1, 1, g, 1)", "repeat(1, 1, g, 1)"),
    ("mask", "def f(s, mask):\n    return s.masked_fill(~mask, -1e9)\n", "return s.masked_fill(mask, -1e9)",
     "mask instead of ~mask"),
    ("mask", "def f(s, mask):\n    return s.masked_fill(mask == 0, -1e9)\n", "return s.masked_fill(mask != 0, -1e9)",
     "mask != 0 instead of mask == 0"),
    ("mask", "def f(s, hide):\n    return s.masked_fill(hide, -1e9)\n", "return s.masked_fill(~hide, -1e9)",
     "~hide instead of hide"),
    ("mask", "import torch\ndef f(s, keep):\n    return torch.where(keep, s, -1e9)\n",
     "return torch.where(~keep, s, -1e9)", "~keep"),
    ("fill", "def f(s, m):\n    return s.masked_fill(~m, float('-inf'))\n", "return s.masked_fill(~m, 0.0)",
     "0.0 instead of float('-inf')"),
    ("fill", "import torch\ndef f(s, m):\n    return s.masked_fill(~m, torch.finfo(s.dtype).min)\n",
     "return s.masked_fill(~m, 0.0)", "torch.finfo(s.dtype).min"),
    ("fill", "import math, torch\ndef f(s, m):\n    return torch.where(m, s, -math.inf)\n",
     "return torch.where(m, s, 0.0)", "-math.inf"),
    ("max", "import torch\ndef f(x):\n    m = x.amax(-1, keepdim=True)\n    return torch.exp(x - m)\n",
     "return torch.exp(x)", "max subtraction (- m)"),
    ("max", "def f(x):\n    return (x - x.max(dim=-1, keepdim=True).values).exp()\n", "return (x).exp()",
     "max subtraction"),
]


@pytest.mark.parametrize("kind, source, expected, words", KINDS, ids=[f"{k[0]}-{i}" for i, k in enumerate(KINDS)])
def test_each_kind_is_found_on_its_line(kind, source, expected, words):
    found = only(source, kind)
    assert found, f"no {kind} mutant in:\n{source}"
    m = next((m for m in found if line_of(m) == expected), None)
    assert m is not None, [line_of(m) for m in found]
    assert words in m.what and m.what.endswith(f"on line {m.line}"), m.what
    ast.parse(m.source)
    assert changed_lines(source, m.source) == [m.line] == list(m.lines)


def test_repeat_changes_k_and_v_together_and_names_both_lines():
    source = ("def f(k, v, g):\n"
              "    k = k.repeat_interleave(g, dim=1)\n"
              "    v = v.repeat_interleave(g, dim=1)\n"
              "    return k, v\n")
    [m] = only(source, "repeat")
    assert changed_lines(source, m.source) == [2, 3] == list(m.lines) and m.line == 2
    assert m.what.endswith("on lines 2 and 3")


def test_a_dim_argument_is_ignored_everywhere_at_once():
    source = ("import torch\n"
              "def softmax(x, dim=-1):\n"
              "    e = torch.exp(x - x.amax(dim=dim, keepdim=True))\n"
              "    return e / e.sum(dim=dim, keepdim=True)\n")
    [m] = only(source, "dim-arg")
    assert changed_lines(source, m.source) == [3, 4]
    assert "dim=-1 instead of dim=dim" in m.what


def test_what_is_not_a_mutation_is_left_alone():
    source = ("import torch\n"
              "def f(x, mask, a, b, dim):\n"
              "    assert a % b == 0\n"  # == 0 outside a mask test
              "    x = torch.max(x, a)\n"  # an elementwise max: its second argument is a tensor
              "    y = x.repeat_interleave(2)\n"  # no dim: flattens, repeat has no such form
              "    z = x.masked_fill(mask, 0.0)\n"  # a fill that is not very negative
              "    w = x.transpose(1, 2)\n"  # a transpose whose result goes nowhere special
              "    r = a / b\n"  # a division that is no scale
              "    m = x.amax(-1, keepdim=True)\n"
              "    n = m - m.amax()\n"  # a max minus a max is a rescale, not the stabilising shift
              "    return x, y, z, w, r, n\n")
    kinds = {(m.kind, m.line) for m in mut.mutants(source)}
    assert not {line for _, line in kinds} & {3, 4, 5, 7, 8, 10}, kinds
    assert ("mask", 6) in kinds and ("dim", 9) in kinds  # the mask test and the amax's dim are mutations


def test_replacements_keep_precedence_and_non_ascii_columns():
    source = "def f(a, b, mask):\n    s = 'é' + str(~(a | b) & mask)\n    return s\n"
    [m] = only(source, "mask")
    assert line_of(m) == "s = 'é' + str((a | b) & mask)"
    source = "import math\ndef f(q, k, d):\n    return -q @ k / math.sqrt(d)\n"
    [m] = only(source, "scale")
    assert ast.dump(ast.parse(line_of(m))) == ast.dump(ast.parse("return -q @ k"))
    source = "def f(a, b, scale):\n    return (a + b * scale).sum()\n"
    [m] = only(source, "scale")
    assert ast.dump(ast.parse(line_of(m))) == ast.dump(ast.parse("return (a + b).sum()"))


def test_a_file_that_does_not_parse_has_no_mutants_and_mutants_are_distinct():
    assert mut.mutants("def f(:\n") == []
    source = (CORPUS / "mha" / "ok__reshape_transpose_neg_inf.py").read_text(encoding="utf-8")
    found = mut.mutants(source)
    assert len({m.source for m in found}) == len(found) and len(found) >= 6
    for m in found:
        ast.parse(m.source)
        assert changed_lines(source, m.source) == list(m.lines) and m.line == m.lines[0]


@pytest.mark.parametrize("name", ["sdpa", "mha", "mha_fused", "gqa", "softmax", "flash", "kv_cache", "masks", "rope",
                                  "self_attention", "mha_dims", "relative_position"])
def test_every_model_answer_has_mutants_that_parse(name):
    source = (Path(paths.REFERENCE) / f"{name}.py").read_text(encoding="utf-8")
    found = mut.mutants(source)
    assert found
    for m in found:
        ast.parse(m.source)
        assert changed_lines(source, m.source) == list(m.lines)


def test_the_mutants_module_imports_no_torch():
    code = "import sys, attn_drill.practice.mutants; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- the questions, from made-up reports (no checker) ------------------------------------------------------

def report(*findings_):
    r = Report("mha", "mha.py", 0, stages=[Stage("values", "fail")], findings=list(findings_))
    r.sort_findings()
    return r


def test_choice_text_is_the_title_an_error_type_or_the_contract_s_consequence():
    assert mut.choice_text("exception", "Your code raised RuntimeError") == "an error: RuntimeError"
    assert mut.choice_text("missing-scale", "Scores are not divided by sqrt(d)") == "Scores are not divided by sqrt(d)"
    broadcast = mut.choice_text("mask-head-broadcast", findings.WORDING["mask-head-broadcast"][1])
    assert broadcast.endswith("silently wrong when B == H, an error otherwise")


@pytest.mark.parametrize("exercise", sorted(p.name for p in CORPUS.iterdir()))
def test_every_mistake_the_corpus_names_is_a_wrong_choice_of_its_exercise(exercise):
    """The distractors come from the catalogue's mistakes: a slug the checker names on this exercise belongs
    there, and each reads as a choice (titles with a parameter get its most common value)."""
    named = {s for f in (CORPUS / exercise).iterdir() for s in f.name.split("__")[0].split("+")}
    values = {s for s in named if not s.startswith("ok") and s not in mut.NOT_A_CHOICE} - mut.GENERIC
    assert values <= set(mut.plausible(exercise)), values - set(mut.plausible(exercise))
    for slug in mut.plausible(exercise):
        assert "{" not in mut._slug_choice(slug), slug


def test_a_question_has_four_distinct_choices_and_no_true_finding_among_the_wrong_ones():
    m = mut.Mutant(3, "drop the unsqueeze(1) on line 3", "a\nb\nmask = mask\n", "unsqueeze", (3,))
    rep = report(findings.make("mask-head-broadcast", "reproduces your outputs", score=1.0),
                 findings.make("exception", "raises when B != H", score=0.9, type="RuntimeError"))
    for seed in range(20):
        q = mut._question(m, rep, "mha", "a\nb\nmask = mask.unsqueeze(1)\n", ["missing-scale"], random.Random(seed))
        assert q["kind"] == "breaks" and q["line"] == 3 and q["code"] == "mask = mask.unsqueeze(1)"
        assert q["prompt"] == "What breaks if you drop the unsqueeze(1) on line 3?"
        assert len(q["choices"]) == len(set(q["choices"])) == 4
        assert q["choices"][q["answer"]] == mut.choice_text("mask-head-broadcast", rep.findings[0].title)
        assert "an error: RuntimeError" not in q["choices"]  # it does raise when B != H: not a wrong answer
        assert "Scores are not divided by sqrt(d)" in q["choices"]  # another mutant's verdict comes first
        assert q["explain"].startswith("the checker named mask-head-broadcast: ")


def test_the_order_is_fixed_by_the_seed_and_takes_each_kind_in_turn():
    source = (Path(paths.REFERENCE) / "gqa.py").read_text(encoding="utf-8")
    found = mut.mutants(source)
    a, b = mut._order(found, 7), mut._order(found, 7)
    assert [m.what for m in a] == [m.what for m in b]
    kinds = {m.kind for m in found}
    assert {m.kind for m in a[:len(kinds)]} == kinds
    assert len({tuple(m.what for m in mut._order(found, s)) for s in range(10)}) > 1


def test_pick_prefers_different_named_mistakes_to_symptoms():
    def p(slug, line):
        extra = {"type": "RuntimeError"} if slug == "exception" else {}
        return (mut.Mutant(line, "x", "", "k", (line,)), report(findings.make(slug, "", score=1.0, **extra)))

    picked = [p("exception", 1), p("missing-scale", 2), p("missing-scale", 3), p("mask-inverted", 4)]
    chosen = mut._pick(picked, 2)
    assert [m.line for m, _ in chosen] == [2, 4]
    assert [m.line for m, _ in mut._pick(picked[:3], 3)] == [1, 2, 3]


# -- what_breaks against the checker -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def checker():
    """A warm server of the tests' own: each check a fresh forked process, as in `attn-drill check a.py b.py`.
    It warms up the four exercises every run asks about; the slow variant's others only pay a little more."""
    with WarmPool([e for e, _ in REFERENCES]) as pool:
        yield pool


@pytest.fixture
def recheck(checker):
    """Checks the asked mutants again, apart from what_breaks' own server."""
    return checker.spawn


def assert_answers_are_the_checker_s(path: Path, exercise: str, seed: int, questions: list[dict], tmp: Path,
                                     spawn):
    """Each question's mutant, checked afresh (runner.run_checks, as `attn-drill check` does): it fails, and its
    first finding, as a choice, is the right answer."""
    source = path.read_text(encoding="utf-8")
    by_words = {(f"What breaks if you {m.what}?", line_of(m)): m for m in mut.mutants(source)}
    jobs = []
    for i, q in enumerate(questions):
        m = by_words[q["prompt"], q["mutated"]]
        assert q["line"] == m.line and q["code"] == source.split("\n")[m.line - 1].strip()
        assert len(set(q["choices"])) == 4 and 0 <= q["answer"] < 4
        (tmp / f"q{i}").mkdir()
        (tmp / f"q{i}" / path.name).write_text(m.source, encoding="utf-8")
        jobs.append(runner.Job(tmp / f"q{i}" / path.name, exercise))
    for q, rep in zip(questions, runner.run_checks(jobs, seed=seed, spawn=spawn)):
        assert not rep.passed, f"an asked mutant passes: {q['prompt']}"
        first = rep.to_dict()["findings"][0]  # what `check --json` shows first
        assert q["choices"][q["answer"]] == mut.choice_text(first["slug"], first["title"]), (q, first)
        assert q["slug"] == first["slug"]
        assert first["title"] in q["choices"][q["answer"]] or first["slug"] == "exception"


REFERENCES = [("sdpa", "sdpa.py"), ("mha", "mha.py"), ("gqa", "gqa.py"), ("softmax", "softmax.py"),
              ("self-attention", "self_attention.py"), ("mha-dims", "mha_dims.py"),
              ("relative-position", "relative_position.py")]


# three by default (a function, a module, grouped heads); the rest with -m slow
@pytest.mark.parametrize("exercise, file", [pytest.param(*r, marks=[] if r[0] in ("sdpa", "mha", "gqa")
                                                         else [pytest.mark.slow]) for r in REFERENCES])
def test_what_breaks_on_a_model_answer_asks_what_the_checker_names(exercise, file, tmp_path, recheck):
    path = Path(paths.REFERENCE) / file
    questions = mut.what_breaks(path, exercise, seed=3)
    assert 1 <= len(questions) <= 2
    assert len({q["slug"] for q in questions}) == len(questions), "different verdicts are preferred"
    assert_answers_are_the_checker_s(path, exercise, 3, questions, tmp_path, recheck)


def test_a_failing_file_gets_no_questions_and_a_caller_s_pool_is_used(tmp_path, checker):
    path = tmp_path / "sdpa.py"
    path.write_text((CORPUS / "sdpa" / "missing-scale__no_div.py").read_text(encoding="utf-8"), encoding="utf-8")
    assert mut.what_breaks(path, "sdpa", seed=1, pool=checker) == []
    assert checker.pids(), "the caller's pool stays open"


EXHAUSTIVE = REFERENCES + [
    ("mha-fused", "mha_fused.py"), ("kv-cache", "kv_cache.py"), ("flash", "flash.py"),
    ("mha", CORPUS / "mha" / "ok__permute_einsum.py"), ("mha", CORPUS / "mha" / "ok__helper_sdpa.py"),
    ("gqa", CORPUS / "gqa" / "ok__loop_over_query_heads.py"), ("sdpa", CORPUS / "sdpa" / "ok__manual_softmax.py"),
]


@pytest.mark.slow
@pytest.mark.parametrize("exercise, file", EXHAUSTIVE, ids=[str(f).split("/")[-1] for _, f in EXHAUSTIVE])
def test_every_distinct_verdict_is_the_checker_s(exercise, file, tmp_path, recheck):
    path = Path(file) if isinstance(file, Path) else Path(paths.REFERENCE) / file
    if isinstance(file, Path):  # a corpus file is checked under the exercise's own file name
        path = tmp_path / catalogue.get(exercise).file
        path.write_text(Path(file).read_text(encoding="utf-8"), encoding="utf-8")
    questions = mut.what_breaks(path, exercise, seed=11, limit=mut.MAX_CHECKED)
    assert questions
    (tmp_path / "again").mkdir()
    assert_answers_are_the_checker_s(path, exercise, 11, questions, tmp_path / "again", recheck)


def test_what_breaks_runs_each_mutant_where_the_file_runs_so_its_helpers_import(tmp_path, checker):
    """A file that imports a helper module of its own folder: its mutants import it too, so no question is
    answered by a ModuleNotFoundError (which would teach that the change breaks nothing but an import)."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "my_helpers.py").write_text("import math\n\n\ndef scale(d):\n    return 1 / math.sqrt(d)\n")
    text = (Path(paths.REFERENCE) / "sdpa.py").read_text()
    text = text.replace("import math\n", "from my_helpers import scale\n").replace(" / math.sqrt(d)", " * scale(d)")
    path = folder / "sdpa.py"
    path.write_text(text)
    questions = mut.what_breaks(path, "sdpa", seed=3, pool=checker)
    assert questions, "the file passes and has mutants to ask about"
    for q in questions:
        assert "ModuleNotFoundError" not in json.dumps(q), q
        assert q["slug"] != "exception", q
