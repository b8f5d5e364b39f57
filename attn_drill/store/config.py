"""The user's preferences in config.json under ATTN_DRILL_HOME (`attn-drill config`): written here, with the rest
of the user's data; i18n reads the language back (i18n.saved) before anything else is loaded. No torch, no rich."""

from __future__ import annotations

import json
from pathlib import Path

from attn_drill import i18n, paths
from attn_drill.store.atomic import write_atomic


def save_lang(lang: str | None) -> Path:
    """Keep `lang` as the preference (None forgets it), the file's other keys as they were; the file written."""
    path = paths.home() / i18n.CONFIG
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        data = data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        data = {}
    if lang is None:
        data.pop("lang", None)
    else:
        data["lang"] = lang
    write_atomic(path, (json.dumps(data, indent=2) + "\n").encode())
    return path
