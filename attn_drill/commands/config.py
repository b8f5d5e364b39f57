"""`attn-drill config`: the user's preferences. One for now: the language (store.config keeps it in config.json in
the user's folder). No torch, no rich."""

from __future__ import annotations

import os
from typing import Optional

from attn_drill import i18n
from attn_drill.commands.usage import fail, show
from attn_drill.i18n import t
from attn_drill.store.config import save_lang


def cmd_config(key: Optional[str], value: Optional[str]) -> None:
    if key is None:
        print(t("config.lang", lang=i18n.lang(), source=_source()))
        return
    if key != "lang":
        fail(t("config.bad_key", key=key), t("usage.try", command="attn-drill config --help"))
    if value is None:
        print(t("config.lang", lang=i18n.lang(), source=_source()))
        return
    if value not in (*i18n.LANGS, "auto"):
        fail(t("config.bad_value", value=value), t("usage.try", command="attn-drill config lang zh"))
    try:
        path = save_lang(None if value == "auto" else value)
    except OSError as e:
        fail(f"{show(e.filename or '')}: {e.strerror or e}")
    if value == "auto":
        i18n.use(i18n.from_locale())
        print(t("config.auto", path=show(path)))
    else:
        i18n.use(value)
        print(t("config.saved", lang=value, path=show(path)))


def _source() -> str:
    """Where the language in use comes from, in the order i18n.choose reads them."""
    if i18n.flagged:
        return t("config.source_flag")
    if i18n.parse(os.environ.get("ATTN_DRILL_LANG")):
        return t("config.source_env")
    if i18n.saved():
        return t("config.source_saved")
    return t("config.source_locale")
