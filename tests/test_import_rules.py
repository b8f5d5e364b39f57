"""The layers of attn_drill/, as rules on what each folder may import (anywhere in a file, lazy imports too):

- practice/ and store/: no torch, rich or typer (the drill's logic and the user's data, fast and testable);
- commands/ and render/: no torch (only the worker imports it);
- judge/: nothing of commands/, render/, practice/, store/ or process/ (the verdict knows no CLI and no process);
- process/: nothing of commands/, render/, practice/ or store/;
- notebook/: no torch and nothing of judge/ (a notebook's code runs in the worker, never in the kernel); it is
  the top floor: no other folder imports it;
- the root's shared modules (catalogue, findings, report, say, paths, limits) and i18n/: none of the folders.

These replace the "no torch here" promises docstrings used to make. A rule is read off the source (ast), so a
rule broken inside a function that no test calls is still caught."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "attn_drill"
FOLDERS = ("commands", "render", "practice", "store", "process", "judge", "notebook")
SHARED = ("catalogue", "findings", "report", "say", "paths", "limits")

# the place (a folder, or a root module) -> the imports it may not make: a top-level package, or a part of ours
TOP = "attn_drill.notebook"
RULES = {
    "practice": {"torch", "rich", "typer", TOP},
    "store": {"torch", "rich", "typer", TOP},
    "commands": {"torch", TOP},
    "render": {"torch", TOP},
    "judge": {f"attn_drill.{f}" for f in ("commands", "render", "practice", "store", "process", "notebook")},
    "process": {f"attn_drill.{f}" for f in ("commands", "render", "practice", "store", "notebook")},
    "notebook": {"torch", "attn_drill.judge"},
    **{m: {f"attn_drill.{f}" for f in FOLDERS} for m in (*SHARED, "i18n")},
}


def imported(source: str) -> list[tuple[int, str]]:
    """Every module a source imports, with its line: `from a.b import c` gives a.b and a.b.c (c may be a module)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def place(relative: Path) -> str:
    """The rule a file of attn_drill/ falls under: its top folder, or its module name at the root."""
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def broken(files: dict[Path, str]) -> list[str]:
    """Each import that breaks a rule, as 'file:line imports module (forbidden in place)'."""
    out = []
    for rel, source in sorted(files.items()):
        forbidden = RULES.get(place(rel), set())
        for line, module in imported(source):
            hit = [f for f in forbidden if module == f or module.startswith(f + ".")]
            if hit:
                out.append(f"{rel}:{line} imports {module} (no {hit[0]} in {place(rel)})")
    return sorted(set(out))


def package_files() -> dict[Path, str]:
    return {p.relative_to(PACKAGE): p.read_text() for p in PACKAGE.rglob("*.py")}


def test_every_folder_keeps_its_imports():
    assert broken(package_files()) == []


def test_the_package_root_holds_at_most_ten_modules():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= 10, root


@pytest.mark.parametrize("rel, source, rule", [
    ("practice/mock.py", "def f():\n    import torch\n", "no torch in practice"),
    ("store/history.py", "from rich.text import Text\n", "no rich in store"),
    ("render/report.py", "import torch.nn.functional as F\n", "no torch in render"),
    ("judge/engine.py", "from attn_drill.process import runner\n", "no attn_drill.process in judge"),
    ("judge/engine.py", "from attn_drill import store\n", "no attn_drill.store in judge"),
    ("process/runner.py", "from attn_drill.render import report\n", "no attn_drill.render in process"),
    ("findings.py", "from attn_drill.judge import compare\n", "no attn_drill.judge in findings"),
    ("i18n/__init__.py", "def f():\n    from attn_drill.store.atomic import write_atomic\n", "no attn_drill.store in i18n"),
    ("commands/drill.py", "from attn_drill.notebook.api import check\n", "no attn_drill.notebook in commands"),
])
def test_a_broken_rule_is_caught(rel, source, rule):
    files = package_files()
    files[Path(rel)] = files.get(Path(rel), "") + source
    assert any(rule in b for b in broken(files)), broken(files)
