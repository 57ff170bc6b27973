"""Shared command-line plumbing: EnvConfig fields as flags, and ``--config`` files.

Every :class:`~fedenv.config.EnvConfig` field ``name`` becomes a flag ``--name-with-dashes``. A
``--config FILE`` (YAML or JSON mapping flag names, with dashes or underscores, to values) sets
defaults; flags given on the command line win over the file. ``--preset NAME`` (:mod:`fedenv.presets`)
sets a paper task's fields first; other flags override them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import typing
from pathlib import Path

import yaml

from fedenv.config import CHOICES, EnvConfig
from fedenv.presets import PRESETS, apply_preset


def _flag_type(hint):
    """``int``, ``float`` or ``str`` for a field type hint (``X | None`` counts as ``X``)."""
    options = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return options[0] if options[0] in (int, float) else str


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls, prefix: str = "", skip=(), allowed=None) -> None:
    """Add one flag per field of dataclass ``cls`` (default ``None`` = keep the dataclass default);
    ``allowed`` maps field names to the values their help lists (checked by the dataclass, not argparse)."""
    hints = typing.get_type_hints(cls)
    group = parser.add_argument_group(f"{cls.__name__} fields")
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag = "--" + prefix + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        help_text = f"(default: {default})"
        if f.name in (allowed or {}):
            help_text += f"; one of: {', '.join(allowed[f.name])}"
        if hints[f.name] is bool:
            group.add_argument(flag, dest=prefix.replace("-", "_") + f.name, action=argparse.BooleanOptionalAction,
                               default=None, help=help_text)
        elif typing.get_origin(hints[f.name]) is tuple:
            group.add_argument(flag, dest=prefix.replace("-", "_") + f.name, type=int, nargs="+", default=None,
                               help=help_text)
        else:
            group.add_argument(flag, dest=prefix.replace("-", "_") + f.name, type=_flag_type(hints[f.name]),
                               default=None, help=help_text)


def dataclass_from_args(cls, args: argparse.Namespace, base=None, prefix: str = ""):
    """Build ``cls`` from parsed flags: fields whose flag was not given keep ``base``'s (or the default) value."""
    base = base if base is not None else cls()
    values = {}
    for f in dataclasses.fields(cls):
        value = getattr(args, prefix.replace("-", "_") + f.name, None)
        if value is not None:
            values[f.name] = tuple(value) if isinstance(value, list) else value
    return dataclasses.replace(base, **values)


def add_env_arguments(parser: argparse.ArgumentParser) -> None:
    """``--preset`` and one flag per :class:`EnvConfig` field."""
    parser.add_argument("--preset", choices=tuple(PRESETS), default=None,
                        help="paper task preset (fedenv.presets); other flags override its values")
    add_dataclass_arguments(parser, EnvConfig, allowed=CHOICES)


def env_config_from_args(args: argparse.Namespace, base: EnvConfig | None = None) -> EnvConfig:
    """The validated :class:`EnvConfig` of the parsed flags: ``base`` (default :class:`EnvConfig`), then
    the ``--preset`` fields, then the flags given."""
    if getattr(args, "preset", None):
        base = apply_preset(args.preset, base)
    return dataclass_from_args(EnvConfig, args, base).validate()


def load_config_file(path: str | Path) -> dict:
    """Read a YAML or JSON mapping of flag names to values; keys are normalised to ``dest`` names.

    Raises:
        FileNotFoundError: no such file. ValueError: the file does not hold a mapping.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file {path} not found")
    text = path.read_text()
    values = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if not isinstance(values, dict):
        raise ValueError(f"config file {path} must hold a mapping of flag names to values")
    return {key.lstrip("-").replace("-", "_"): value for key, value in values.items()}


def parse_with_config_file(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """Parse ``argv``; values of ``--config FILE`` become defaults that explicit flags override.

    Raises:
        SystemExit (argparse error): the file names a key that is not a flag of ``parser``.
    """
    args = parser.parse_args(argv)
    if getattr(args, "config", None):
        values = load_config_file(args.config)
        known = {action.dest for action in parser._actions}
        unknown = sorted(set(values) - known)
        if unknown:
            parser.error(f"config file {args.config} has unknown keys {unknown}")
        parser.set_defaults(**values)
        args = parser.parse_args(argv)
    return args
