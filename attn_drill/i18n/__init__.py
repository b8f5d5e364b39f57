"""The language a person reads: English (the default) or Simplified Chinese. No torch, no rich.

Which one, first found wins: `--lang` (cli.main takes it off the command line and calls `use`), ATTN_DRILL_LANG,
the saved preference (`attn-drill config lang zh`: config.json in the user's folder), then the locale as gettext
reads it (LANGUAGE, LC_ALL, LC_MESSAGES, LANG; `locale.getlocale()` last). zh, zh_CN, zh_SG, zh-Hans mean
Simplified Chinese; anything else is English. A worker the CLI starts gets ATTN_DRILL_LANG set to the language
chosen (process/spawn.worker_env), so it words its findings in it.

The words: English is where it always was (mistakes.toml, catalogue.toml, practice/questions.toml and the
screens' own strings in en/ui.toml); zh/ holds one file per catalogue, keyed by the same ids, with the same
{named} placeholders (tests/test_i18n.py holds the two in step). `t(key, **params)` is a screen's string.
"""

from __future__ import annotations

import json
import os
import re
import string
import sys
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

EN, ZH = "en", "zh"
LANGS = (EN, ZH)
HERE = Path(__file__).resolve().parent
CONFIG = "config.json"  # in paths.home(): {"lang": "zh"}
_ZH = re.compile(r"zh(?:[-_](?:cn|sg|hans)(?:[-_].*)?)?", re.IGNORECASE)

_chosen: str | None = None
flagged = False  # the language in use came from --lang (config says where it comes from)


def parse(value: str | None) -> str | None:
    """A language setting or locale name read as en or zh; None for empty. zh, zh_CN.UTF-8, zh_SG, zh-Hans are
    Simplified Chinese; C, POSIX, en_US, zh_TW and anything else are English."""
    if not value:
        return None
    first = value.split(":")[0].split(".")[0].split("@")[0].strip()  # LANGUAGE may list several: zh_CN:en
    if not first:
        return None
    return ZH if _ZH.fullmatch(first) else EN


def saved() -> str | None:
    """The preference `attn-drill config lang` saved, or None."""
    from attn_drill import paths

    try:
        return parse(str(json.loads((paths.home() / CONFIG).read_text(encoding="utf-8")).get("lang") or ""))
    except (OSError, ValueError, AttributeError):
        return None


def from_locale(env=None) -> str:
    """The locale's language, in gettext's order: LANGUAGE, LC_ALL, LC_MESSAGES, LANG, then locale.getlocale()."""
    env = os.environ if env is None else env
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        found = parse(env.get(name))
        if found:
            return found
    import locale

    try:
        return parse(locale.getlocale()[0]) or EN
    except ValueError:
        return EN


def choose(flag: str | None = None) -> str:
    """The language this command speaks (see the module's docstring for the order)."""
    return parse(flag) or parse(os.environ.get("ATTN_DRILL_LANG")) or saved() or from_locale()


def use(lang: str) -> None:
    """Speak `lang` from now on (in every worker started from here too: spawn.worker_env)."""
    global _chosen
    _chosen = lang


def lang() -> str:
    """The language in use: `use`'s, else chosen once."""
    global _chosen
    if _chosen is None:
        _chosen = choose()
    return _chosen


def zh() -> bool:
    return lang() == ZH


def reset() -> None:
    """Forget the choice (tests change the environment between commands)."""
    global _chosen, flagged
    _chosen, flagged = None, False


# -- the words -------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def table(language: str, name: str) -> dict:
    """i18n/<language>/<name>.toml, {} when there is none (English catalogues live beside their readers). A name
    may be a folder's file: "evidence/core" (the judge's sentences, one file per part of the judge) or
    "practice/explain"; t("evidence.core.engine.differs") reads that file's [engine] differs."""
    path = HERE / language / f"{name}.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


@lru_cache(maxsize=None)
def folders() -> frozenset:
    """The folders of files beside ui.toml (evidence, practice): the first part of their keys."""
    return frozenset(p.name for p in (HERE / EN).iterdir() if p.is_dir() and not p.name.startswith("_"))


