"""The environment's whole configuration, one dataclass (DESIGN.md section 4).

Field names are the flag names of ``train_agents.py`` and ``evaluate.py`` (``num_clients`` is
``--num-clients``). Values marked "our default" are choices of this project, not constants of a paper.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from fedenv.registry import AGGREGATION_RULES, DATASETS, MODELS, PARTITIONERS

UTILITIES = ("exp64", "linear")
"""Accuracy utilities of the reward (:func:`fedenv.reward.utility`)."""
TRACE_MODES = ("replay", "static")
"""How latency is replayed from a trace (:class:`fedenv.traces.TraceReplay`)."""
FEDCA_SCORES = ("acc", "ce")
"""FedCA's validation scores (:func:`fedenv.aggregators.fedca_scores`)."""
ENGINES = ("auto", "vmap")
"""Gradient paths of the batched engine (:func:`fedenv.batched.batched_grad_fn`)."""

CHOICES = {
    "dataset": DATASETS, "partition": PARTITIONERS, "model": MODELS, "utility": UTILITIES,
    "aggregation": AGGREGATION_RULES, "trace_mode": TRACE_MODES, "fedca_score": FEDCA_SCORES, "engine": ENGINES,
}
"""The allowed values of the :class:`EnvConfig` fields that take a name (registries list their names)."""


@dataclass
class EnvConfig:
    """Configuration of :class:`fedenv.env.ClientSelectionEnv`.

    Federation: ``dataset`` (``mnist5k`` embedded, ``mnist``, ``fashion-mnist``, ``cifar10``,
    ``shakespeare``), ``data_root`` (torchvision-layout folder; LEAF's for Shakespeare), ``download``;
    ``partition`` (``fedmarl``, ``dirichlet``, ``iid``, ``xclass``, ``natural``: one user per client) with
    ``dominant_fraction`` (fedmarl, FedMarl's 0.8), ``size_exponent`` (fedmarl power law, our default
    0.5), ``dirichlet_alpha`` and ``min_client_size``; ``xclass`` (FedAdp's setting) with
    ``xclass_classes`` x, ``xclass_noniid_clients`` and ``xclass_samples`` per client; ``val_fraction`` of the training set held out as
    the server's validation split (our default 0.1); ``test_samples``: evaluate the global model on a
    fixed random subset of the test split of this size (the same for every seed and policy; None, the
    default, uses all of it).

    Training: ``model`` (``mlp``, ``lenet5``, ``resnet18``, ``vgg6``, ``lstm``; :mod:`fedenv.models`),
    ``num_clients`` K, ``clients_per_round`` (candidates per
    round), ``num_rounds`` T, ``local_epochs`` E (the first is the probing epoch), ``batch_size``,
    ``lr``, ``momentum``, ``weight_decay``, ``fedprox_mu``; ``aggregation`` (``fedavg``, ``fedpdp``,
    ``fedca``, ``fedadp``; :mod:`fedenv.aggregators`) with ``fedca_score`` (``acc`` or ``ce``, our
    default) and ``fedadp_alpha`` (5); ``device`` (``auto``, ``cpu``, ``cuda``); ``engine``: the batched
    engine's gradient path, ``auto`` (fast paths where the model allows) or ``vmap`` (always
    ``torch.func``; for benchmarks and ablations).

    Traces: ``trace``, a shipped trace name or a trace file path; ``trace_mode`` ``replay`` (per-round
    bandwidth and compute as the trace says) or ``static`` (each client's median bandwidth, compute
    factor 1; for ablations); ``round_deadline_s``: optional round deadline, stragglers are dropped.

    Observation and reward: ``history_length`` h of the latency histories (our default 5);
    ``utility`` (``exp64`` or ``linear``); weights ``accuracy_weight`` w1, ``latency_weight`` w2 (per
    second) and ``comm_weight`` w3 (per MB). The default w2 and w3 are calibrated on training seeds
    (``python -m fedenv.calibrate``) so that for FedAvg on the default federation the summed latency and
    upload terms are each a quarter of the summed accuracy term. ``target_accuracy``: optional; reaching
    it ends the episode by termination.
    """

    dataset: str = "mnist5k"
    data_root: str | None = None
    download: bool = False
    partition: str = "fedmarl"
    dominant_fraction: float = 0.8
    size_exponent: float = 0.5
    dirichlet_alpha: float = 0.5
    min_client_size: int = 10
    xclass_classes: int = 1
    xclass_noniid_clients: int = 5
    xclass_samples: int = 600
    val_fraction: float = 0.1
    test_samples: int | None = None
    model: str = "mlp"
    num_clients: int = 10
    clients_per_round: int = 10
    num_rounds: int = 20
    local_epochs: int = 2
    batch_size: int = 32
    lr: float = 0.05
    momentum: float = 0.0
    weight_decay: float = 0.0
    fedprox_mu: float = 0.0
    aggregation: str = "fedavg"
    fedca_score: str = "ce"
    fedadp_alpha: float = 5.0
    trace: str = "default"
    trace_mode: str = "replay"
    round_deadline_s: float | None = None
    history_length: int = 5
    utility: str = "exp64"
    accuracy_weight: float = 1.0
    latency_weight: float = 3.68e-4
    comm_weight: float = 1.20e-3
    target_accuracy: float | None = None
    device: str = "auto"
    engine: str = "auto"

    def validate(self) -> "EnvConfig":
        """Check every field; raise ``ValueError`` naming the field, its value and what is allowed."""
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r} is not known; allowed: {', '.join(allowed)}")
        for name in ("num_clients", "clients_per_round", "num_rounds", "local_epochs", "batch_size",
                     "history_length", "min_client_size", "xclass_classes", "xclass_samples"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} must be an integer >= 1")
        if self.clients_per_round > self.num_clients:
            raise ValueError(
                f"clients_per_round={self.clients_per_round} must be <= num_clients={self.num_clients}"
            )
        ranges = {
            "dominant_fraction": (0.0, 1.0), "val_fraction": (0.0, 0.99), "momentum": (0.0, 0.999),
        }
        for name, (low, high) in ranges.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ValueError(f"{name}={value!r} must be in [{low}, {high}]")
        for name in ("lr", "dirichlet_alpha", "fedadp_alpha"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be > 0")
        for name in ("size_exponent", "weight_decay", "fedprox_mu", "accuracy_weight", "latency_weight", "comm_weight"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be >= 0")
        if self.test_samples is not None and (not isinstance(self.test_samples, int) or self.test_samples < 1):
            raise ValueError(f"test_samples={self.test_samples!r} must be an integer >= 1 or None")
        if self.round_deadline_s is not None and not self.round_deadline_s > 0:
            raise ValueError(f"round_deadline_s={self.round_deadline_s!r} must be > 0 or None")
        if self.target_accuracy is not None and not 0.0 < self.target_accuracy <= 1.0:
            raise ValueError(f"target_accuracy={self.target_accuracy!r} must be in (0, 1] or None")
        return self

    def to_dict(self) -> dict:
        """Plain dict of the fields (JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "EnvConfig":
        """Build from a dict; unknown keys raise ``ValueError`` listing them."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown EnvConfig fields {unknown}; allowed: {', '.join(sorted(known))}")
        return cls(**values)

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "EnvConfig":
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))
