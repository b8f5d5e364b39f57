"""Write a file so that a reader sees the old content or the new, never half of it; move a damaged one
aside (never over another); open the lock files that one process at a time holds."""

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


def is_regular(path: Path) -> bool | None:
    """True for a plain file (or a link to one), False for anything else there (a folder, a pipe: set it
    aside), None when nothing is there or it cannot be looked at (a path too long, no permission)."""
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None


def open_lock(path: Path) -> int | None:
    """A descriptor on the lock file `path` for flock, the file created if missing; a folder or other
    non-file in its place is set aside first (with a warning). None when it cannot be opened at all (a
    read-only home, a full disk): the caller goes on unlocked, and its save will say what went wrong."""
    for _ in range(2):
        if is_regular(path) is False:
            try:
                aside = set_aside(path)
            except OSError:
                return None
            from attn_drill.say import warn

            warn(f"{path} was not a file; moved it to {aside}.")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except IsADirectoryError:
            continue  # made a folder since we looked: set it aside again
        except OSError:
            try:  # it exists but cannot be written (a read-only home): flock still works read-only
                return os.open(path, os.O_RDONLY)
            except OSError:
                return None
    return None


def write_holder(fd: int) -> None:
    """Write our pid into a lock we now hold, for the message a waiting process shows."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    except OSError:  # opened read-only: the lock still holds, only the pid is not shown
        pass


def clear_holder(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass


def lock_holder(fd: int) -> str | None:
    """The pid written in a lock file by its holder, if it wrote one."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return text if text.isdigit() else None
