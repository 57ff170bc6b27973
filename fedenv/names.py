"""The one check of a name against the names allowed, with the one error message the package gives."""

from __future__ import annotations

from collections.abc import Iterable


def check_known(value, allowed: Iterable, label: str, field: bool = True) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``allowed``.

    The message names the value and lists what is allowed, in order:
    ``"engine='jit' is not known; allowed: auto, unfused, vmap"`` for a field or argument (``field``), or
    ``"policy 'nobody' is not known; allowed: fedavg, random, ..."`` for a kind of thing.
    """
    allowed = list(allowed)
    if value not in allowed:
        named = f"{label}={value!r}" if field else f"{label} {value!r}"
        raise ValueError(f"{named} is not known; allowed: {', '.join(map(str, allowed))}")
