"""The README's set-up commands are the ones CI runs."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci in (ROOT / "README.md").read_text(), ci


def test_readme_install_pins_torch():
    readme = (ROOT / "README.md").read_text()
    assert "pip install torch==2.13.0 ." in readme


def test_ci_runs_the_readme_first_command_in_a_venv_of_its_own():
    """A user's install is proved by itself, with no extras: CI runs the README's first command in a new
    environment before the test command's, then checks real files through the console script."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    first = "pip install torch==2.13.0 . && attn-drill start sdpa"
    assert first in readme and first in ci
    assert ci.index(first) < ci.index("fresh_venv .venv\n") and "python scripts/fresh_install.py" in ci
