"""`attn-drill explain`: questions about the user's own passing file.

- the symbol language: typed shapes read back into sizes, --answers;
- for every model answer and the correct corpus files in other styles (einsum, per-head loops, helpers,
  comprehensions): every question's line is in the file, and each shape answer is what the line's value
  really is: read from the running code's own frames under sys.settrace, independently of the tracer;
- the command: --json, --answers scoring, a failing file refused, no terminal and no --answers refused;
- the round in the history and in stats.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from attn_drill import catalogue
from attn_drill.practice import explain, stats
from attn_drill.store import history

ROOT = Path(__file__).parent.parent
CORPUS = Path(__file__).parent / "corpus"
MODEL_ANSWERS = [(ROOT / "reference" / ex.file, ex.id) for ex in catalogue.exercises().values()]
ALL_STYLES = [(p, p.parent.name) for p in sorted(CORPUS.glob("*/ok__*.py"))]
# by default two correct files of each exercise (blind ones first: written without this code in view); -m slow: all
OTHER_STYLES = [(p, e) for e in sorted({e for _, e in ALL_STYLES})
                for p in sorted((p for p, x in ALL_STYLES if x == e), key=lambda p: "blind" not in p.name)[:2]]
MORE_STYLES = [c for c in ALL_STYLES if c not in OTHER_STYLES]


# -- the symbol language --------------------------------------------------------------------------------------
SYMBOLS = {"B": 2, "H": 3, "Tq": 5, "Tk": 7, "d": 4, "D": 12}


@pytest.mark.parametrize("typed", ["B H Tq Tk", "(B, H, Tq, Tk)", "[b,h,tq,tk]", "B,H , Tq,Tk", " b  h  TQ TK "])
def test_a_shape_may_be_typed_many_ways(typed):
    assert explain.read_shape(typed, SYMBOLS) == [2, 3, 5, 7]


def test_products_sums_and_halves_read_back_as_sizes():
    assert explain.read_shape("B Tq D", SYMBOLS) == explain.read_shape("B Tq H*d", SYMBOLS) == [2, 5, 12]
    assert explain.read_shape("B Tq H * d", SYMBOLS) == [2, 5, 12]  # spaces around an operator are one axis
    assert explain.read_shape("B*H Tq d/2 1", SYMBOLS) == [6, 5, 2, 1]
    cache = {"B": 3, "Hkv": 5, "T_past": 9, "T_new": 7, "d": 12}
    assert explain.read_shape("B Hkv T_past + T_new d", cache) == [3, 5, 16, 12]
    assert explain.read_shape("b hkv t_past+t_new d", cache) == [3, 5, 16, 12]


def test_d_and_D_stay_apart_and_unknown_symbols_are_not_read():
    assert explain.read_shape("B Tq d", SYMBOLS) == [2, 5, 4]
    assert explain.read_shape("B Tq D", SYMBOLS) == [2, 5, 12]
    assert explain.read_shape("B Tq Q", SYMBOLS) is None
    assert explain.read_shape("", SYMBOLS) is None
    assert explain.read_shape("B Tq d/3", SYMBOLS) is None  # not a whole number
    assert explain.read_shape("B Tq Tk", {"B": 2, "T": 5}) == [2, 5, 5]  # self-attention: Tq and Tk are T


def test_sizes_are_named_by_symbols_then_literals_then_derived_names():
    gqa = {"B": 2, "H": 12, "Hkv": 3, "T": 5, "d": 7, "D": 84}
    assert explain.symbolic([2, 12, 5, 5], gqa) == ["B", "H", "T", "T"]
    assert explain.symbolic([2, 5, 21], gqa) == ["B", "T", "Hkv*d"]
    assert explain.symbolic([2, 3, 4, 5, 7], gqa) == ["B", "Hkv", "H/Hkv", "T", "d"]
    fused = {"B": 4, "H": 5, "T": 6, "d": 7, "D": 35}
    assert explain.symbolic([4, 6, 105], fused) == ["B", "T", "3*D"]
    assert explain.symbolic([4, 6, 3, 5, 7], fused) == ["B", "T", "3", "H", "d"]  # the literal 3 of q|k|v
    rope = {"B": 4, "H": 5, "T": 6, "d": 16}
    assert explain.symbolic([4, 5, 6, 8, 2], rope) == ["B", "H", "T", "d/2", "2"]
    cache = {"B": 3, "H": 20, "Hkv": 5, "d": 12, "D": 240, "T_past": 9, "T_new": 7}
    assert explain.symbolic([3, 5, 16, 12], cache) == ["B", "Hkv", "T_past+T_new", "d"]


def test_answers_for_scripts():
    assert explain.parse_answers("B H T d,2,1") == ["B H T d", "2", "1"]
    assert explain.parse_answers("(B, H, T, d); 2; 1") == ["(B, H, T, d)", "2", "1"]
    assert explain.parse_answers(None) is None
    for bad in ("1,x", "0", "1,,2", "B H Q"):
        with pytest.raises(ValueError):
            explain.parse_answers(bad)


def test_grading_choices_count_from_one_and_shapes_by_size():
    choice = {"kind": "cost", "choices": ["a", "b", "c"], "answer": 1, "prompt": "?"}
    assert explain.is_right(choice, "2") and not explain.is_right(choice, "1") and not explain.is_right(choice, None)
    shape = {"kind": "shape", "choices": None, "answer": "B Tq D", "shape": [2, 5, 12], "symbols": SYMBOLS}
    assert explain.is_right(shape, "B Tq H*d") and explain.is_right(shape, "(b, tq, D)")
    assert not explain.is_right(shape, "B Tq d") and not explain.is_right(shape, "2")
    assert explain.truth(shape) == "(B, Tq, D) = (2, 5, 12)" and explain.truth(choice) == "2) b"


def test_which_value_a_line_is_asked_about():
    source = "\n".join([
        "def f(x, mask):",
        "    q, k, v = x.chunk(3, -1)",  # one call: its last tensor is v's
        "    a, b = x.sum(), x",  # a tuple: the last value with a call of its own
        "    m, _ = x.max(-1, keepdim=True)",
        "    s = (q @ k.T", "         / 2)",  # two lines, one statement
        "    for h in range(3):",
        "        s += 1",
        "    return s @ v, s",
        "    return s",
    ])
    st = explain.statements(source)
    assert [st[n].what for n in (2, 3, 4, 5, 8, 9, 10)] == [
        "v", "a", "m", "s", "s", "the first value it returns", "what it returns"]
    assert st[6] == st[5] and (st[5].first, st[5].last) == (5, 6)
    assert st[7].what is None  # a loop's header
    assert explain.code_of(source.splitlines(), (5, 6)) == "s = (q @ k.T / 2)"


def test_a_value_that_comes_back_from_a_helper_is_not_the_lines_own():
    ops = [explain.Op(*o) for o in [
        [10, 1, "linear", [2, 5, 12], "float64", None],  # line 10 calls a helper...
        [3, 2, "view", [2, 5, 3, 4], "float64", None],  # ...whose lines run deeper
        [4, 2, "transpose", [2, 3, 5, 4], "float64", None],
        [11, 1, "matmul", [2, 3, 5, 5], "float64", None],
        [12, 1, "getitem", [2, 5], "float64", None], [12, 2, "reshape", [2, 5], "float64", None],  # comprehension
    ]]
    runs = {e.stmt: e for e in explain.executions(ops, {})}
    assert runs[10].tail_nested and not runs[3].tail_nested and not runs[11].tail_nested
    assert not runs[12].tail_nested and [o.name for o in runs[12].ops] == ["getitem", "reshape"]


# -- every model answer and the other correct styles ----------------------------------------------------------
@pytest.fixture
def in_process(tmp_path):
    """The trace runs here (judge/explain.py arms the audit hook for the file, as the worker does); disarmed after."""
    from attn_drill.judge import audit
    from attn_drill.judge.specs.base import load_references

    yield
    audit.arm(tmp_path / "nobody.py", load_references())
    audit.take()


def traced(path: Path, exercise: str, seed: int) -> tuple[dict, list[dict]]:
    from attn_drill.judge import explain as judge_explain

    trace = judge_explain.run(path, exercise, seed)
    assert "error" not in trace, trace
    source = path.read_text()
    questions = explain.from_trace(trace, source, seed)
    return trace, questions + explain.top_up(questions, exercise, seed)  # the round the user gets


def values_in_frames(path: Path, exercise: str, seed: int, q: dict) -> list:
    """The shape of what the question's statement assigned (or returned), each time it ran in the first call that
    ran it: read from the frames under sys.settrace, not from the tracer."""
    import importlib.util

    import torch

    from attn_drill.judge import explain as judge_explain
    from attn_drill.judge.specs import SPECS

    stmt = explain.statements(path.read_text())[q["line"]]
    spec_ = importlib.util.spec_from_file_location(f"explain_oracle_{path.stem}", path)
    module = importlib.util.module_from_spec(spec_)
    sys.path.insert(0, str(path.parent))
    try:
        spec_.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    target, bad = SPECS[exercise].resolve(module)
    assert bad is None
    setup = judge_explain.SETUPS[exercise](SPECS[exercise], torch.Generator().manual_seed(seed))
    inside: dict = {}
    seen: list = []

    def read(frame, event, arg):
        if stmt.what == "what it returns" or stmt.what.startswith("the "):
            if event != "return" or frame.f_code.co_name.startswith("<"):
                return
            if stmt.what.startswith("the "):
                arg = arg[("first", "second", "third", "fourth").index(stmt.what.split()[1])]
            seen.append(tuple(arg.shape) if isinstance(arg, torch.Tensor) else None)
        elif stmt.what in frame.f_locals and not frame.f_code.co_name.startswith("<"):
            value = frame.f_locals[stmt.what]
            seen.append(tuple(value.shape) if isinstance(value, torch.Tensor) else None)

    def local(frame, event, arg):
        if event in ("line", "return"):
            here = event == "line" and stmt.first <= frame.f_lineno <= stmt.last
            if inside.get(id(frame)) and not here:
                read(frame, event, arg)
            inside[id(frame)] = here
        return local

    def trace(frame, event, arg):
        return local if frame.f_code.co_filename == str(path) else None

    for _, prepare in setup.calls:
        call = prepare(target)
        sys.settrace(trace)
        try:
            with torch.no_grad():
                call()
        finally:
            sys.settrace(None)
        if seen:
            return seen
    return seen


def check_round(path: Path, exercise: str, seed: int = 0) -> list[dict]:
    trace, questions = traced(path, exercise, seed)
    lines = path.read_text().splitlines()
    assert 3 <= len(questions) <= explain.MAX_QUESTIONS, questions
    for q in questions:
        assert explain.well_formed(q), q
        if q["line"] is None:
            continue  # a bank question that tops up a short file
        assert 1 <= q["line"] <= len(lines)
        first, code = explain._strip_comment(lines[q["line"] - 1]), q["code"].rstrip("…").rstrip()
        assert code and (first.startswith(code) or code.startswith(first)), (q, first)  # the line, as in the file
        if q["kind"] == "shape":
            assert explain.read_shape(q["answer"], q["symbols"]) == q["shape"], q
            assert values_in_frames(path, exercise, seed, q) and set(values_in_frames(path, exercise, seed, q)) == {
                tuple(q["shape"])}, (path.name, q["line"], q["code"])
    assert any(q["kind"] == "shape" for q in questions)
    return questions


@pytest.mark.parametrize("path, exercise", MODEL_ANSWERS, ids=[e for _, e in MODEL_ANSWERS])
def test_every_model_answer_gets_questions_on_its_own_lines(in_process, path, exercise):
    questions = check_round(path, exercise)
    assert {"shape", "cost"} <= {q["kind"] for q in questions} or exercise == "softmax"


@pytest.mark.parametrize("path, exercise", OTHER_STYLES, ids=[f"{e}/{p.stem}" for p, e in OTHER_STYLES])
def test_correct_files_in_other_styles_get_questions_on_their_own_lines(in_process, path, exercise):
    check_round(path, exercise, seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("path, exercise", MORE_STYLES, ids=[f"{e}/{p.stem}" for p, e in MORE_STYLES])
def test_every_other_correct_file_gets_questions_on_its_own_lines(in_process, path, exercise):
    check_round(path, exercise, seed=3)


def test_the_lines_that_matter_are_asked_about(in_process):
    """The scores, the head split and the merge, with the traced shapes in symbols; a cost worked out."""
    path = ROOT / "reference" / "mha.py"
    answers = {}
    for seed in range(6):
        _, questions = traced(path, "mha", seed)
        answers.update({q["code"].split(" =")[0]: q["answer"] for q in questions if q["kind"] == "shape"})
    assert answers["scores"] == "B H Tq Tk" and answers["y"] == "B Tq D"
    assert {answers.get("q"), answers.get("k"), answers.get("v")} & {"B H Tq d", "B H Tk d"}
    _, questions = traced(path, "mha", 0)
    cost = next(q for q in questions if q["kind"] == "cost")
    assert cost["choices"][cost["answer"]] == "1 GiB" and "32 x 4096 x 4096" in cost["explain"]
    _, questions = traced(ROOT / "reference" / "kv_cache.py", "kv-cache", 0)
    cache = [q for q in questions if "T_past+T_new" in str(q.get("answer"))]
    assert cache, questions


def test_the_questions_replay_with_the_seed(in_process):
    path = ROOT / "reference" / "gqa.py"
    assert traced(path, "gqa", 5)[1] == traced(path, "gqa", 5)[1]


def test_whats_breaks_questions_are_taken_in_the_shared_format(in_process):
    trace, _ = traced(ROOT / "reference" / "sdpa.py", "sdpa", 0)
    breaks = [{"kind": "breaks", "line": 18, "code": "scores = ...", "prompt": "What breaks if you drop it?",
               "choices": ["a", "b", "c", "d"], "answer": 2, "explain": "the checker named missing-scale"},
              {"kind": "breaks", "prompt": "malformed", "choices": ["a"], "answer": 7}]
    questions = explain.from_trace(trace, (ROOT / "reference" / "sdpa.py").read_text(), 0, breaks)
    asked = [q for q in questions if q["kind"] == "breaks"]
    assert len(asked) == 1 and asked[0]["prompt"] == "What breaks if you drop it?"
    assert len(questions) <= explain.MAX_QUESTIONS


# -- the command --------------------------------------------------------------------------------------------
def start_with(run_script, work: Path, exercise: str, source: Path) -> Path:
    assert run_script("start", exercise).returncode == 0
    target = work / "attn-practice" / catalogue.get(exercise).file
    shutil.copyfile(source, target)
    return target


def test_explain_json_then_answers_are_scored_recorded_and_in_stats(isolated, run_script):
    start_with(run_script, isolated, "sdpa", ROOT / "reference" / "sdpa.py")
    r = run_script("explain", "--json", "--seed", "7")
    assert r.returncode == 0, r.stderr
    round_ = json.loads(r.stdout)
    qs = round_["questions"]
    assert round_["exercise"] == "sdpa" and 4 <= len(qs) <= 5 and round_["symbols"]["Tk"] == 7
    lines = (isolated / "attn-practice" / "sdpa.py").read_text().splitlines()
    for q in qs:
        assert q["line"] is None or 1 <= q["line"] <= len(lines)
        if q["kind"] == "shape":
            assert explain.read_shape(q["answer"], round_["symbols"]) == q["shape"]
    assert not history.explains()  # questions printed, nothing answered: nothing recorded

    # the first answered right, the others wrong; the same seed asks the same questions
    answers = [str(qs[0]["answer"])] + [wrong(q) for q in qs[1:]]
    r = run_script("explain", "sdpa", "--json", "--seed", "7", "--answers", ";".join(answers))
    assert r.returncode == 0, r.stderr
    scored = json.loads(r.stdout)
    assert [q["prompt"] for q in scored["questions"]] == [q["prompt"] for q in qs]
    assert [q["right"] for q in scored["questions"]] == [True] + [False] * (len(qs) - 1)
    assert (scored["right"], scored["total"]) == (1, len(qs))
    (row,) = history.explains()
    assert (row["exercise"], row["source"], row["right"], row["total"]) == ("sdpa", "explain", 1, len(qs))
    kinds = {k["kind"]: k for k in json.loads(run_script("stats", "--json").stdout)["explain"]["kinds"]}
    assert sum(k["missed"] for k in kinds.values()) == len(qs) - 1
    assert kinds[qs[0]["kind"]]["asked"] > kinds[qs[0]["kind"]]["missed"]
    shown = run_script("stats").stdout
    assert "Explaining your own code (1 round, 1 of" in shown and "what you miss" in shown
    assert max(map(len, shown.splitlines())) <= 80


@pytest.mark.parametrize("source", [CORPUS / "sdpa" / "ok__helpers.py", CORPUS / "gqa" / "ok__loop_over_query_heads.py",
                                    CORPUS / "mha-fused" / "ok__einsum_chunk.py"], ids=lambda p: p.stem)
def test_explain_json_on_other_styles_gives_the_shapes_the_code_really_makes(isolated, run_script, in_process,
                                                                             source):
    exercise = source.parent.name
    mine = start_with(run_script, isolated, exercise, source)
    r = run_script("explain", "--json", "--seed", "11")
    assert r.returncode == 0, r.stderr
    qs = json.loads(r.stdout)["questions"]
    lines = mine.read_text().splitlines()
    assert 4 <= len(qs) <= 5 and all(q["line"] is None or 1 <= q["line"] <= len(lines) for q in qs)
    shapes = [q for q in qs if q["kind"] == "shape"]
    assert shapes
    for q in shapes:  # what the running code's own frames hold for that line
        assert set(values_in_frames(mine, exercise, 11, q)) == {tuple(q["shape"])}, q


def wrong(q: dict) -> str:
    if q["choices"]:
        return str(q["answer"] % len(q["choices"]) + 1)
    return "B H Tq Tq" if q["answer"] != "B H Tq Tq" else "B H Tk Tk"


def test_plain_answers_are_explained_at_once_within_80_columns(isolated, run_script):
    start_with(run_script, isolated, "softmax", ROOT / "reference" / "softmax.py")
    r = run_script("explain", "--seed", "1", "--answers", "B H Tq 1;2;1;1;1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("(from --answers)") >= 4 and "why: " in r.stdout
    assert "Explained " in r.stdout and max(map(len, r.stdout.splitlines())) <= 80


def test_too_few_answers_are_a_usage_error_and_nothing_is_scored(isolated, run_script):
    """As in mock: answers are held to the questions before the first is scored."""
    start_with(run_script, isolated, "sdpa", ROOT / "reference" / "sdpa.py")
    r = run_script("explain", "--seed", "7", "--answers", "1")
    assert r.returncode == 2 and "1 answer given; this round asks" in r.stderr, r.stderr
    assert "nothing was scored" in r.stderr and "Explained" not in r.stdout
    assert not history.explains()


def test_a_failing_file_is_refused_in_one_line(isolated, run_script):
    start_with(run_script, isolated, "sdpa", CORPUS / "sdpa" / "missing-scale__no_div.py")
    r = run_script("explain", "--json")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "sdpa.py does not pass yet (missing-scale)" in r.stderr
    assert not history.explains()


def test_without_a_terminal_it_needs_answers_or_json(isolated, run_script):
    r = run_script("explain", "sdpa")
    assert r.returncode == 2 and "--answers" in r.stderr and "--json" in r.stderr
    r = run_script("explain", "sdpa", "--answers", "B H Q")
    assert r.returncode == 2 and "--answers" in r.stderr


# -- the history and stats ------------------------------------------------------------------------------------
def test_rounds_are_kept_and_stats_says_which_kinds_are_missed():
    history.record_explain("mha", [{"kind": "shape", "line": 30, "right": True},
                                   {"kind": "shape", "line": 34, "right": False},
                                   {"kind": "cost", "line": 34, "right": False}], file="mha.py", seed=1)
    history.record_explain("mha", [{"kind": "concept", "line": 38, "right": True},
                                   {"kind": "breaks", "line": 37, "right": False}], source="mock", mock="m1")
    rows = history.explains()
    assert [(r["source"], r["right"], r["total"]) for r in rows] == [("explain", 1, 3), ("mock", 1, 2)]
    e = stats.compute()["explain"]
    assert (e["rounds"], e["right"], e["total"]) == (2, 2, 5)
    assert [(k["kind"], k["asked"], k["missed"]) for k in e["kinds"]] == [
        ("breaks", 1, 1), ("cost", 1, 1), ("shape", 2, 1), ("concept", 1, 0)]
