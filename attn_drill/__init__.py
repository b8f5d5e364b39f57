"""attn-drill: practise the attention coding round and get told which mistake you made.

In Python or a notebook (the CLI is `attn-drill`): `import attn_drill as ad`, then `ad.check("mha", MyMHA)`,
`ad.show("mha", MyMHA)`, `ad.hint("mha")`, `ad.solution("mha")`; `%load_ext attn_drill` adds the
`%%attn_check mha` cell magic. Importing this package imports nothing else (the CLI starts fast); the notebook
API is loaded on first use.
"""

__version__ = "0.1.0"
__all__ = ["check", "show", "hint", "solution", "load_ipython_extension"]


def check(exercise, obj=None, **options):
    """Check `obj` (or the exercise's names in the notebook) in the sandboxed checker: a CheckResult."""
    import sys

    from attn_drill.notebook import api

    options.setdefault("namespace", api.notebook_namespace() or sys._getframe(1).f_globals)
    return api.check(exercise, obj, **options)


def show(exercise, obj=None, **options):
    """Every head's attention weights beside the reference's, inline (text, and an image with matplotlib)."""
    import sys

    from attn_drill.notebook import api

    options.setdefault("namespace", api.notebook_namespace() or sys._getframe(1).f_globals)
    return api.show(exercise, obj, **options)


def hint(exercise, all=False):
    """The next hint for `exercise`, as text."""
    from attn_drill.notebook import api

    return api.hint(exercise, all)


def solution(exercise, *, yes=False):
    """The model answer's code (before a pass, only with yes=True)."""
    from attn_drill.notebook import api

    return api.solution(exercise, yes=yes)


def load_ipython_extension(ipython):
    """`%load_ext attn_drill`: the `%%attn_check EXERCISE` cell magic."""
    from attn_drill.notebook import api

    api.load_ipython_extension(ipython)
