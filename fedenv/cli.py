"""Shared command-line plumbing: a parser with short usage errors, dataclass fields as flags with their
descriptions, and ``--config`` files.

Every field ``name`` of a dataclass (:class:`~fedenv.config.EnvConfig`, ``agents.vdn.VDNConfig``) becomes
a flag ``--name-with-dashes`` whose help is the field's ``metadata["help"]`` and its default, in the
argument group ``metadata["group"]`` (one group per class for fields without one). A ``--config FILE``
(YAML or JSON mapping flag names, with dashes or underscores, to values) counts as flags given first,
parsed and checked as flags are; flags given on the command line win over the file; flat keys of earlier
releases that are now component options (``dominant_fraction``) still work (:func:`with_option_aliases`).
``--preset NAME`` (:mod:`fedenv.presets`) sets a paper task's fields first; other flags override them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import textwrap
import typing
from pathlib import Path

import numpy as np
import yaml

from fedenv.config import CHOICES, COMPONENTS, EnvConfig, option_aliases
from fedenv.options import allowed_text, options_class
from fedenv.presets import PRESETS, apply_preset


class FlagParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` for commands with many flags: the usage line is ``PROG [options]``
    (the flags are listed by ``--help``, in groups), the description is printed as written, and a usage
    error prints three lines to stderr, the usage, ``PROG: error: MESSAGE`` and a pointer to ``--help``,
    then exits with status 2 (as argparse does).

    The argument groups of dataclass fields (:func:`add_dataclass_arguments`: the EnvConfig and VDNConfig
    groups, dozens of flags) are *brief* in ``--help``: their flags by name only, under the group's title;
    ``--help-all`` prints every flag with its description (``format_help()`` returns that full text)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("usage", "%(prog)s [options]")
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.brief_groups: list[argparse._ArgumentGroup] = []

    def error(self, message: str) -> typing.NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\nTry '{self.prog} --help' for more information.\n")

    def add_brief_group(self, title: str, description: str | None = None) -> argparse._ArgumentGroup:
        """An argument group listed by flag names only in ``--help``; the first one adds ``--help-all``."""
        if not self.brief_groups:
            self.add_argument("--help-all", action=_HelpAllAction,
                              help="show every flag with its description (--help lists the configuration "
                                   "groups' flags by name only)")
        group = self.add_argument_group(title, description)
        self.brief_groups.append(group)
        return group

    def format_brief_help(self, width: int = 100) -> str:
        """``--help``'s text: the full help of the command's own flags, the brief groups' flag names."""
        if not self.brief_groups:
            return self.format_help()
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        for group in self._action_groups:
            formatter.start_section(group.title)
            if group in self.brief_groups:
                names = " ".join("/".join(a.option_strings) for a in group._group_actions)
                formatter.add_text(textwrap.fill(names, width, break_on_hyphens=False))
            else:
                formatter.add_text(group.description)
                formatter.add_arguments(group._group_actions)
            formatter.end_section()
        formatter.add_text(f"Each flag's description: {self.prog} --help-all")
        return formatter.format_help()

    def print_help(self, file=None) -> None:
        self._print_message(self.format_brief_help(), file or sys.stdout)


class _HelpAllAction(argparse.Action):
    """``--help-all``: print the full help (every flag's description) and exit."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser._print_message(parser.format_help(), sys.stdout)
        parser.exit()


UNSET_WORD = "none"
"""The value that unsets an optional flag (a field typed ``X | None``): ``--train-samples none``, or ``null``
in a ``--config`` file; on the command line it undoes a value that a config file gave."""


class _Unset:
    """The parsed value of :data:`UNSET_WORD` (``None`` itself means a flag not given)."""

    def __repr__(self) -> str:
        return UNSET_WORD


UNSET = _Unset()


def _flag_type(hint):
    """``int``, ``float`` or ``str`` for a field type hint; for ``X | None``, a parser of ``X`` that also
    takes :data:`UNSET_WORD` (case-insensitive) and returns :data:`UNSET` for it."""
    options = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    kind = options[0] if options[0] in (int, float) else str
    if type(None) not in typing.get_args(hint):
        return kind

    def optional(text: str):
        return UNSET if text.strip().lower() == UNSET_WORD else kind(text)
    optional.__name__ = f"{kind.__name__} or {UNSET_WORD}"  # argparse's "invalid float or none value"
    optional.unsettable = True
    return optional


def _unsettable(flag_type) -> bool:
    """Whether a flag's ``type`` is :func:`_flag_type`'s parser of an optional field (it takes :data:`UNSET_WORD`)."""
    return getattr(flag_type, "unsettable", False)


def _default_text(default, unsettable: bool) -> str:
    """The ``(default: ...)`` that ends a flag's help, saying that :data:`UNSET_WORD` unsets an optional one."""
    return f"(default: {default}{f'; {UNSET_WORD} unsets it' if unsettable else ''})"


