"""The work of `attn-drill explain [ID]`: check the file, trace it, ask about its own lines, record the round.

No torch here: the check, the trace and the mutants' checks run in processes forked from one warm pool
(process/warm.py), which imports torch once for all three.
"""

import sys
from typing import Optional

from attn_drill.commands.drill import TIMEOUT_RANGE, valid_number, valid_seed
from attn_drill.commands.usage import fail as _fail, nice as _nice
from attn_drill.i18n import t


def _example() -> str:
    return t("practice.explain.command.example")


def cmd_explain(exercise_id: Optional[str], answers: Optional[str], as_json: bool, seed: Optional[int],
                timeout: Optional[float]) -> int:
    import random

    from attn_drill.practice import explain
    from attn_drill.commands import resolve
    from attn_drill.store import state

    seed, timeout = valid_seed(seed), valid_number("--timeout", timeout, TIMEOUT_RANGE, "seconds")
    try:
        scripted = explain.parse_answers(answers)
    except ValueError as e:
        _fail(t("practice.explain.command.bad_answers", error=e), _example())
    interactive = scripted is None and not as_json and sys.stdin.isatty() and sys.stdout.isatty()
    if scripted is None and not as_json and not interactive:
        _fail(t("practice.explain.command.no_terminal"), _example())
    st = state.load()
    ex = resolve.exercise_or_current(exercise_id, st, "explain")
    [(path, ex)] = resolve.jobs([], ex.id, st)
    seed = random.randrange(10_000) if seed is None else seed
    try:
        r = _build(path, ex, seed, timeout)
    except KeyboardInterrupt:  # Ctrl-C while it checks: the worker dies with its pool, nothing is recorded
        return 130
    if scripted is not None:  # held to the questions before any is scored: too few is a usage error, as in mock
        from attn_drill.practice.mock_answers import BadAnswers, against

        try:
            against(r.questions, [], scripted, asker=t("practice.explain.mock_answers.this_round"))
        except BadAnswers as e:
            _fail(t("practice.explain.command.not_scored", error=e), _example())
    if as_json and scripted is None:
        import json

        print(json.dumps(explain.summary(r), indent=2))
        return 0
    return _ask(r, ex, _nice(path), scripted, as_json)


def _build(path, ex, seed: int, timeout: Optional[float]):
    """Check the file (it must pass), then trace it: one warm pool, so torch is imported once."""
    from attn_drill.practice import explain
    from attn_drill.render import report as render
    from attn_drill.process import runner
    from attn_drill.process.warm import WarmPool

    out = render.console(stderr=True)
    waiting = out.status(render.text(t("practice.explain.command.checking", name=path.name))) if out.is_terminal \
        else None
    limit = runner.DEFAULT_TIMEOUT if timeout is None else timeout
    r, refused = None, ""
    try:
        if waiting:
            waiting.start()
        with WarmPool([]) as pool:
            reports = runner.run_checks([runner.Job(path, ex.id)], seed=seed, timeout=limit, spawn=pool.spawn,
                                        on_gpu=False)  # explain asks about the code, not the device
            rep = next(reports)
            reports.close()
            if rep.passed:
                r = explain.build(path, ex.id, seed, timeout=limit, pool=pool)
            else:
                rep.sort_findings()
                why = t("practice.explain.command.not_started") if rep.not_started else (
                    t("practice.explain.command.slug_sep").join(f.slug for f in rep.errors[:2])
                    or t("practice.explain.command.it_fails"))
                refused = t("practice.explain.command.fails", name=path.name, why=why)
    except OSError as e:
        refused = t("practice.explain.command.no_checker", error=e.strerror or e)
    finally:
        if waiting:
            waiting.stop()  # before any message: the spinner's line is cleared first
    if refused or r.error:
        _fail(refused or t("practice.explain.command.no_questions", name=path.name, error=r.error), code=1)
    return r


def _ask(r, ex, nice: str, scripted: Optional[list], as_json: bool) -> int:
    """Ask each question (or take the scripted answers), explain each answer at once, record the round."""
    from attn_drill.practice import explain
    from attn_drill.store import history
    from attn_drill.render import report as render, explain as render_explain

    out = render.console()
    answers: list = []
    if not as_json:
        render_explain.header(out, ex.id, nice, r)
    try:
        for i, q in enumerate(r.questions):
            if as_json:
                answers.append(scripted[i] if i < len(scripted) else None)
                continue
            render_explain.question(out, q, i + 1, len(r.questions))
            if scripted is not None:
                given = scripted[i] if i < len(scripted) else None
                out.print(render.text(render_explain.ask(q) + t("mock.from_answers", given=given or "-")))
            else:
                given = _typed(out, q)
            answers.append(given)
            render_explain.answered(out, q, given, explain.is_right(q, given))
    except (KeyboardInterrupt, EOFError):
        out.print()
        render.say(out, t("practice.explain.command.stopped"))
        return 130
    history.record_explain(ex.id, explain.kinds_missed(r.questions, answers), source="explain", file=r.file,
                           seed=r.seed)
    if as_json:
        import json

        print(json.dumps(explain.summary(r, answers), indent=2))
    else:
        render_explain.tally(out, r.questions, answers)
    return 0


def _typed(out, q: dict) -> Optional[str]:
    """An answer typed, then Enter, as in the mock: an empty line answers nothing and asks again, an answer
    explain.refusal refuses is asked for again, `-` skips the question."""
    from attn_drill.practice import explain
    from attn_drill.render import report as render, explain as render_explain

    while True:
        given = out.input(render.text(render_explain.ask(q))).strip()
        if given == "-":
            return None
        why = explain.refusal(q, given) if given else ""
        if why is None:
            return given
        if why:
            out.print(render.text(t("practice.explain.command.refused", why=why), "yellow"))
