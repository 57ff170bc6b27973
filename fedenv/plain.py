"""Configuration values as plain Python types, checked against a dataclass field's type hint.

Parameter sweeps hand numpy scalars and 0-d arrays to configurations; they become ``int``/``float``/
``bool``/``str`` here, so a configuration serialises to JSON and pickles into a checkpoint that
``torch.load(weights_only=True)`` reads back.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing

import numpy as np


def plain_value(name: str, value, hint):
    """``value`` as the plain Python type of ``hint``: ``int``, ``float``, ``bool``, ``str``,
    ``tuple[int, ...]``, ``tuple[str, ...]``, ``dict[str, ...]`` (numpy scalar values made plain), or one of them
    ``| None``.

    Raises:
        ValueError: ``value`` is not of that type (names ``name``, the value and the type expected);
            a ``bool`` is not taken for a number, nor a number for a ``bool``.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None and type(None) in options:
        return None
    hint = next(option for option in options if option is not type(None))
    if typing.get_origin(hint) is dict:
        return plain_mapping(name, value)
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(value, (tuple, list, np.ndarray)):
            raise ValueError(f"{name}={value!r} must be a sequence of {'integers' if item is int else 'strings'}")
        return tuple(plain_value(name, v, item) for v in value)
    is_bool = isinstance(value, (bool, np.bool_))
    if hint is bool and is_bool:
        return bool(value)
    if hint is int and isinstance(value, (int, np.integer)) and not is_bool:
        return int(value)
    if hint is float and isinstance(value, (int, float, np.integer, np.floating)) and not is_bool:
        return float(value)
    if hint is str and isinstance(value, str):
        return str(value)
    expected = " or ".join("None" if o is type(None) else getattr(o, "__name__", str(o)) for o in options)
    raise ValueError(f"{name}={value!r} must be of type {expected}, not {type(value).__name__}")


def plain_mapping(name: str, value) -> dict:
    """``value``, a mapping with string keys (nested mappings too), with numpy scalars made plain.

    Raises:
        ValueError: ``value`` (or a nested value) is not a mapping with string keys.
    """
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{name}={value!r} must be a mapping with string keys")
    return {k: plain_mapping(f"{name}[{k!r}]", v) if isinstance(v, dict)
            else v.item() if isinstance(v, (np.generic, np.ndarray)) else v for k, v in value.items()}


def plain_fields(instance, prefix: str = "") -> None:
    """Replace every field of dataclass ``instance`` by :func:`plain_value` of it (for ``__post_init__``);
    error messages name the field as ``PREFIXname``."""
    hints = typing.get_type_hints(type(instance))
    for f in dataclasses.fields(instance):
        setattr(instance, f.name, plain_value(prefix + f.name, getattr(instance, f.name), hints[f.name]))


def infinities_from_json(cls, values: dict) -> dict:
    """``values`` (a configuration of dataclass ``cls`` read from JSON) with ``null`` (None) in every field
    of type ``float`` (not ``float | None``) read as ``math.inf``: standard JSON has no infinity and
    :func:`fedenv.fileio.json_text` writes it as ``null``; NaN and ``-inf`` never pass a configuration's
    ``validate``, so ``+inf`` is the only value such a ``null`` can stand for."""
    hints = typing.get_type_hints(cls)
    return {key: math.inf if value is None and hints.get(key) is float else value for key, value in values.items()}
