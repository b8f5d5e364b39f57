"""The Chinese interface: which language is chosen, the zh catalogues in step with the English ones, and the
screens under zh (a real check, list, start, hint, help) in Chinese, in 80 columns, with --json unchanged."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attn_drill import catalogue, findings, i18n
from attn_drill.practice import questions
from attn_drill.say import cells
from attn_drill.store.config import save_lang

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = re.compile(r"\{(\w+)(?:![rsa])?(?::[^{}]*)?\}")
CJK = re.compile(r"[\u4e00-\u9fff]")
PROSE = re.compile(r"\b[A-Za-z]{3,} [a-z]{2,} [a-z]{3,}\b")  # three English words in a row: a sentence


def _english(name: str) -> dict:
    """The English catalogue `name` as the zh file keys it."""
    import tomllib

    if "/" in name:
        return i18n.table(i18n.EN, name)
    if name == "ui":  # and typer's help as cli.py words it, which zh's [help.cli] translates
        import typer.main

        from attn_drill import cli
        from attn_drill.commands.help import english_words

        data = json.loads(json.dumps(i18n.table(i18n.EN, "ui")))
        data["help"]["cli"] = english_words(typer.main.get_command(cli.get_app()))
        return data
    if name == "mistakes":
        return {slug: {k: v for k, v in t.items() if k != "level"}
                for slug, t in tomllib.loads(findings.MISTAKES.read_text(encoding="utf-8")).items()}
    if name == "exercises":
        data = tomllib.loads(catalogue.CATALOGUE.read_text(encoding="utf-8"))
        return {e["id"]: {"title": e["title"], "task": e["task"], "hints": e["hints"]} for e in data["exercise"]}
    data = tomllib.loads(questions.BANK.read_text(encoding="utf-8"))
    return {q["id"]: {"question": q["question"], "choices": q["choices"], "explanation": q["explanation"]}
            for q in data["question"]}


def differences(en: dict, zh: dict, where: str = "") -> list[str]:
    """Every key or placeholder one catalogue has and the other lacks, every list of another length, and every zh
    string left in English."""
    out = [f"{where}{k}: only in en" for k in en if k not in zh]
    out += [f"{where}{k}: only in zh" for k in zh if k not in en]
    for k in en.keys() & zh.keys():
        a, b = en[k], zh[k]
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{where}{k}.")
            continue
        if isinstance(a, list) != isinstance(b, list) or (isinstance(a, list) and len(a) != len(b)):
            out.append(f"{where}{k}: not the same list")
            continue
        for x, y in zip(a if isinstance(a, list) else [a], b if isinstance(b, list) else [b]):
            if sorted(PLACEHOLDER.findall(x)) != sorted(PLACEHOLDER.findall(y)):
                out.append(f"{where}{k}: placeholders {PLACEHOLDER.findall(x)} != {PLACEHOLDER.findall(y)}")
            if PROSE.search(re.sub(r"`[^`]*`|\{\w+\}", "", x)) and not CJK.search(y):
                out.append(f"{where}{k}: left in English: {y[:50]!r}")
    return out


@pytest.mark.parametrize("name", i18n.names() + ["mistakes", "exercises", "questions"])
def test_every_catalogue_has_the_same_keys_and_placeholders_in_zh(name):
    assert differences(_english(name), i18n.table(i18n.ZH, name)) == []


def test_every_zh_catalogue_has_an_english_one():
    zh = {f"{p.parent.name}/{p.stem}" for p in (i18n.HERE / i18n.ZH).glob("*/*.toml")}
    assert zh <= set(i18n.names())
    assert {p.stem for p in (i18n.HERE / i18n.ZH).glob("*.toml")} == {"ui", "mistakes", "exercises", "questions"}


def test_the_parity_check_fails_when_a_zh_key_goes_missing():
    zh = json.loads(json.dumps(i18n.table(i18n.ZH, "mistakes")))
    del zh["missing-scale"]["fix"]
    del zh["softmax-unstable"]
    zh["wrong-scale"]["title"] = "Scores are scaled by the wrong factor"
    slug, field = next((s, f) for s, t in zh.items() for f in ("title", "why", "fix")
                       if isinstance(t.get(f), str) and "{" in t[f])
    zh[slug][field] = PLACEHOLDER.sub("", zh[slug][field])
    found = differences(_english("mistakes"), zh)
    assert "missing-scale.fix: only in en" in found and "softmax-unstable: only in en" in found
    assert any(f.startswith("wrong-scale.title: left in English") for f in found)
    assert any(f.startswith(f"{slug}.{field}: placeholders") for f in found)


def test_zh_task_texts_fit_80_columns():
    wide = [(i, line) for i, t in i18n.table(i18n.ZH, "exercises").items()
            for line in t["task"].splitlines() if cells(line) > 78]
    assert wide == []


# -- which language ------------------------------------------------------------------------------
@pytest.mark.parametrize("value, lang", [
    ("zh", "zh"), ("zh_CN.UTF-8", "zh"), ("zh_SG", "zh"), ("zh-Hans", "zh"), ("zh_CN:en", "zh"),
    ("en_US.UTF-8", "en"), ("C.UTF-8", "en"), ("C", "en"), ("POSIX", "en"), ("zh_TW.UTF-8", "en"), ("fr_FR", "en"),
    ("", None), (None, None)])
def test_a_setting_or_locale_reads_as_en_or_zh(value, lang):
    assert i18n.parse(value) == lang


def test_the_locale_is_read_in_gettexts_order():
    assert i18n.from_locale({"LANGUAGE": "zh_CN", "LC_ALL": "en_US.UTF-8"}) == "zh"
    assert i18n.from_locale({"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}) == "en"
    assert i18n.from_locale({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}) == "zh"
    assert i18n.from_locale({"LANG": "zh_CN.UTF-8"}) == "zh"


def test_the_flag_beats_the_variable_which_beats_the_saved_setting_which_beats_the_locale(monkeypatch):
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.delenv("ATTN_DRILL_LANG")
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    assert i18n.choose() == "zh"
    save_lang("en")
    assert i18n.choose() == "en"
    monkeypatch.setenv("ATTN_DRILL_LANG", "zh")
    assert i18n.choose() == "zh"
    assert i18n.choose("en") == "en"


def _cli(*args, env=None, lang="zh_CN.UTF-8"):
    import os

    environ = {k: v for k, v in os.environ.items() if k not in ("ATTN_DRILL_LANG", "LANGUAGE", "LC_ALL",
                                                                 "LC_MESSAGES")}
    environ.update(LANG=lang, COLUMNS="80", **(env or {}))
    return subprocess.run([sys.executable, "-m", "attn_drill", *args], capture_output=True, text=True,
                          env=environ, timeout=300)


def test_under_a_chinese_locale_help_list_start_and_hint_are_chinese_and_fit_80_columns():
    for args in (["--help"], ["start", "sdpa"], ["list"], ["hint"], ["check", "--help"]):
        r = _cli(*args)
        assert r.returncode == 0, r.stderr
        assert CJK.search(r.stdout), args
        assert max(map(cells, r.stdout.splitlines())) <= 80, (args, r.stdout)
    assert "缩放点积注意力" in _cli("list").stdout


@pytest.mark.parametrize("lang", ["en_US.UTF-8", "C.UTF-8"])
def test_under_an_english_or_c_locale_nothing_is_chinese(lang):
    for args in (["--help"], ["start", "sdpa"], ["list"], ["hint"]):
        r = _cli(*args, lang=lang)
        assert r.returncode == 0 and not CJK.search(r.stdout + r.stderr), (args, r.stdout)


def test_lang_flag_anywhere_and_the_variable_work_whatever_the_locale():
    assert CJK.search(_cli("list", "--lang", "zh", lang="en_US.UTF-8").stdout)
    assert CJK.search(_cli("--lang=zh", "list", lang="C.UTF-8").stdout)
    assert CJK.search(_cli("list", lang="C.UTF-8", env={"ATTN_DRILL_LANG": "zh"}).stdout)
    assert not CJK.search(_cli("list", "--lang", "en").stdout)
    bad = _cli("list", "--lang", "fr")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 2 and "--lang" in bad.stderr


def test_a_bad_seed_is_one_chinese_error_line_and_exit_2():
    r = _cli("--lang", "zh", "check", "x.py", "--seed", "-1", lang="en_US.UTF-8")
    assert r.returncode == 2, r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("错误：--seed ") and "2**63-1" in first and "-1" in first, r.stderr
    assert not PROSE.search(r.stderr), r.stderr  # no English sentence left


def test_durations_read_in_the_language_in_use():
    from attn_drill.render.listing import duration

    try:
        i18n.use(i18n.ZH)
        assert [duration(s) for s in (45, 185, 3720, None)] == ["45 秒", "3 分 05 秒", "1 小时 02 分", "-"]
        i18n.use(i18n.EN)
        assert [duration(s) for s in (45, 185, 3720, None)] == ["45s", "3m 05s", "1h 02m", "-"]
    finally:
        i18n.reset()


def test_a_latin_value_beside_a_chinese_character_is_set_off_by_a_space():
    key = "evidence.core.localise.departs"
    try:
        i18n.use(i18n.ZH)
        assert i18n.t(key, step="kv 头的复制", how="x").startswith("你的计算在 kv 头的复制这一步")
        assert i18n.t(key, step="缩放", how="x").startswith("你的计算在缩放这一步")  # Chinese meets Chinese
        assert i18n.fill("第 {line} 行{x}个", {"line": 3, "x": "W_q"}) == "第 3 行 W_q 个"  # spaced once only
        assert i18n.fill("值{x:.2f}", {"x": 3.14159}) == "值 3.14"  # the format spec still applies
        i18n.use(i18n.EN)
        assert i18n.t(key, step="the scale", how="x") == "your computation departs from the reference at the scale: x"
    finally:
        i18n.reset()


def test_a_term_is_glossed_whole_and_never_inside_brackets():
    try:
        i18n.use(i18n.ZH)
        assert i18n.gloss("缩放因子错了，缩放放错了", set()) == "缩放因子（scale factor）错了，缩放（scale）放错了"
        # first met inside brackets: glossed at its next use outside them, never （…（…）…）
        assert i18n.gloss("（带掩码的）掩码", set()) == "（带掩码的）掩码（mask）"
        i18n.use(i18n.EN)
        assert i18n.gloss("缩放", set()) == "缩放"  # English reports gloss nothing
    finally:
        i18n.reset()


def test_config_lang_is_kept_and_auto_forgets_it():
    r = _cli("config", "lang", "zh", lang="en_US.UTF-8")
    assert r.returncode == 0, r.stderr
    assert CJK.search(_cli("list", lang="en_US.UTF-8").stdout)
    assert "attn-drill config lang" in _cli("config", lang="en_US.UTF-8").stdout
    assert "(from --lang)" in _cli("config", "--lang", "en", lang="en_US.UTF-8").stdout
    assert _cli("config", "lang", "auto", lang="en_US.UTF-8").returncode == 0
    assert not CJK.search(_cli("list", lang="en_US.UTF-8").stdout)
    assert _cli("config", "lang", "fr").returncode == 2
    assert _cli("config", "colour", "on").returncode == 2


# -- a real check ---------------------------------------------------------------------------------
UNSCALED = '''import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
'''


@pytest.fixture(scope="module")
def unscaled(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("zh") / "sdpa.py"
    path.write_text(UNSCALED)
    return path


def test_a_failing_check_names_the_mistake_in_chinese_in_80_columns(unscaled):
    r = _cli("check", str(unscaled), "--seed", "3", "--no-record")
    assert r.returncode == 1, r.stderr
    zh = findings.WORDING  # the test process speaks English: read the zh title from the catalogue
    unglossed = re.sub(r"（[A-Za-z ]+）", "", r.stdout)  # a term's first use is followed by its English
    assert i18n.table(i18n.ZH, "mistakes")["missing-scale"]["title"] in unglossed
    assert "注意力分数（attention scores）" in r.stdout
    assert "missing-scale" in r.stdout and "未通过" in r.stdout and "你的代码行" in r.stdout
    assert zh["missing-scale"][1] not in r.stdout
    assert max(map(cells, r.stdout.splitlines())) <= 80, r.stdout


def test_json_keeps_its_keys_and_slugs_in_both_languages(unscaled):
    en = json.loads(_cli("check", str(unscaled), "--seed", "3", "--json", "--no-record", lang="C.UTF-8").stdout)
    zh = json.loads(_cli("check", str(unscaled), "--seed", "3", "--json", "--no-record").stdout)
    assert en.keys() == zh.keys()
    assert [f["slug"] for f in en["findings"]] == [f["slug"] for f in zh["findings"]] == ["missing-scale"]
    assert en["findings"][0].keys() == zh["findings"][0].keys()
    assert [s["name"] for s in en["stages"]] == [s["name"] for s in zh["stages"]]
    assert CJK.search(zh["findings"][0]["title"]) and not CJK.search(json.dumps(en))


@pytest.mark.parametrize("width", [80, 79, 60, 45])
def test_a_chinese_message_with_commands_wraps_by_cells_and_never_starts_a_line_with_a_closing_mark(width):
    from attn_drill.render import report as render

    i18n.use(i18n.ZH)
    try:
        out = render.recording(width)
        render.say_key(out, "stats.nothing", start=("attn-drill start sdpa", "bold cyan"),
                       check=("attn-drill check", "bold cyan"), mock=("attn-drill mock", "bold cyan"))
        lines = out.export_text().rstrip("\n").split("\n")
    finally:
        i18n.use(i18n.EN)
    assert all(cells(line) <= width for line in lines), lines
    assert not any(line[:1] in "，。、；：！？）" for line in lines), lines
    assert "attn-drill mock" in "\n".join(lines)  # a command is never cut
