"""Sphinx extension: the reference pages' tables, generated from the code when the site is built.

A line ``<!-- generated: KIND [NAME] -->`` in a page is replaced, when Sphinx reads the page, by

- ``envconfig``: one table per ``--help`` group of :class:`fedenv.config.EnvConfig`'s fields (flag, field,
  type, default, description from ``metadata["help"]``, allowed names from :data:`fedenv.config.CHOICES`);
- ``vdnconfig``: the same for :class:`agents.config.VDNConfig` (flags ``--vdn-*``);
- ``flags NAME``: every flag of command ``NAME`` (a key of :data:`COMMANDS`), one table per argument group
  (its subcommands' flags for ``python -m fedenv.traces``), the EnvConfig and VDNConfig groups by a pointer
  to their tables.

So the reference cannot drift from the flags: a flag added to a parser appears on the next build.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import re
import typing

from fedenv.cli import field_help

COMMANDS = {
    "train_agents.py": "train_agents",
    "evaluate.py": "evaluate",
    "python -m fedenv.calibrate": "fedenv.calibrate",
    "python -m fedenv.evaluation.curves": "fedenv.evaluation.curves",
    "python -m fedenv.traces": "fedenv.traces.__main__",
    "python benchmarks/readme_results.py": "benchmarks.readme_results",
}
"""Documented commands -> the module whose ``build_parser()`` builds their parser."""
MARKER = re.compile(r"^<!-- generated: (?P<kind>[a-z]+)(?: (?P<name>.+?))? -->$", re.MULTILINE)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _type_name(hint) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def dataclass_tables(cls, prefix: str = "") -> str:
    """Markdown tables of ``cls``'s fields, one per ``metadata["group"]`` (in field order)."""
    from fedenv.config import CHOICES

    hints = typing.get_type_hints(cls)
    groups: dict[str, list[str]] = {}
    for f in dataclasses.fields(cls):
        group = f.metadata.get("group", f"{cls.__name__} fields")
        allowed = CHOICES.get(f.name) if cls.__name__ == "EnvConfig" else None
        flag = "--" + prefix + f.name.replace("_", "-")
        help_text = field_help(f, allowed).replace("%%", "%")
        groups.setdefault(group, []).append(
            f"| `{flag}` | `{f.name}` | `{_cell(_type_name(hints[f.name]))}` | {_cell(help_text)} |")
    out = []
    for group, rows in groups.items():
        out += [f"### {group[0].upper() + group[1:]}", "", "| flag | field | type | description (default) |",
                "|---|---|---|---|", *rows, ""]
    return "\n".join(out)


DATACLASS_GROUPS = ("federation and data", "local training", "aggregation", "traces", "observation and reward",
                    "engine", "VDNConfig fields")


def _is_config_group(group: argparse._ArgumentGroup) -> bool:
    return group.title in DATACLASS_GROUPS or (group.title or "").startswith("vdn")


def _flag_rows(parser: argparse.ArgumentParser, actions) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in actions:
        if action.help == argparse.SUPPRESS:
            continue
        names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.metavar or action.dest}`"
        metavar = ""
        if action.option_strings and action.nargs != 0:
            metavar = formatter._format_args(action, formatter._get_default_metavar_for_optional(action))
        help_text = formatter._expand_help(action) if action.help else ""
        rows.append(f"| {names} | {_cell(metavar) and '`' + _cell(metavar) + '`'} | {_cell(help_text)} |")
    return rows


def parser_tables(parser: argparse.ArgumentParser, heading: str = "###") -> str:
    """Markdown tables of every flag of ``parser``, one per argument group; subcommands each get a section."""
    out = []
    skipped = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if not isinstance(a, argparse._SubParsersAction)]
        if _is_config_group(group):
            skipped.append(group.title)
            continue
        if actions:
            out += [f"{heading} {group.title[0].upper() + group.title[1:]}", "", "| flag | value | description |",
                    "|---|---|---|", *_flag_rows(parser, actions), ""]
        for action in group._group_actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out += [f"{heading} `{name}`", "", sub.description or _subcommand_help(action, name), "",
                            parser_tables(sub, heading + "#")]
    if skipped:
        vdn = [g for g in skipped if g not in DATACLASS_GROUPS or g == "VDNConfig fields"]
        env = [g for g in skipped if g in DATACLASS_GROUPS and g != "VDNConfig fields"]
        if env:
            out.append(f"Plus one flag per `EnvConfig` field, in the groups {', '.join(env)}: "
                       "[EnvConfig fields](envconfig.md).")
        if vdn:
            out.append("Plus one flag per `VDNConfig` field, `--vdn-*`: [VDNConfig fields](envconfig.md#vdnconfig).")
        out.append("")
    return "\n".join(out)


def _subcommand_help(action: argparse._SubParsersAction, name: str) -> str:
    for choice in action._choices_actions:
        if choice.dest == name:
            return choice.help or ""
    return ""


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of documented command ``name`` (a key of :data:`COMMANDS`)."""
    if name not in COMMANDS:
        raise ValueError(f"unknown command {name!r}; documented: {', '.join(COMMANDS)}")
    return importlib.import_module(COMMANDS[name]).build_parser()


def generate(kind: str, name: str | None) -> str:
    """The markdown of one marker."""
    if kind == "envconfig":
        from fedenv.config import EnvConfig
        return dataclass_tables(EnvConfig)
    if kind == "vdnconfig":
        from agents.config import VDNConfig
        return dataclass_tables(VDNConfig, prefix="vdn-")
    if kind == "flags" and name:
        return parser_tables(command_parser(name))
    raise ValueError(f"unknown generated block {kind!r} {name or ''}")


def _source_read(app, docname: str, source: list[str]) -> None:
    source[0] = MARKER.sub(lambda m: generate(m["kind"], m["name"]), source[0])


def setup(app):
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
