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

from fedenv.names import check_known

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
        check_known(name, self._entries, self.kind, field=False)


# ---------------------------------------------------------------- datasets (fedenv/data/)
DATASETS: Registry = Registry("dataset")
DATASETS.register("mnist5k", "fedenv.data.mnist5k:MNIST5K")
DATASETS.register("mnist", "fedenv.data.idx:MNIST")
DATASETS.register("fashion-mnist", "fedenv.data.idx:FASHION_MNIST")
DATASETS.register("cifar10", "fedenv.data.cifar10:CIFAR10")
DATASETS.register("shakespeare", "fedenv.data.shakespeare:SHAKESPEARE")

# ---------------------------------------------------------------- partitioners (fedenv/data/partition/)
PARTITIONERS: Registry = Registry("partitioner")
PARTITIONERS.register("fedmarl", "fedenv.data.partition.fedmarl:fedmarl")
PARTITIONERS.register("dirichlet", "fedenv.data.partition.dirichlet:dirichlet")
PARTITIONERS.register("iid", "fedenv.data.partition.iid:iid")
PARTITIONERS.register("xclass", "fedenv.data.partition.xclass:xclass")
PARTITIONERS.register("natural", "fedenv.data.partition.natural:natural")

# ---------------------------------------------------------------- models (fedenv/models/)
MODELS: Registry = Registry("model")
MODELS.register("mlp", "fedenv.models.mlp:MLP_SPEC")
MODELS.register("lenet5", "fedenv.models.lenet:LENET5_SPEC")
MODELS.register("resnet18", "fedenv.models.resnet:RESNET18_SPEC")
MODELS.register("vgg6", "fedenv.models.vgg:VGG6_SPEC")
MODELS.register("lstm", "fedenv.models.lstm:LSTM_SPEC")
MODELS.register("lenet5-classic", "fedenv.models.lenet:LENET5_CLASSIC_SPEC")

# ---------------------------------------------------------------- aggregation rules (fedenv/aggregation/)
AGGREGATION_RULES: Registry = Registry("aggregation rule")
AGGREGATION_RULES.register("fedavg", "fedenv.aggregation.fedavg:FedAvg")
AGGREGATION_RULES.register("fedavg-eq3", "fedenv.aggregation.fedavg:FedAvgEq3")
AGGREGATION_RULES.register("fedpdp", "fedenv.aggregation.fedpdp:FedPdp")
AGGREGATION_RULES.register("fedca", "fedenv.aggregation.fedca:FedCA")
AGGREGATION_RULES.register("fedadp", "fedenv.aggregation.fedadp:FedAdp")
AGGREGATION_RULES.register("trimmed-mean", "fedenv.aggregation.trimmed_mean:TrimmedMean")
AGGREGATION_RULES.register("median", "fedenv.aggregation.trimmed_mean:Median")

# ---------------------------------------------------------------- selection policies (fedenv/baselines/)
POLICIES: Registry = Registry("policy")
POLICIES.register("fedavg", "fedenv.baselines.select_all:FedAvgPolicy")
POLICIES.register("random", "fedenv.baselines.random_selection:RandomPolicy")
POLICIES.register("fedprox", "fedenv.baselines.select_all:FedProxPolicy")
POLICIES.register("fedca", "fedenv.baselines.select_all:FedCAPolicy")
POLICIES.register("fedcm-ucb", "fedenv.baselines.fedcm:FedCMUCBPolicy")
POLICIES.register("fedcm-ts", "fedenv.baselines.fedcm:FedCMTSPolicy")
POLICIES.register("fedadp", "fedenv.baselines.select_all:FedAdpPolicy")
POLICIES.register("oort", "fedenv.baselines.oort.policy:OortPolicy")
POLICIES.register("fastest", "fedenv.baselines.fastest:FastestPolicy")
POLICIES.register("late-rounds", "fedenv.baselines.schedule:LateRoundsPolicy")
POLICIES.register("stale-fastest", "fedenv.baselines.stale_fastest:StaleFastestPolicy")
POLICIES.register("oracle-fastest", "fedenv.baselines.oracle_fastest:OracleFastestPolicy")
POLICIES.register("select-all", "fedenv.baselines.select_all:ConfiguredPolicy")
