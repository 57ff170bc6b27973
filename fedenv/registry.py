"""Every extension point of the package, by name: datasets, partitioners, models, aggregation rules and
selection policies.

Each kind has one :class:`Registry`. An entry is either the object itself or a lazy entry point
``"package.module:attribute"`` (as Gymnasium's ``register(id, entry_point=...)``), imported on first
use, so that naming the built-ins here imports none of them. Adding an implementation is one new file
and one registration line in this module (or, outside the package, a call to ``register`` before the
environment is built)::

    from fedenv.registry import AGGREGATION_RULES
    AGGREGATION_RULES.register("median", MedianRule)

What each kind's objects are is documented in its own package: :class:`fedenv.data.DatasetSpec`,
partitioner functions in :mod:`fedenv.data.partitioners`, :class:`fedenv.models.ModelSpec`,
:class:`fedenv.aggregation.AggregationRule` and :class:`fedenv.baselines.Policy`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> implementation table of one kind.

    Args:
        kind: what the entries are, for error messages (``"aggregation rule"``).
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, entry: T | str):
        """Add ``entry`` (an object, or ``"module:attribute"`` imported on first use) under ``name``.

        Returns:
            ``entry``, so that ``register`` can be called on a definition's result.

        Raises:
            ValueError: ``name`` is empty, not a string, or already registered.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for tests and notebooks that register temporary entries).

        Raises:
            ValueError: ``name`` is not registered.
        """
        self._check(name)
        del self._entries[name]

    def get(self, name: str) -> T:
        """The implementation registered as ``name`` (an entry point is imported once, then kept).

        Raises:
            ValueError: ``name`` is not registered (the message lists the registered names).
        """
        self._check(name)
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            entry = getattr(importlib.import_module(module), attribute)
            self._entries[name] = entry
        return entry

    __getitem__ = get

    def names(self) -> tuple[str, ...]:
        """Registered names, in registration order."""
        return tuple(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def _check(self, name: str) -> None:
        if name not in self._entries:
            raise ValueError(f"{self.kind} {name!r} is not known; allowed: {', '.join(self._entries)}")


# ---------------------------------------------------------------- datasets (fedenv/data/)
DATASETS: Registry = Registry("dataset")

# ---------------------------------------------------------------- partitioners (fedenv/data/partitioners.py)
PARTITIONERS: Registry = Registry("partitioner")

# ---------------------------------------------------------------- models (fedenv/models/)
MODELS: Registry = Registry("model")

# ---------------------------------------------------------------- aggregation rules (fedenv/aggregation/)
AGGREGATION_RULES: Registry = Registry("aggregation rule")

# ---------------------------------------------------------------- selection policies (fedenv/baselines/)
POLICIES: Registry = Registry("policy")
