"""The work of `attn-drill show [ID] [--png FILE]`: every head's attention weights on one seeded example, the
user's beside the reference's, in the terminal (and as an image).

No torch here: the user's code runs in the sandboxed worker process (worker.run_task, judge/show.py), as a
check's does, and the maps come back as plain numbers. matplotlib is imported only for --png.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from attn_drill.commands import resolve
from attn_drill.commands.drill import TIMEOUT_RANGE, valid_number, valid_seed
from attn_drill.commands.usage import fail as _fail, is_file as _is_file, kind as _kind, nice as _nice, show as _show
from attn_drill.i18n import t

PLOT_EXTRA = 'pip install "attn-drill[plot]"'
DEFAULT_SEED = 0  # one example, the same every time unless --seed says otherwise


def cmd_show(exercise_id: Optional[str], png: Optional[Path], seed: Optional[int], timeout: Optional[float]) -> int:
    from attn_drill.render import report as render, show as render_maps
    from attn_drill.store import state

    seed, timeout = valid_seed(seed), valid_number("--timeout", timeout, TIMEOUT_RANGE, "seconds")
    if png is not None:
        _png_ready(png)
    st = state.load()
    ex = resolve.exercise_or_current(exercise_id, st, "show")
    path = _file_of(ex, st)
    seed = DEFAULT_SEED if seed is None else seed
    try:
        result = _run(path, ex, seed, timeout)
    except KeyboardInterrupt:  # the worker dies with us
        return 130
    if isinstance(result, int):
        return result
    out = render.console()
    render_maps.show(out, result, ex.id, _nice(path), seed)
    if png is not None:
        _write_png(png, result, ex.id, _nice(path), seed)
        render.say_key(out, "show_cmd.wrote", path=(_show(png), "bold"))
    return 0


def _png_ready(png: Path) -> None:
    """A folder to write in, then matplotlib importable, before anything runs: one line and exit 2 if not.
    The path comes first: it is the user's to mend whether or not the extra is installed."""
    if _kind(png) == "dir":
        _fail(t("show_cmd.png_folder", path=_show(png), example=_show(png / "maps.png")))
    folder = png.parent if str(png.parent) else Path(".")
    if _kind(folder) != "dir":
        _fail(t("show_cmd.no_folder", folder=_show(folder), name=_show(png.name)))
    try:
        import matplotlib  # noqa: F401 - only with --png
    except ImportError:
        _fail(t("show_cmd.needs_matplotlib", command=PLOT_EXTRA))


def _file_of(ex, st) -> Path:
    """The exercise's file: the one it was started in, else the practice folder's; a usage error if neither."""
    from attn_drill.store import workspace

    path = st.file(ex.id)
    if _is_file(path):
        return path
    here = workspace.practice_file(ex)
    if _is_file(here):
        return here
    if path is None:
        _fail(t("usage.no_file_yet", id=ex.id), t("show_cmd.start_first", id=ex.id))
    _fail(t("usage.file_gone", id=ex.id, path=_show(path)), t("usage.fresh_skeleton", id=ex.id))


def _run(path: Path, ex, seed: int, timeout: Optional[float]):
    """The worker's maps (a dict), or the exit status after a one-line verdict on why there are none."""
    from attn_drill.render import report as render
    from attn_drill.process import runner

    out = render.console(stderr=True)
    waiting = out.status(render.text(t("show_cmd.running", name=path.name))) if out.is_terminal else None
    limit = runner.DEFAULT_TIMEOUT if timeout is None else timeout
    try:
        if waiting:
            waiting.start()
        result = runner.run_task(runner.Job(path, ex.id, task="maps"), seed, limit)
    except OSError as e:
        _fail(t("show_cmd.no_worker", error=e.strerror or e))
    finally:
        if waiting:
            waiting.stop()
    if not isinstance(result, dict):  # a Report: the worker timed out or crashed
        result.sort_findings()
        worst = result.errors[0] if result.errors else None
        return _verdict(worst.slug if worst else "crash", worst.title if worst else t("show_cmd.no_result"),
                        worst.evidence if worst else "", worst.line if worst else None)
    if "error" in result:
        _fail(str(result["error"]) + ".", code=2 if result.get("usage") else 1)
    if "verdict" in result:
        v = result["verdict"]
        return _verdict(v.get("slug", ""), v.get("title", ""), v.get("evidence", ""), v.get("line"))
    return result


def _verdict(slug: str, title: str, evidence: str, line) -> int:
    """Why nothing could be drawn, in one line (the finding a check would give), and exit 1."""
    from attn_drill.render import report as render, show as render_maps

    render_maps.verdict(render.console(), slug, title, evidence, line)
    return 1


def _write_png(png: Path, result: dict, ex_id: str, nice: str, seed: int) -> None:
    from attn_drill.render import png as render_png

    try:
        render_png.write(png, result, f"attn-drill show {ex_id}: {nice}, seed {seed}")
    except OSError as e:
        _fail(t("show_cmd.png_not_written", path=_show(png), error=e.strerror or e))
