"""The work of the practice commands: watch (check on every save), mock (a timed interview) and stats."""

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from attn_drill.catalogue import Exercise

from attn_drill.i18n import t
from attn_drill.commands.drill import MINUTES_RANGE, TIMEOUT_RANGE, valid_number, valid_seed
from attn_drill.commands.usage import describe as _describe, fail as _fail, nice as _nice
from attn_drill.commands.resolve import exercise as _exercise, jobs as _jobs


def cmd_watch(exercise_id: Optional[str], seed: Optional[int], timeout: Optional[float]) -> int:
    from attn_drill.commands.attempts import repro_hint
    from attn_drill.practice import watch
    from attn_drill.practice.record import after_check, practice_attempt, read_bytes
    from attn_drill.render import mock as render_mock, report as render
    from attn_drill.store import state

    seed, timeout = valid_seed(seed), valid_number("--timeout", timeout, TIMEOUT_RANGE, "seconds")
    [(path, ex)] = _jobs([], exercise_id, state.load())
    out, nice = render.console(), _nice(path)
    render_mock.watch_intro(out, ex, nice)
    kept = {}  # the bytes of the version being checked, kept with its verdict
    last = {}  # the content hash of the file last checked: a save that changed nothing is not counted again

    def checking(again: bool) -> None:
        kept["data"] = read_bytes(path)
        render_mock.watch_checking(out, nice, again)

    def checked(rep) -> None:
        render_mock.watch_report(out, rep, ex)  # the verdict first: recording takes a few ms
        data = kept.get("data")
        content = None if data is None else hashlib.sha256(data).hexdigest()
        fresh, last["content"] = content is None or content != last.get("content"), content
        done = after_check(ex, path, rep, source="watch", attempt=practice_attempt(ex, path, state.load()),
                           data=data, repeat=not fresh)
        repro_hint(out, ex, rep, done.kept)
        render_mock.watch_footer(out, rep, ex, nice, took=done.solved, best=done.best, after=done.after)

    try:
        with watch.Checker(ex.id, seed=seed, timeout=timeout) as checker:
            watch.watch(path, checker, checking=checking, checked=checked,
                        missing=lambda stopped: render_mock.watch_missing(out, nice, stopped))
    except KeyboardInterrupt:
        render_mock.watch_stopped(out)
    return 0


def cmd_mock(exercise_id: Optional[str], minutes: Optional[float], strict: bool, seed: Optional[int],
             answers: Optional[str], abandon: bool) -> int:
    from attn_drill.practice import explain, mock
    from attn_drill.render import report as render, mock as render_mock
    from attn_drill.practice.mock_answers import BadAnswers

    seed, minutes = valid_seed(seed), valid_number("--minutes", minutes, MINUTES_RANGE, "minutes")
    try:
        scripted = explain.parse_answers(answers)  # choice numbers, and shapes for the questions on your own file
    except ValueError as e:
        _fail(t("mock.bad_answers", error=e), t("mock.answers_example"))
    _answers_up_front(scripted, abandon)
    forced = _exercise(exercise_id) if exercise_id else None
    out = render.console()
    try:
        with mock.lock():
            session = mock.load()
            if abandon:
                return _abandon_mock(out, session)
            ui = render_mock.MockScreen(out)
            if session is not None:
                asked = (forced and forced.id != session.exercise) or minutes or (strict and not session.strict)
                note = t("mock.in_progress", id=session.exercise) if asked else ""
                ui.intro(session, _exercise(session.exercise), _nice(Path(session.file)), resumed=True, note=note)
            else:
                session = _begin_mock(ui, forced, minutes, strict, seed)
            with mock.Keys(_stdin_fd()) as keys:
                return mock.run(session, ui, keys, answers=scripted)
    except BadAnswers as e:
        _fail(t("mock.answers_not_scored", error=e), t("mock.answers_not_scored_more"))
    except mock.MockBusy as e:
        _fail(t("mock.busy", pid=e.pid), t("mock.busy_more"))


def _answers_up_front(scripted: Optional[list], abandon: bool) -> None:
    """Before the clock starts: no terminal and no --answers is a usage error (the keys and the questions
    need one); answers in a count or range no mock asks are one too."""
    from attn_drill.practice.mock_answers import BadAnswers, up_front

    if abandon:
        return
    if scripted is None and not _has_terminal():
        _fail(t("mock.no_terminal"), t("mock.no_terminal_more"))
    try:
        if scripted is not None:
            up_front(scripted)
    except BadAnswers as e:
        _fail(t("mock.bad_answers", error=e), t("mock.answers_not_started"))


def _has_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _begin_mock(ui, forced: Optional["Exercise"], minutes: Optional[float], strict: bool, seed: Optional[int]):
    import random

    from attn_drill.practice import mock
    from attn_drill.store import workspace

    ex, reason = (forced, "") if forced else mock.pick(random.Random(seed))
    try:
        session, written = mock.begin(ex, minutes=minutes, strict=strict, seed=seed, reason=reason)
    except workspace.WorkspaceError as e:
        _fail(str(e))
    except OSError as e:
        _fail(_describe(e, mock.mock_file(ex)))
    ui.intro(session, ex, _nice(written.path), resumed=False, backup=written.backup)
    return session


def cmd_stats(as_json: bool) -> None:
    from attn_drill.practice import stats

    data = stats.compute()
    if as_json:
        import json

        print(json.dumps(data, indent=2))
        return
    from attn_drill.render import report as render, mock as render_mock

    render_mock.stats(render.console(), data)


def _abandon_mock(out, session) -> int:
    from attn_drill.practice import mock
    from attn_drill.render import report as render

    if session is None:
        render.say(out, t("mock.none_running"))
        return 0
    mock.drop()
    render.say_key(out, "mock.dropped", id=session.exercise, path=(_nice(Path(session.file)), "bold"))
    return 0


def _stdin_fd() -> Optional[int]:
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdin (an embedding, a test runner)
        return None
