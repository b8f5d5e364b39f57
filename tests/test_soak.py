"""Many checks at once on one home: 8 single checks in parallel while a 50-file batch runs. Every verdict is
the one its file deserves, and every check is recorded in the history. No timing is asserted: a
loaded machine only makes it slower."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

from conftest import attn_drill_script

CORPUS = Path(__file__).parent / "corpus" / "sdpa"
LIMIT = 600  # seconds for everything on a loaded 2-core machine: a wedge fails, never hangs


def expected(path: Path) -> str | None:
    head = path.stem.split("__")[0]
    return None if head == "ok" else head


def right(report: dict, path: Path) -> bool:
    """A correct file passes; any other has its slug first (a warning's file passes, with it first)."""
    slug = expected(path)
    if slug is None:
        return report["passed"]
    if slug.startswith("ok-"):  # correct, with that warning
        return report["passed"]
    return bool(report["findings"]) and report["findings"][0]["slug"] in slug.split("+")


def test_eight_checks_at_once_and_a_batch_on_one_home(isolated, home):
    files = [p for p in sorted(CORPUS.glob("*.py")) if not p.name.startswith(("crash", "timeout"))]
    batch_files, singles = files[:50], files[-8:]
    for i, src in enumerate(singles):  # each single check on a copy named for its exercise
        dst = isolated / f"s{i}" / "sdpa.py"
        dst.parent.mkdir()
        dst.write_bytes(src.read_bytes())
    exe = attn_drill_script()
    batch = subprocess.Popen([exe, "check", *map(str, batch_files), "--exercise", "sdpa", "--json", "--seed", "5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = [subprocess.Popen([exe, "check", str(isolated / f"s{i}" / "sdpa.py"), "--json", "--seed", "5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(len(singles))]
    outs = [p.communicate(timeout=LIMIT) for p in [batch, *runs]]
    (batch_out, batch_err), single_outs = outs[0], outs[1:]

    reports = [json.loads(line) for line in batch_out.splitlines()]
    assert len(reports) == len(batch_files), batch_err
    for path, report in zip(batch_files, reports):
        assert Path(report["file"]).name == path.name
        assert right(report, path), (path.name, report["findings"][:1])
    for src, (out, err) in zip(singles, single_outs):
        report = json.loads(out)
        assert right(report, src), (src.name, report["findings"][:1], err)
        assert "Traceback" not in err

    with sqlite3.connect(home / "history.sqlite3") as db:
        recorded = db.execute("SELECT COUNT(*) FROM checks").fetchone()[0]
    # every single check, none lost to a locked database; a batch of files that are not your practice files is not
    # your history (issue 13), so it records nothing
    assert recorded == len(singles)
