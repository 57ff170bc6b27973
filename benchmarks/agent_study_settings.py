"""The learned-agent study's settings (:mod:`benchmarks.agent_study`): named transformations of the training
federation the variants are evaluated in (:data:`SETTINGS`), and the configuration of each
(:func:`setting_config`). The transfer settings follow FedMarl's transfer study (Zhang et al., AAAI 2022,
arXiv 2201.02932, Sec. 5, Fig. 7 and Table 3: K, 4K and 8K clients, other local epochs, another dataset);
:mod:`benchmarks.transfer` is the single-agent version of the same study."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from fedenv.config import EnvConfig
from fedenv.data.dataset import load_dataset
from fedenv.observation import feature_names, layout_options
from fedenv.traces import DEFAULT_TRACE, HELD_OUT_DEVICES_TRACE, MORE_CLIENTS_TRACE, load_trace


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: how it transforms the training federation and how the page names it.

    Attributes:
        transform: ``EnvConfig -> EnvConfig``, the training federation to this setting's (where
            ``needs_data_root``, :func:`setting_config` then sets ``data_root`` to ``--data-root``).
        fields: the EnvConfig fields ``transform`` may change (none for the trained setting).
        description: one line for the page's headings, e.g. ``4x the training federation's clients``.
        at: where, in the bars' text, e.g. ``at 4x the clients``.
        needs_data_root: the setting reads a dataset from ``--data-root``.
    """

    transform: Callable[[EnvConfig], EnvConfig]
    fields: tuple[str, ...]
    description: str
    at: str
    needs_data_root: bool = False


def more_clients(multiple: int) -> Callable[[EnvConfig], EnvConfig]:
    """The transformation to ``multiple`` times the clients, the same candidates per round (FedMarl's 4K, 8K).
    The clients keep the training federation's trace where it holds that many; a federation on the default trace
    that needs more (100 clients at 4x) replays :data:`fedenv.traces.MORE_CLIENTS_TRACE`, the default trace's
    clients and more from the same device population (another trace with too few clients is refused when the
    configuration validates, naming how to generate a larger one)."""
    def transform(config: EnvConfig) -> EnvConfig:
        num_clients = config.num_clients * multiple
        larger = config.trace == DEFAULT_TRACE and num_clients > len(load_trace(DEFAULT_TRACE).clients)
        return dataclasses.replace(config, num_clients=num_clients,
                                   **({"trace": MORE_CLIENTS_TRACE} if larger else {}))
    return transform


def other_local_epochs(epochs: int) -> Callable[[EnvConfig], EnvConfig]:
    """The transformation to ``epochs`` local epochs per round (FedMarl's other local epochs)."""
    return lambda config: dataclasses.replace(config, local_epochs=epochs)


def training_samples(config: EnvConfig) -> int:
    """The training samples ``config``'s federation partitions: ``train_samples``, or else the size of its
    dataset's training split (mnist5k: 4,000; :func:`fedenv.data.dataset.load_dataset`)."""
    if config.train_samples is not None:
        return config.train_samples
    return len(load_dataset(config.dataset, config.data_root, download=False).train_x)


def fashion_mnist(config: EnvConfig) -> EnvConfig:
    """Fashion-MNIST (read from ``config.data_root``) in place of the training dataset, the same model and as
    many training samples (:func:`training_samples`) as the training federation had."""
    return dataclasses.replace(config, dataset="fashion-mnist", train_samples=training_samples(config))


def held_out_devices(config: EnvConfig) -> EnvConfig:
    """The transformation to the held-out device types: the trace :data:`fedenv.traces.HELD_OUT_DEVICES_TRACE` in
    place of the training federation's (FedMarl's agents meet the devices of their training; this asks what they
    do on others).

    Raises:
        ValueError: the training federation does not replay the default trace, so the held-out trace holds
            devices it may have trained on.
    """
    if config.trace != DEFAULT_TRACE:
        raise ValueError(f"trace={config.trace!r}: the held-out device types are those of no client of the "
                         f"default trace, so the training federation must replay trace={DEFAULT_TRACE!r}")
    return dataclasses.replace(config, trace=HELD_OUT_DEVICES_TRACE)