def names() -> list[str]:
    """Every catalogue of screen words by its table name: ui and each folder's files (tests hold zh to them)."""
    return ["ui"] + [f"{f}/{p.stem}" for f in sorted(folders()) for p in sorted((HERE / EN / f).glob("*.toml"))]


class Params(dict):
    def __missing__(self, key: str) -> str:  # a missing parameter never breaks a sentence
        return "{" + key + "}"


def t(key: str, /, **params) -> str:
    """The screen string `key` ("report.evidence") in the language in use, its {names} filled from params;
    English where the zh catalogue lacks it (the parity test makes that a failure)."""
    section, _, name = key.rpartition(".")
    text = _lookup(lang(), section, name)
    if text is None:
        text = _lookup(EN, section, name)
    if text is None:
        raise KeyError(key)
    return fill(text, params) if params else text


_FORMATTER = string.Formatter()
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z0-9`]")


def fill(text: str, params: dict) -> str:
    """`text` with its {names} filled from `params` (a missing one stays as it is). In Chinese, a value in Latin
    letters or digits that meets a Chinese character of the text is set off by a space, as Chinese technical
    writing spaces them: 在{step}这一步 with step "kv 头的复制" reads 在 kv 头的复制这一步."""
    p = params if isinstance(params, Params) else Params(params)
    if lang() != ZH:
        return text.format_map(p)
    out, after_value = [], False
    for literal, field, spec, conv in _FORMATTER.parse(text):
        if literal:
            if after_value and out and _WORD.match(out[-1][-1:]) and _HAN.match(literal[0]):
                literal = " " + literal
            out.append(literal)
            after_value = False
        if field is not None:
            value = ("{" + field + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}").format_map(p)
            if value and out and _HAN.match(out[-1][-1:]) and _WORD.match(value[0]):
                value = " " + value
            out.append(value)
            after_value = bool(value)
    return "".join(out)


def _lookup(language: str, section: str, name: str):
    parts = section.split(".") if section else []
    if len(parts) >= 2 and parts[0] in folders():  # evidence.core.engine: evidence/core.toml's [engine]
        node, parts = table(language, f"{parts[0]}/{parts[1]}"), parts[2:]
    else:
        node = table(language, "ui")
    for part in parts:
        node = node.get(part, {})
    value = node.get(name)
    return value if isinstance(value, (str, list)) else None


# The terms a report glosses the first time it uses them (docs/glossary.zh.md's ★ rows): interviewers mix both
GLOSSARY = {
    "缩放": "scale", "掩码": "mask", "因果掩码": "causal mask", "填充掩码": "padding mask",
    "拆分多头": "split heads", "合并多头": "merge heads", "广播": "broadcast", "旋转位置编码": "RoPE",
    "注意力分数": "attention scores", "注意力权重": "attention weights", "分组查询注意力": "GQA",
    "KV 缓存": "KV cache", "投影": "projection", "残差连接": "residual connection", "滑动窗口": "sliding window",
    # compounds of a term above, glossed whole (never 缩放（scale）因子)
    "缩放因子": "scale factor", "注意力汇聚": "attention sink",
}
_TERMS = re.compile("|".join(sorted(map(re.escape, GLOSSARY), key=len, reverse=True)))


def gloss(text: str, seen: set) -> str:
    """`text` with the English term after each glossary term's first use in this report (`seen` holds those
    used already): 缩放（scale）. Nothing in English, and nothing where the text already gives it."""
    if lang() != ZH or not text:
        return text

    def one(m: re.Match) -> str:
        term = m.group()
        before = text[:m.start()]
        if before.count("（") > before.count("）") or before.count("(") > before.count(")"):
            return term  # inside brackets already: glossed at its next use outside them, never （…（…）…）
        after = text[m.end():m.end() + 2 + len(GLOSSARY[term])]
        if term in seen or GLOSSARY[term].lower() in after.lower():
            seen.add(term)
            return term
        seen.add(term)
        return f"{term}（{GLOSSARY[term]}）"

    return _TERMS.sub(one, text)