def _given(value):
    """A parsed flag value as the field takes it: :data:`UNSET` becomes ``None``, lists become tuples."""
    return None if value is UNSET else tuple(value) if isinstance(value, list) else value


def field_help(f: dataclasses.Field, allowed=None, unsettable: bool = False) -> str:
    """The ``--help`` text of dataclass field ``f``: ``metadata["help"]`` (when the field has one), the
    ``allowed`` names (when given) and the default, with ``%`` escaped for argparse; for an ``unsettable``
    (optional) field, that :data:`UNSET_WORD` unsets it."""
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    if isinstance(default, tuple):
        default = " ".join(map(str, default))
    text = f.metadata.get("help", "")
    if allowed is not None:
        text += f"{'; ' if text else ''}allowed: {', '.join(allowed)}"
    return f"{text} {_default_text(default, unsettable)}".lstrip().replace("%", "%%")


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls, prefix: str = "", skip=(), allowed=None) -> None:
    """Add one flag ``--PREFIXfield-name`` per field of dataclass ``cls`` (default ``None`` = keep the
    dataclass default), with :func:`field_help` as help, in the argument group of the field's
    ``metadata["group"]`` (fields without one share the group ``"CLS fields"``); ``allowed`` maps field
    names to the names their help lists (checked by the dataclass's ``validate``, not by argparse)."""
    hints = typing.get_type_hints(cls)
    groups = {}
    for f in dataclasses.fields(cls):
        if f.name in skip or typing.get_origin(hints[f.name]) is dict:  # mappings: set by their own flags
            continue
        group = f.metadata.get("group")
        title = group or f"{cls.__name__} fields"
        if title not in groups:  # a class without groups is described by its docstring's first line
            summary = None if group else (cls.__doc__ or "").strip().split("\n")[0]
            add_group = parser.add_brief_group if isinstance(parser, FlagParser) else parser.add_argument_group
            groups[title] = add_group(title, summary)
        kwargs = {"dest": prefix.replace("-", "_") + f.name, "default": None}
        if hints[f.name] is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif typing.get_origin(hints[f.name]) is tuple:
            kwargs.update(type=typing.get_args(hints[f.name])[0], nargs="+")
        else:
            kwargs["type"] = _flag_type(hints[f.name])
        kwargs["help"] = field_help(f, (allowed or {}).get(f.name), _unsettable(kwargs.get("type")))
        groups[title].add_argument("--" + prefix + f.name.replace("_", "-"), **kwargs)


def dataclass_from_args(cls, args: argparse.Namespace, base=None, prefix: str = ""):
    """Build ``cls`` from parsed flags: fields whose flag was not given keep ``base``'s (or the default) value;
    an optional field given :data:`UNSET_WORD` becomes ``None``."""
    base = base if base is not None else cls()
    values = {}
    for f in dataclasses.fields(cls):
        value = getattr(args, prefix.replace("-", "_") + f.name, None)
        if value is not None:
            values[f.name] = _given(value)
    return dataclasses.replace(base, **values)


