"""Usage errors and paths in messages, for every command: one `error:` line (and the command that would work),
exit 2; paths escaped, shortened and told apart (file, folder, missing). No torch; rich only when something is said.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn, Optional

EXIT_USAGE = 2
SHOWN_PATH = 160  # characters of a path echoed in a message; a longer one is shortened in the middle


def say(*parts, err: bool = False) -> None:
    from attn_drill.render import report as render

    render.say(render.console(stderr=err), *parts)


def fail(message: str, *more: str, code: int = EXIT_USAGE) -> NoReturn:
    """A usage error: say what is wrong and what to do (one line each, escaped), exit 2."""
    from attn_drill.say import printable

    from attn_drill.i18n import t

    say((t("usage.error"), "bold red"), printable(message), err=True)
    for line in more:
        if line:
            say(printable(line), err=True)
    raise SystemExit(code)


def show(path) -> str:
    """A path for a message: escaped, and shortened in the middle when it is very long."""
    from attn_drill.say import printable

    return printable(str(path), limit=SHOWN_PATH)


def retry(old, new) -> str:
    """The command the user typed with `old` (a word, or a Path) replaced by `new`: the one that would work."""
    import shlex

    args = sys.argv[1:]
    same = (lambda a: a and Path(a) == old) if isinstance(old, Path) else (lambda a: a == old)
    fixed = [str(new) if same(a) else a for a in args]
    fixed = [f"{a.split('=', 1)[0]}={new}" if "=" in a and same(a.split("=", 1)[1]) else a for a in fixed]
    from attn_drill.i18n import t

    return t("usage.try", command="attn-drill " + shlex.join(fixed)) if fixed != args else ""


def quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


def nice(path: Path) -> str:
    """A path relative to the current folder when it is inside it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def kind(path: Path) -> str:
    """"file", "dir", "missing" or "other" (a pipe, a device); a usage error for a path the system cannot
    look up at all (too long, no permission), which Path.is_file would raise on."""
    import errno
    import stat

    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL byte in it
        return "missing"
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            fail(too_long(path))
        from attn_drill.i18n import t

        fail(t("usage.cannot_look", path=show(path), error=e.strerror or e))
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def too_long(path: Path) -> str:
    from attn_drill.i18n import t

    name = max(path.parts or ("",), key=lambda p: len(os.fsencode(p)))
    if len(os.fsencode(name)) > 255:
        return t("usage.name_too_long", bytes=len(os.fsencode(name)), name=show(name))
    whole = len(os.fsencode(os.path.abspath(path)))  # the system counts from the root
    return t("usage.path_too_long", bytes=whole, path=show(path))


def is_file(path: Optional[Path]) -> bool:
    from attn_drill.store.atomic import is_regular

    return path is not None and is_regular(path) is True


def describe(e: OSError, path: Optional[Path] = None) -> str:
    """An OSError in words, its path (or `path`, for errors that carry none) escaped and shortened."""
    import errno

    where = os.fsdecode(e.filename) if e.filename else path
    if e.errno == errno.ENAMETOOLONG and where:
        return too_long(Path(where))
    if e.strerror and where:
        from attn_drill.i18n import t

        return t("usage.could_not_write", path=show(where), error=e.strerror)
    return str(e)
