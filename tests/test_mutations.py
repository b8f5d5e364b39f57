"""Property: whatever a correct solution is mutated into (a line deleted, two tokens swapped, a number
changed), `attn-drill check --json` ends in a verdict: exit 0 or 1, one valid JSON report per file, within
the time limit, and never a traceback or an internal error of attn-drill's own.

Each hypothesis example is a batch of mutants checked in one command (one worker, one torch import), so
the property costs a few runs. ATTN_DRILL_FUZZ_EXAMPLES=50 runs more batches.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import tokenize
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from attn_drill import findings, paths
from conftest import run_json_lines

BATCH = 10  # mutants per command
TIMEOUT = 4
LIMIT = 120.0  # seconds on the clock for any one file, a worker restart included: a guard against a wedged
# check, not a speed test (a busy machine may stretch --timeout on the clock, runner.LOADED)
NUMBERS = ["0", "1", "2", "-1", "0.5", "1e9", "-1e9", "1e-30", "3"]


def tokens(source: str) -> list[tuple[int, int, int]]:
    """(start, end, type) offsets of the NAME, OP and NUMBER tokens."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER) and tok.start[0] == tok.end[0]:
            a = starts[tok.start[0] - 1] + tok.start[1]
            out.append((a, a + len(tok.string), tok.type))
    return out


def mutation():
    return st.one_of(
        st.tuples(st.just("delete-line"), st.integers(0, 10_000)),
        st.tuples(st.just("swap-tokens"), st.integers(0, 10_000), st.integers(0, 10_000)),
        st.tuples(st.just("change-number"), st.integers(0, 10_000), st.sampled_from(NUMBERS)),
    )


def mutate(source: str, op: tuple) -> str:
    kind = op[0]
    if kind == "delete-line":
        lines = source.splitlines(keepends=True)
        code = [i for i, line in enumerate(lines) if line.strip()]
        del lines[code[op[1] % len(code)]]
        return "".join(lines)
    try:
        toks = tokens(source)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source  # an earlier mutation broke tokenizing: leave it broken
    if kind == "swap-tokens" and len(toks) > 1:
        (a1, b1, _), (a2, b2, _) = sorted([toks[op[1] % len(toks)], toks[op[2] % len(toks)]])
        if b1 <= a2:
            return source[:a1] + source[a2:b2] + source[b1:a2] + source[a1:b1] + source[b2:]
    if kind == "change-number":
        nums = [t for t in toks if t[2] == tokenize.NUMBER]
        if nums:
            a, b, _ = nums[op[1] % len(nums)]
            return source[:a] + op[2] + source[b:]
    return source


def check_batch(exercise: str, sources: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, src in enumerate(sources):
            files.append(Path(tmp) / f"mutant{i:02d}_{exercise.replace('-', '_')}.py")
            files[-1].write_text(src, encoding="utf-8")
        code, lines, stderr, total = run_json_lines(["check", *map(str, files), "--exercise", exercise, "--json",
                                                     "--timeout", str(TIMEOUT), "--seed", "0"], LIMIT)
    reports = [rep for rep, _ in lines]
    for i, (_, seconds) in enumerate(lines):
        assert seconds < LIMIT, f"a mutant took {seconds:.1f} s:\n{sources[i]}"
    assert code in (0, 1), f"exit {code}; stderr:\n{stderr}"
    assert "Traceback" not in stderr, stderr
    assert len(reports) == len(sources), f"{len(reports)} reports for {len(sources)} files; stderr:\n{stderr}"
    for src, rep in zip(sources, reports):
        slugs = [f["slug"] for f in rep["findings"]]
        assert isinstance(rep["passed"], bool) and rep["stages"], rep
        assert all(s in findings.WORDING for s in slugs), slugs
        assert "internal-error" not in slugs, f"{rep['findings']}\nfor the mutant:\n{src}"
        assert rep["passed"] or any(f["level"] == "error" for f in rep["findings"]), f"a failure with no reason: {rep}"
        text = json.dumps(rep)
        assert "attn_drill/" not in text and "Traceback" not in text, f"{text}\nfor the mutant:\n{src}"
    assert total < LIMIT * len(sources)


FUZZ = settings(max_examples=int(os.environ.get("ATTN_DRILL_FUZZ_EXAMPLES", 2)), deadline=None, database=None,
                phases=[Phase.explicit, Phase.generate],  # no shrinking: each example is a whole batch
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("exercise", ["sdpa", pytest.param("mha", marks=pytest.mark.slow)])  # mha: -m slow
@FUZZ
@given(batch=st.lists(st.lists(mutation(), min_size=1, max_size=2), min_size=BATCH, max_size=BATCH))
def test_every_mutant_of_a_correct_solution_gets_a_verdict(exercise, batch):
    source = (paths.REFERENCE / f"{exercise}.py").read_text(encoding="utf-8")
    mutants = []
    for ops in batch:
        src = source
        for op in ops:
            src = mutate(src, op)
        mutants.append(src)
    check_batch(exercise, mutants)


def test_the_mutations_do_mutate():
    source = "x = 1\ny = f(x, 2)\n"
    assert mutate(source, ("delete-line", 0)) == "y = f(x, 2)\n"
    assert mutate(source, ("change-number", 1, "0.5")) == "x = 1\ny = f(x, 0.5)\n"
    assert mutate(source, ("swap-tokens", 0, 1)) == "= x 1\ny = f(x, 2)\n"
