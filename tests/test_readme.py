"""The README's set-up commands are the ones CI runs."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci in (ROOT / "README.md").read_text(), ci


def test_readme_install_pins_torch():
    readme = (ROOT / "README.md").read_text()
    assert "pip install torch==2.13.0 ." in readme
