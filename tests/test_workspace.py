"""Practice files: skeletons go where they should, and nothing the user wrote is lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attn_drill import catalogue, paths
from attn_drill.store import workspace

MHA = catalogue.get("mha")


def test_practice_file_defaults_to_attn_practice_in_the_current_folder(isolated):
    assert workspace.practice_file(MHA) == isolated / "attn-practice" / "mha.py"
    assert workspace.practice_file(MHA, "elsewhere").is_absolute()
    assert workspace.practice_file(MHA, Path("x/y")) == isolated / "x" / "y" / "mha.py"


def test_writes_the_skeleton_and_creates_folders(isolated):
    w = workspace.write_skeleton(MHA, isolated / "a" / "b" / "mha.py")
    assert w.written and w.backup is None
    assert w.path.read_bytes() == MHA.skeleton.read_bytes()


def test_an_existing_file_is_left_alone(isolated):
    target = isolated / "mha.py"
    target.write_text("# my work\n")
    w = workspace.write_skeleton(MHA, target)
    assert not w.written and w.backup is None
    assert target.read_text() == "# my work\n"


def test_replace_backs_up_first(isolated, home):
    target = isolated / "mha.py"
    target.write_text("# my work\n")
    w = workspace.write_skeleton(MHA, target, replace=True)
    assert w.written and w.backup is not None
    assert w.backup.parent == home / "backups" / "mha" == paths.backups() / "mha"
    assert w.backup.name.endswith("-mha.py")
    assert w.backup.read_text() == "# my work\n"
    assert target.read_bytes() == MHA.skeleton.read_bytes()


def test_replacing_the_untouched_skeleton_needs_no_backup(isolated, home):
    target = isolated / "mha.py"
    workspace.write_skeleton(MHA, target)
    w = workspace.write_skeleton(MHA, target, replace=True)
    assert w.written and w.backup is None
    assert not (home / "backups").exists()


def test_backups_in_the_same_second_do_not_collide(isolated):
    target = isolated / "mha.py"
    seen = set()
    for i in range(3):
        target.write_text(f"# attempt {i}\n")
        b = workspace.backup(MHA, target)
        assert b not in seen
        seen.add(b)
    assert sorted(p.read_text() for p in seen) == [f"# attempt {i}\n" for i in range(3)]


def test_a_folder_in_the_way_is_an_error(isolated):
    (isolated / "mha.py").mkdir()
    with pytest.raises(workspace.WorkspaceError, match="is a folder"):
        workspace.write_skeleton(MHA, isolated / "mha.py", replace=True)


def test_a_file_in_place_of_the_folder_is_an_error(isolated):
    (isolated / "attn-practice").write_text("not a folder")
    with pytest.raises(workspace.WorkspaceError, match="is a file"):
        workspace.write_skeleton(MHA, workspace.practice_file(MHA))


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(isolated, monkeypatch):
    target = isolated / "mha.py"
    target.write_text("# my work\n")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        workspace.write_skeleton(MHA, target, replace=True)
    assert target.read_text() == "# my work\n"
    assert [p.name for p in isolated.iterdir()] == ["mha.py"]


def test_same_as_skeleton(isolated):
    target = isolated / "mha.py"
    assert not workspace.same_as_skeleton(MHA, target)  # missing
    workspace.write_skeleton(MHA, target)
    assert workspace.same_as_skeleton(MHA, target)
    target.write_text(target.read_text() + "# edit\n")
    assert not workspace.same_as_skeleton(MHA, target)