def add_env_arguments(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """``--preset``, one flag per :class:`EnvConfig` field (but those named in ``skip``) and one per option
    of every registered component (:func:`add_component_arguments`)."""
    parser.add_argument("--preset", choices=tuple(PRESETS), default=None,
                        help="a paper task of FedMarl's evaluation (fedenv.presets: 100 clients, 10 candidates, "
                             "5 local epochs, the task's dataset and model); other flags override its values")
    add_dataclass_arguments(parser, EnvConfig, skip=skip, allowed=CHOICES)
    add_component_arguments(parser)


def component_flags() -> dict[str, tuple[str, str, dataclasses.Field]]:
    """``dest -> (kind, component name, option field)`` for every option of every registered component of
    :data:`~fedenv.config.COMPONENTS` that declares ``Options``: the flag ``--NAME-OPTION`` (dashes), dest
    ``NAME_OPTION`` (underscores, as config-file keys are normalised)."""
    flags = {}
    for kind, registry in COMPONENTS.items():
        for name in registry:
            options = options_class(registry.get(name))
            for f in dataclasses.fields(options) if options is not None else ():
                flags[f"{name}_{f.name}".replace("-", "_")] = (kind, name, f)
    return flags


def add_component_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag ``--NAME-OPTION`` per option of every registered component (:func:`component_flags`), in
    the argument group ``"<kind> NAME options"``, with the option's help, range and default."""
    groups = {}
    for dest, (kind, name, f) in component_flags().items():
        registry = COMPONENTS[kind]
        if (kind, name) not in groups:
            groups[kind, name] = parser.add_argument_group(
                f"{registry.kind} {name} options", f"used wherever {kind} {name} runs")
        hint = typing.get_type_hints(options_class(registry.get(name)))[f.name]
        kwargs = {"action": argparse.BooleanOptionalAction} if hint is bool else {"type": _flag_type(hint)}
        allowed = allowed_text(f)
        help_text = (f"{f.metadata.get('help', '')}{'; ' + allowed if allowed else ''} "
                     f"{_default_text(f.default, _unsettable(kwargs.get('type')))}")
        groups[kind, name].add_argument("--" + dest.replace("_", "-"), dest=dest, default=None,
                                        help=help_text.replace("%", "%%"), **kwargs)


def component_options_from_args(args: argparse.Namespace, config: EnvConfig) -> EnvConfig:
    """``config`` with the component-option flags given in ``args`` added to its ``<kind>_options``
    (``--fedca-score acc``: ``aggregation_options["fedca"]["score"] = "acc"``)."""
    values = {kind: {name: dict(options) for name, options in getattr(config, f"{kind}_options").items()}
              for kind in COMPONENTS}
    for dest, (kind, name, f) in component_flags().items():
        value = getattr(args, dest, None)
        if value is not None:
            values[kind].setdefault(name, {})[f.name] = _given(value)
    return dataclasses.replace(config, **{f"{kind}_options": values[kind] for kind in COMPONENTS})


def check_options_used(config: EnvConfig) -> None:
    """For commands that run ``config``'s components only (``train_agents.py``, ``python -m
    fedenv.calibrate``): refuse options given for a component the configuration does not use, so that
    none is dropped silently (``evaluate.py`` instead notes them: its baselines may run other rules).

    Raises:
        ValueError: names the options, their component and the one in use.
    """
    for kind, registry in COMPONENTS.items():
        unused = sorted(name for name, options in getattr(config, f"{kind}_options").items()
                        if options and name != getattr(config, kind))
        if unused:
            flags = [f"--{name}-{key}".replace("_", "-") for name in unused
                     for key in getattr(config, f"{kind}_options")[name]]
            raise ValueError(f"{', '.join(flags)}: options of {registry.kind} {', '.join(map(repr, unused))}, but "
                             f"{kind}={getattr(config, kind)!r}; give --{kind} {unused[0]} or drop them")


def env_config_from_args(args: argparse.Namespace, base: EnvConfig | None = None) -> EnvConfig:
    """The validated :class:`EnvConfig` of the parsed flags: ``base`` (default :class:`EnvConfig`), then
    the ``--preset`` fields, then the flags given (component options included). When ``--clients-per-round``
    is not given, it is at most ``--num-clients`` (``--num-clients 5`` alone gives 5 candidates, not a refusal
    of the default 10).

    Raises:
        ValueError: a field's value is not allowed (:meth:`EnvConfig.validate`).
    """
    if getattr(args, "preset", None):
        base = apply_preset(args.preset, base)
    config = dataclass_from_args(EnvConfig, args, base)
    if getattr(args, "clients_per_round", None) is None and 1 <= config.num_clients < config.clients_per_round:
        config = dataclasses.replace(config, clients_per_round=config.num_clients)
    return component_options_from_args(args, config).validate()


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
    """Parse ``argv``; values of ``--config FILE`` count as flags given before ``argv``, so explicit flags
    override them. Each value is turned into the flag's command-line tokens (:func:`config_file_tokens`)
    and parsed by ``parser`` as the flag is: the same types, ``nargs`` and choices.

    Raises:
        SystemExit (argparse error, one line naming the file and the key): an unknown key, or a value
            the flag would not take.
    """
    args = parser.parse_args(argv)
    if getattr(args, "config", None):
        actions = {action.dest: action for action in parser._actions if action.option_strings}
        values = with_option_aliases(load_config_file(args.config), set(actions))
        unknown = sorted(set(values) - set(actions))
        if unknown:
            parser.error(f"config file {args.config} has unknown keys {unknown}")
        tokens = []
        for key, value in values.items():
            try:
                tokens += config_file_tokens(actions[key], value)
            except ValueError as error:
                parser.error(f"config file {args.config}: key {key!r}: {error}")
        args = parser.parse_args([*tokens, *(argv if argv is not None else sys.argv[1:])])
    return args


def with_option_aliases(values: dict, dests: set[str]) -> dict:
    """Config-file ``values`` with each flat key of an earlier release that is now a component option
    (:func:`fedenv.config.option_aliases`: ``dominant_fraction``, ``fedpdp_unnormalised``) given to every
    option flag it became (``fedmarl_dominant_fraction``; ``fedpdp_unnormalised`` and ``fedca_unnormalised``),
    among the parser's ``dests``; keys given in the new form win."""
    out = dict(values)
    for alias, targets in option_aliases().items():
        if alias in values:
            for _, name, f in targets:
                dest = f"{name}_{f.name}".replace("-", "_")
                if dest in dests and (dest not in values or dest == alias):
                    out[dest] = values[alias]
            if alias not in dests:
                del out[alias]
    return out


TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")
"""Strings a config file may give for a boolean flag (YAML 1.1's words, case-insensitive, and 1/0)."""


def _truth(value) -> bool:
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise ValueError(f"{value!r} is not a boolean; allowed: true, false ({', '.join(TRUE_WORDS + FALSE_WORDS)})")


def config_file_tokens(action: argparse.Action, value) -> list[str]:
    """The command-line tokens that give flag ``action`` the config-file ``value``.

    A boolean flag takes a boolean or one of :data:`TRUE_WORDS`/:data:`FALSE_WORDS` (``--x``/``--no-x``);
    a flag of several values takes a list or one scalar; any other flag one scalar. Each value is
    checked with the flag's ``type`` and ``choices``.

    An optional flag (a field typed ``X | None``) takes ``null`` or an empty entry as :data:`UNSET_WORD`: the
    field's unset value.

    Raises:
        ValueError: the value does not fit the flag (names the value and what the flag takes), or there is
            none for a flag that cannot be unset (``lr:`` or ``lr: null``; a flag's default is what leaving
            the key out gives).
    """
    flag = action.option_strings[0]
    if value is None and _unsettable(action.type):
        return [flag, UNSET_WORD]
    if value is None:
        raise ValueError(f"no value (an empty entry or null); give {flag} a value or remove the key")
    if isinstance(action, argparse.BooleanOptionalAction):
        return [flag if _truth(value) else "--no-" + flag[2:]]
    if action.nargs == 0:
        return [flag] if _truth(value) == bool(action.const) else []
    many = action.nargs in ("*", "+") or isinstance(action.nargs, int)
    if isinstance(value, dict) or (isinstance(value, list) and not many):
        raise ValueError(f"{value!r} is not one value; {flag} takes one")
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, (bool, dict, list)) and action.type is not None:
            raise ValueError(f"{item!r} is not a valid {action.type.__name__} for {flag}")
        if isinstance(item, (dict, list)):
            raise ValueError(f"{item!r} is not one value for {flag} (YAML reads 'a: b' as a mapping: quote it)")
        _check_item(action, flag, item)
    return [flag, *map(str, items)]


def _check_item(action: argparse.Action, flag: str, item) -> None:
    """Raise ``ValueError`` when ``item`` fails the flag's ``type`` or ``choices``."""
    converted = str(item)
    if action.type is not None:
        try:
            converted = action.type(str(item))
        except (TypeError, ValueError, argparse.ArgumentTypeError) as error:
            raise ValueError(f"{item!r} is not a valid {getattr(action.type, '__name__', 'value')} for {flag}") \
                from error
    if action.choices is not None and converted not in action.choices:
        raise ValueError(f"{item!r} is not allowed for {flag}; allowed: {', '.join(map(str, action.choices))}")