def other_model(model: str) -> Callable[[EnvConfig], EnvConfig]:
    """The transformation to ``model`` (a name of :data:`fedenv.registry.MODELS`) in place of the training model:
    another communication cost per upload and compute time per sample (FedMarl's transfer to another model).

    Raises (from the transformation):
        ValueError: the training federation already trains ``model``.
    """
    def transform(config: EnvConfig) -> EnvConfig:
        if config.model == model:
            raise ValueError(f"model={model!r} is the training federation's own, so it is no other model")
        return dataclasses.replace(config, model=model)
    return transform


SETTINGS: dict[str, Setting] = {
    "trained": Setting(dataclasses.replace, (), "the training federation", "in the training federation"),
    "4x": Setting(more_clients(4), ("num_clients", "trace"), "4x the training federation's clients",
                  "at 4x the clients"),
    "8x": Setting(more_clients(8), ("num_clients", "trace"), "8x the training federation's clients",
                  "at 8x the clients"),
    "epochs-1": Setting(other_local_epochs(1), ("local_epochs",), "the training federation with 1 local epoch per "
                        "round (the probing epoch only)", "at 1 local epoch"),
    "epochs-5": Setting(other_local_epochs(5), ("local_epochs",), "the training federation with 5 local epochs per "
                        "round", "at 5 local epochs"),
    "fmnist": Setting(fashion_mnist, ("dataset", "data_root", "train_samples"), "Fashion-MNIST in place of the "
                      "training dataset, the same model and number of training samples", "on Fashion-MNIST",
                      needs_data_root=True),
    "devices": Setting(held_out_devices, ("trace",), "the training federation's clients on device types it never "
                       "trained on (trace held-out-devices)", "on held-out device types"),
    "lenet5": Setting(other_model("lenet5"), ("model",), "the training federation with LeNet-5 in place of its "
                      "model", "with LeNet-5"),
}
"""Setting name -> :class:`Setting`; ``trained`` is the training federation itself, the others are the transfer
settings (in this order on the page)."""
TRANSFER_SETTINGS = [name for name in SETTINGS if name != "trained"]
"""The settings the transfer variants are carried to (every setting but ``trained``)."""


def setting_config(federation: EnvConfig, setting: str, data_root: str | None = None) -> EnvConfig:
    """The configuration of ``setting`` (a name of :data:`SETTINGS`) for the training ``federation``;
    ``data_root`` (``--data-root``) is used only by a setting that reads a dataset from it.

    Raises:
        ValueError: an unknown setting (naming the allowed ones); a setting that needs ``data_root`` without it;
            a transformed configuration that does not validate (:meth:`fedenv.config.EnvConfig.validate`) or
            whose observation layout differs from the training federation's (the agents could not act in it);
            each message names the setting.
    """
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; allowed: {', '.join(SETTINGS)}")
    spec = SETTINGS[setting]
    if spec.needs_data_root and data_root is None:
        raise ValueError(f"setting {setting} ({spec.description}) needs --data-root DIR, the folder its dataset "
                         "is read from in torchvision's layout")
    try:
        config = spec.transform(federation)
        config = (dataclasses.replace(config, data_root=data_root) if spec.needs_data_root else config).validate()
    except (ValueError, FileNotFoundError) as error:
        raise ValueError(f"setting {setting}: cannot build its configuration: {error}") from error
    layout = [feature_names(**layout_options(c)) for c in (federation, config)]
    if layout[0] != layout[1]:
        raise ValueError(f"setting {setting}: its observation layout differs from the training federation's "
                         f"({len(layout[1])} features vs {len(layout[0])}), so the agents cannot act in it")
    return config
