"""Where things live: the shipped skeletons and references, and the user's own folder.

No torch here: every command imports this.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _data_root() -> Path:
    # A wheel carries exercises/ and reference/ inside the package (see pyproject's force-include);
    # a source checkout or an editable install finds them at the top of the repo.
    shipped = PACKAGE / "_data"
    return shipped if (shipped / "exercises").is_dir() else PACKAGE.parent


DATA = _data_root()
EXERCISES = DATA / "exercises"
REFERENCE = DATA / "reference"


def home() -> Path:
    """The user's attn-drill folder: $ATTN_DRILL_HOME, else the platform's user data folder."""
    env = os.environ.get("ATTN_DRILL_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("attn-drill", appauthor=False))


def backups() -> Path:
    return home() / "backups"


DEFAULT_PRACTICE_DIR = "attn-practice"  # a hyphen: it can never be imported as a package, so never shadows one
