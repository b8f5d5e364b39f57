"""Write a file so that a reader sees the old content or the new, never half of it."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    import tempfile  # only when writing: `list` only reads

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def set_aside(path: Path, extras: tuple[str, ...] = ()) -> Path:
    """Move an unreadable file out of the way, to NAME.corrupt (NAME.corrupt.1, .2... when taken): never
    over an older one, so no file is ever lost. `extras` are suffixes of companion files moved along with
    it (a database's "-wal"). Returns where the file went."""
    n = 0
    while True:
        target = path.with_name(f"{path.name}.corrupt" + (f".{n}" if n else ""))
        n += 1
        if not (target.exists() or target.is_symlink()) and _move_to_new(path, target):
            break
    for suffix in extras:
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.replace(extra, target.with_name(target.name + suffix))
    return target


def _move_to_new(path: Path, target: Path) -> bool:
    """Rename `path` to `target` unless `target` exists (False then), even if another process races us:
    a hard link fails rather than replace, where os.replace would overwrite."""
    try:
        os.link(path, target, follow_symlinks=False)
    except FileExistsError:
        return False
    except OSError:  # no hard links on this file system: the exists() check before us has to do
        os.replace(path, target)
        return True
    os.unlink(path)
    return True
