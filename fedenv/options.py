"""Typed options of a registered component, declared beside its class (in the manner of BenchMARL's
config dataclasses linked to their algorithm class).

A component (an aggregation rule, a partitioner, a model spec, a dataset spec, a policy) that takes
options sets the class attribute ``Options`` to a frozen dataclass whose fields are made with
:func:`option`: a default, a help text and the allowed range, in one place::

    @dataclass(frozen=True)
    class TrimmedMeanOptions:
        beta: float = option(0.2, "share of the uploads cut from each end, per coordinate", low=0.0, high=0.5,
                             high_open=True)

    class TrimmedMean(AggregationRule):
        Options = TrimmedMeanOptions

:class:`~fedenv.config.EnvConfig` holds the chosen component's options as a mapping
(``EnvConfig.aggregation_options``, ``partition_options``, ...), checked here against the dataclass;
:mod:`fedenv.cli` makes one flag per option of every registered component (``--trimmed-mean-beta``), with
the help and the range, and ``--help`` lists them under the component.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from typing import Any

from fedenv.names import check_known
from fedenv.plain import plain_value


def option(default, help: str, low: float | None = None, high: float | None = None, low_open: bool = False,
           high_open: bool = False, choices: tuple | None = None, alias: str | None = None):
    """A dataclass field of an ``Options`` class: its default, ``--help`` text and allowed values (the
    interval ``[low, high]``, either end open or absent, or a tuple of ``choices``); ``alias``: the flat
    :class:`~fedenv.config.EnvConfig` key it had in earlier releases, still read from config files and
    checkpoints (:meth:`fedenv.config.EnvConfig.from_dict`)."""
    return dataclasses.field(default=default, metadata={
        "help": help, "low": low, "high": high, "low_open": low_open, "high_open": high_open, "choices": choices,
        "alias": alias})


def options_class(entry) -> type | None:
    """The ``Options`` dataclass a registered entry declares (on its class, or on itself), or None."""
    options = getattr(entry, "Options", None)
    return options if dataclasses.is_dataclass(options) else None


def allowed_text(f: dataclasses.Field) -> str:
    """What option field ``f`` admits, in words: ``"in [0, 0.5)"``, ``"> 0"``, ``"one of acc, ce"``, or ``""``."""
    meta = f.metadata
    if meta.get("choices"):
        return "one of " + ", ".join(map(str, meta["choices"]))
    low, high = meta.get("low"), meta.get("high")
    if low is not None and high is not None:
        return f"in {'(' if meta['low_open'] else '['}{low:g}, {high:g}{')' if meta['high_open'] else ']'}"
    if low is not None:
        return f"{'>' if meta['low_open'] else '>='} {low:g}"
    if high is not None:
        return f"{'<' if meta['high_open'] else '<='} {high:g}"
    return ""


def check_option(owner: str, f: dataclasses.Field, value) -> None:
    """Raise ``ValueError`` naming ``owner``'s option, the value and what is allowed, unless ``value`` fits."""
    meta = f.metadata
    allowed = allowed_text(f)
    if meta.get("choices"):
        check_known(value, meta["choices"], f"{owner} option {f.name}")
    low, high = meta.get("low"), meta.get("high")
    if low is None and high is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{owner} option {f.name}={value!r} must be a finite number {allowed}")
    if low is not None and (value < low or (meta["low_open"] and value == low)):
        raise ValueError(f"{owner} option {f.name}={value!r} must be {allowed}")
    if high is not None and (value > high or (meta["high_open"] and value == high)):
        raise ValueError(f"{owner} option {f.name}={value!r} must be {allowed}")


def build_options(owner: str, options: type | None, values: Mapping[str, Any]):
    """The ``options`` dataclass built from ``values`` (defaults for the rest), every field checked.

    Args:
        owner: names the component in errors (``"aggregation rule 'trimmed-mean'"``).
        options: the component's ``Options`` class, or None when it takes none.

    Raises:
        ValueError: a key that is not one of its options (the message lists them), a value of the wrong
            type, or a value outside an option's range.
    """
    values = dict(values or {})
    fields = {f.name: f for f in dataclasses.fields(options)} if options is not None else {}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{owner} takes no option {', '.join(map(repr, unknown))}; "
                         f"it takes: {', '.join(fields) or 'none'}")
    if options is None:
        return None
    hints = typing.get_type_hints(options)
    values = {name: plain_value(f"{owner} option {name}", value, hints[name]) for name, value in values.items()}
    built = options(**values)
    for f in fields.values():
        check_option(owner, f, getattr(built, f.name))
    return built
