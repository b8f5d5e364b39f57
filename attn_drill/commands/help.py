"""Typer's help in Chinese: each command's and option's words from the zh catalogue ([help.cli] in
i18n/zh/ui.toml, keyed by command and parameter name; the English stays in cli.py, where typer reads it), click's
own words (Usage, Options, Commands), and wrapping that counts a Chinese character as two columns. In English
none of this runs. No torch."""

from __future__ import annotations

from attn_drill import i18n
from attn_drill.i18n import t

CLICK = {"Usage:": "help.click.usage", "Options": "help.click.options", "Commands": "help.click.commands",
         "Arguments": "help.click.arguments", "Show this message and exit.": "help.help"}


def localise(group) -> None:
    """Put the zh words on click's `group` (typer.main.get_command of cli.get_app()) and its commands, and on
    the click that typer carries (typer._click): its headings and its wrapping."""
    import typer.core
    from typer._click import formatting

    words = i18n.table(i18n.ZH, "ui").get("help", {}).get("cli", {})
    for name, command in group.commands.items():
        own = words.get(name, {})
        command.help = own.get("help", command.help)
        command.short_help = t(f"help.commands.{name}")
        for param in command.params:
            if param.name in own and getattr(param, "help", None):
                param.help = own[param.name]
    typer.core._ = lambda text: t(CLICK[text]) if text in CLICK else text
    formatting.wrap_text = _wrap_text(formatting.wrap_text)
    usage = formatting.HelpFormatter.write_usage
    formatting.HelpFormatter.write_usage = lambda self, prog, args="", prefix=None: usage(
        self, prog, args, t("help.click.usage") + " " if prefix is None else prefix)


def _wrap_text(english):
    """click's wrap_text, but a paragraph with Chinese in it wraps between characters (two columns each)."""
    from attn_drill.say import fill

    def wrap_text(text: str, width: int = 78, initial_indent: str = "", subsequent_indent: str = "",
                  preserve_paragraphs: bool = False) -> str:
        if not any(ord(c) >= 0x2E80 for c in text):
            return english(text, width, initial_indent, subsequent_indent, preserve_paragraphs)
        out = []
        for paragraph in text.split("\n\n"):
            lines = fill(" ".join(paragraph.split()), width - len(subsequent_indent)).split("\n")
            out.append("\n".join([initial_indent + lines[0]] + [subsequent_indent + line for line in lines[1:]]))
        return "\n\n".join(out)

    return wrap_text


def english_words(group) -> dict:
    """{command: {"help": ..., parameter: ...}} as cli.py words them: what [help.cli] translates."""
    out = {}
    for name, command in group.commands.items():
        out[name] = {"help": command.help}
        out[name].update({p.name: p.help for p in command.params if getattr(p, "help", None)})
    return out


# click's usage errors, as typer's click words them (it has no catalogue of its own): each pattern's {names}
# refill the zh sentence; a message none of them matches stays as click wrote it
ERRORS = (
    (r"No such command '(?P<name>[^']*)'\.", "no_command"),
    (r"Did you mean '(?P<name>[^']*)'\?", "did_you_mean"),
    (r"No such option: (?P<name>\S+)", "no_option"),
    (r"\(Possible options: (?P<names>[^)]*)\)", "possible"),
    (r"Invalid value for '(?P<name>[^']*)': (?P<why>.*)", "invalid"),
    (r"Input should be a valid (?P<kind>\w+)(?:, .*)?", "not_a"),
    (r"Option '(?P<name>[^']*)' requires an argument\.", "needs_value"),
    (r"Option '(?P<name>[^']*)' does not take a value\.", "takes_no_value"),
    (r"Missing argument '(?P<name>[^']*)'\.", "missing_argument"),
    (r"Missing option '(?P<name>[^']*)'\.", "missing_option"),
    (r"Got unexpected extra argument(?:\(s\)|s)? \((?P<args>[^)]*)\)", "extra"),
)


def usage_error(message: str) -> str:
    """click's usage error in the language in use (English: as click wrote it)."""
    import re

    if not i18n.zh():
        return message
    for pattern, key in ERRORS:
        message = re.sub(pattern, lambda m, key=key: t(f"help.click_errors.{key}", **{
            k: (t(f"help.click_errors.kinds.{v}") if k == "kind" and v in ("integer", "number") else v)
            for k, v in m.groupdict().items()}), message)
    return re.sub(r" (?=[（，。？])|(?<=[。？]) ", "", message)  # no space beside Chinese punctuation
