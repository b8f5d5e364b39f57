"""Re-check a file each time it is saved. No torch, no rich: the CLI renders.

Editors save in different ways: writing in place, or writing a new file and renaming it over the old
one (vim, VS Code's atomic save, many formatters), sometimes with a moment where the name points at
nothing. So we look at the folder's entry for the name, not at an open file: every POLL seconds we stat
the path and compare (inode, size, mtime). A save is acted on once the entry has stayed the same for
DEBOUNCE seconds, so a save in several writes gives one check, of the finished file. Only this one file
is watched: saving another exercise's file in the same folder does nothing.

Checks go through a warm pool (process/warm.py): each one runs in a freshly forked process, so feedback
comes in a fraction of a second without ever reusing the user's code's state.
"""

from __future__ import annotations

import os
import signal
import stat
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from attn_drill.process import runner
from attn_drill.process.warm import WarmPool
from attn_drill.report import Report

POLL = 0.05  # seconds between looks at the folder
DEBOUNCE = 0.05  # the entry must stay unchanged this long before we check


def signature(path: Path) -> tuple | None:
    """What identifies one saved version of the file: None when the name points at no regular file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class Watcher:
    """Says when the file at `path` has a new version that has settled. The clock is injectable."""

    def __init__(self, path: Path, *, debounce: float = DEBOUNCE, clock: Callable[[], float] = time.monotonic):
        self.path, self.debounce, self.clock = Path(path), debounce, clock
        self.checked: tuple | None = None  # the version last handed out
        self._seen = signature(self.path)
        self._since = clock()

    def poll(self) -> tuple | None:
        """The new settled version's signature (and it counts as handed out), or None."""
        sig, now = signature(self.path), self.clock()
        if sig != self._seen:
            self._seen, self._since = sig, now
            return None
        if sig is None or sig == self.checked or now - self._since < self.debounce:
            return None
        self.checked = sig
        return sig

    @property
    def missing(self) -> bool:
        return self._seen is None

    def changes(self, *, poll: float = POLL, on_missing: Callable[[], None] = lambda: None) -> Iterator[tuple]:
        """Yield once per settled save, forever (the caller stops on Ctrl-C); the file as it is now counts
        as the first. `on_missing` is called once each time the file disappears."""
        self._since -= self.debounce  # the file as it stands has settled already
        told = False
        while True:
            sig = self.poll()
            if sig is not None:
                told = False
                yield sig
                continue
            if self.missing and not told:
                on_missing()
                told = True
            time.sleep(self._settle_wait(poll))

    def _settle_wait(self, poll: float) -> float:
        """Seconds to the next look: while a change settles, just until its debounce ends (no full poll
        interval lost); otherwise `poll`."""
        if self._seen is None or self._seen == self.checked:
            return poll
        return min(poll, max(0.005, self.debounce - (self.clock() - self._since)))


class CancellablePool(WarmPool):
    """The warm pool, remembering the child it forked last, so that a check can be cancelled from another
    thread: cancel() kills that child's process group (the runner then reads its end, kills what is left
    and reaps it, as for any check). Only the check's own thread talks to the server."""

    def __init__(self, warm_up: list[str] = ()):
        super().__init__(warm_up)
        self._lock = threading.Lock()
        self._child: int | None = None
        self._cancelled = False

    def begin(self) -> None:
        with self._lock:
            self._child, self._cancelled = None, False

    def end(self) -> None:
        with self._lock:
            self._child = None  # reaped by now: its pid may be reused, never kill it again

    def spawn(self, spec: dict, fds: tuple[int, ...], log):
        proc = super().spawn(spec, fds, log)
        with self._lock:
            self._child = proc.pid
            if self._cancelled:  # cancelled while it was being forked
                _killpg(proc.pid)
        return proc

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._child is not None:
                _killpg(self._child)


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Checker:
    """Checks one exercise's file, again and again, through one warm pool: in the caller's thread (check),
    or in the background (start), where a newer save can cancel it."""

    def __init__(self, exercise_id: str, *, seed: int | None = None, timeout: float | None = None):
        self.exercise_id, self.seed = exercise_id, seed
        self.timeout = runner.DEFAULT_TIMEOUT if timeout is None else timeout
        self.pool = CancellablePool([exercise_id])

    def __enter__(self) -> "Checker":
        self.pool.start()
        return self

    def __exit__(self, *exc) -> None:
        self.pool.close()

    def check(self, path: Path) -> Report:
        self.pool.begin()
        try:
            reports = list(runner.run_checks([runner.Job(Path(path), self.exercise_id)], seed=self.seed,
                                             timeout=self.timeout, spawn=self.pool.spawn))
        finally:
            self.pool.end()
        return reports[0]

    def start(self, path: Path) -> "Running":
        """Check `path` in a thread of its own; the Running says when it is done, and can cancel it."""
        return Running(self, Path(path))


class Running:
    """One check in the background. cancel() kills its worker and waits for the thread: no process survives."""

    def __init__(self, checker: Checker, path: Path):
        self.checker, self.report, self.error = checker, None, None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(path,), name="attn-drill-watch-check", daemon=True)
        self.thread.start()

    def _run(self, path: Path) -> None:
        try:
            self.report = self.checker.check(path)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread, which raises it
            self.error = e
        finally:
            self.done.set()

    def result(self) -> Report:
        if self.error is not None:
            raise self.error
        return self.report

    def cancel(self, wait: float = 30.0) -> None:
        self.checker.pool.cancel()
        self.thread.join(wait)


def watch(path: Path, checker: Checker, *, checking: Callable[[bool], None], checked: Callable[[Report], None],
          missing: Callable[[bool], None], poll: float = POLL) -> None:
    """Check `path` as it stands and after every settled save, forever (Ctrl-C stops). A save while a check
    runs cancels that check and starts a new one; so does the file's going (a verdict on a file that is gone
    says nothing). checking(again) is called as a check starts (again: it replaces a cancelled one),
    checked(report) when one ends, missing(stopped) once each time the file goes (stopped: a check was)."""
    watcher = Watcher(path)
    watcher._since -= watcher.debounce  # the file as it stands has settled already
    running: Running | None = None
    told = False
    try:
        while True:
            version = watcher.poll()
            if version is not None:
                told, again = False, running is not None
                if running is not None:
                    running.cancel()
                checking(again)
                running = checker.start(path)
            elif watcher.missing and not told:
                stopped = running is not None
                if stopped:
                    running.cancel()
                    running = None
                missing(stopped)
                told = True
            if running is not None and running.done.wait(watcher._settle_wait(poll)):
                finished, running = running, None
                checked(finished.result())
            elif running is None:
                time.sleep(watcher._settle_wait(poll))
    finally:
        if running is not None:
            running.cancel()
