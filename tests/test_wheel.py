"""`pip install .` (not only -e) works: the wheel carries exercises/ and reference/, and runs from them."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel, built and installed (without dependencies) into a folder of its own."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(ROOT)],
                   check=True)
    wheel = next((tmp / "dist").glob("attn_drill-*.whl"))
    target = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True)
    return wheel, target


def run(target: Path, *args, cwd: Path):
    env = dict(os.environ, PYTHONPATH=str(target))  # the installed copy comes before the editable one
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_wheel_ships_skeletons_and_references(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for sub in ("exercises", "reference"):
        for f in (ROOT / sub).glob("*.py"):
            assert f"attn_drill/_data/{sub}/{f.name}" in names
    for data in ("catalogue.toml", "mistakes.toml", "practice/questions.toml"):  # read at run time, beside the code
        assert f"attn_drill/{data}" in names
    words = {str(p.relative_to(ROOT)) for p in (ROOT / "attn_drill" / "i18n").rglob("*.toml")}  # every language's
    assert words and words <= names


def test_installed_copy_starts_shows_solution_and_checks(installed, tmp_path):
    _, target = installed
    where = run(target, "-c", "from attn_drill import paths; print(paths.EXERCISES)", cwd=tmp_path)
    assert where.stdout.strip().startswith(str(target)), where.stdout
    r = run(target, "-m", "attn_drill", "start", "sdpa", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "attn-practice" / "sdpa.py").read_text() == (ROOT / "exercises" / "sdpa.py").read_text()
    r = run(target, "-m", "attn_drill", "solution", "sdpa", "--yes", cwd=tmp_path)
    assert r.returncode == 0 and "def scaled_dot_product_attention" in r.stdout
    shutil.copyfile(ROOT / "reference" / "sdpa.py", tmp_path / "attn-practice" / "sdpa.py")
    r = run(target, "-m", "attn_drill", "check", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
