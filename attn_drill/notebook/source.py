"""The file a notebook check runs. No torch.

A `%%attn_check` cell is a file as it stands. An object (a function or a class defined in a cell) brings its
cell's definitions: the imports, functions and classes at the cell's top level, and its assignments that call
nothing (`D = 64`), never its calls or prints, which would run in the checker; so helpers defined beside it
come too. IPython keeps every
cell's text in `linecache` under the file name its code objects carry, which is where it is read from.
"""

from __future__ import annotations

import ast
import inspect
import linecache

HEADER = "import math\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
KEPT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class NotFound(LookupError):
    """An object whose defining cell cannot be read (a built-in, or code typed where nothing keeps it)."""


def cell_of(obj) -> tuple[str, str]:
    """(the text of the cell that defined `obj`, the name it was defined under)."""
    code = _code_of(obj)
    if code is None:
        raise NotFound(f"{getattr(obj, '__name__', obj)!r} is not a function or a class defined in Python code")
    text = "".join(linecache.getlines(code.co_filename))
    if not text:
        try:
            text = inspect.getsource(obj)
        except (OSError, TypeError) as e:
            raise NotFound(f"the source of {obj.__name__!r} cannot be found ({e})") from None
    return text, obj.__name__


def _code_of(obj):
    """A code object defined in obj's cell: a function's own, or any method's of a class."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if inspect.isfunction(obj):
        return obj.__code__
    if inspect.isclass(obj):
        for value in vars(obj).values():
            value = getattr(value, "__func__", value)
            if inspect.isfunction(value):
                return value.__code__
    return None


def definitions(text: str) -> str:
    """The cell's top-level definitions (see KEPT), in their order, as source."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text  # the check names the syntax error, with its line
    lines = text.splitlines(keepends=True)
    kept = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if not any(isinstance(n, ast.Call) for n in ast.walk(node)):
                kept.append(ast.get_source_segment(text, node) + "\n")  # alone, not the rest of its line
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and _ours(node):
            continue  # the notebook's `import attn_drill as ad`: how it checks, not part of the answer
        elif isinstance(node, KEPT):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            kept.append("".join(lines[first - 1:node.end_lineno]))
    return "\n".join(kept)


def _ours(node) -> bool:
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    return any(n == "attn_drill" or n.startswith("attn_drill.") for n in names)


def of_objects(objects: dict[str, object]) -> str:
    """A file that defines each name of `objects` (the exercise's names): each object's cell's definitions, once
    per cell, after the usual imports; `name = obj_name` where the object was defined under another name."""
    parts, seen, aliases = [HEADER], set(), []
    for name, obj in objects.items():
        text, defined = cell_of(obj)
        if text not in seen:
            seen.add(text)
            parts.append(definitions(text))
        if defined != name:
            aliases.append(f"{name} = {defined}\n")
    return "\n\n".join(parts + aliases)
