"""The user's practice files: write a skeleton, back a file up. No torch, no rich.

User work is sacred: nothing here replaces a file that differs from the skeleton without first
copying it under paths.backups()/<id>/<timestamp>-<file>, and writes go through a temp file and
os.replace, so an interrupted write never leaves half a file.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from attn_drill import paths
from attn_drill.store.atomic import write_atomic
from attn_drill.catalogue import Exercise


class WorkspaceError(Exception):
    """A path we cannot use (a folder where the file should be, a file where the folder should be)."""


@dataclass
class Written:
    path: Path  # the user's file, absolute
    written: bool  # False: it was already there and left alone
    backup: Path | None = None  # where the old content went, when it was replaced


def practice_file(ex: Exercise, folder: Path | str | None = None) -> Path:
    """Where `start` puts the exercise: FOLDER/<file>, FOLDER defaulting to ./attn-practice."""
    return (Path(folder or paths.DEFAULT_PRACTICE_DIR) / ex.file).absolute()


def same_as_skeleton(ex: Exercise, path: Path, content: bytes | None = None) -> bool:
    try:
        return path.read_bytes() == (ex.skeleton.read_bytes() if content is None else content)
    except OSError:
        return False


def digest(path: Path) -> str | None:
    """The file's content hash (None if it cannot be read): a check of the same content again (`c` pressed twice,
    a save that changed nothing) is shown, but not counted twice."""
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def backup(ex: Exercise, path: Path) -> Path:
    """Copy `path` to backups()/<id>/<timestamp>-<file>; never overwrites an earlier backup."""
    folder = paths.backups() / ex.id
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = folder / f"{stamp}-{path.name}"
    n = 1
    while target.exists():  # two backups in one second
        target = folder / f"{stamp}-{n}-{path.name}"
        n += 1
    shutil.copy2(path, target)
    return target


def _check_usable(path: Path) -> None:
    if path.is_dir():
        raise WorkspaceError(f"{path} is a folder, not a file")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise WorkspaceError(f"{parent} is a file, so it cannot hold {path.name}")
            break


def write_skeleton(ex: Exercise, path: Path, *, replace: bool = False, content: bytes | None = None) -> Written:
    """Put the skeleton (or `content`: the skeleton in another form, a notebook) at `path`. An existing file is
    kept unless `replace`; then it is backed up first (unless it is untouched: nothing to lose)."""
    path = Path(path).absolute()
    _check_usable(path)
    exists = path.exists()
    if exists and not replace:
        return Written(path, written=False)
    try:
        saved = backup(ex, path) if exists and not same_as_skeleton(ex, path, content) else None
    except OSError as e:  # a read-only or full home: without a backup the file is not touched
        raise WorkspaceError(f"could not back up {path} to {paths.backups()} ({e.strerror or e}), so it was "
                             "left as it is") from e
    write_atomic(path, ex.skeleton.read_bytes() if content is None else content)
    return Written(path, written=True, backup=saved)
