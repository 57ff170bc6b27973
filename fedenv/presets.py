"""Paper task presets: the federations of FedMarl's evaluation (Zhang et al., AAAI 2022, arXiv 2201.02932,
Table 2) as :class:`~fedenv.config.EnvConfig` overrides.

Each preset has 100 clients with 10 candidates per round and 5 local epochs ("60 samples and five
epochs" in the paper's latency breakdown), on the paper's task:

- ``mnist-lenet``: LeNet-5 on full MNIST, ``fedmarl`` partition.
- ``fmnist-resnet18``: ResNet-18 (BatchNorm per client, averaged by the aggregation) on Fashion-MNIST.
- ``cifar10-vgg``: FedMarl's VGG6 on CIFAR-10, ``fedmarl`` partition.
- ``shakespeare-lstm``: LEAF's next-character LSTM on Shakespeare, one client per speaking role
  (``natural`` partition).

Every dataset but the embedded one is read from ``--data-root`` (see :mod:`fedenv.data`). The reward
weights stay the default federation's; recalibrate them for a preset with
``python -m fedenv.calibrate --preset NAME`` (docs/design.md, section 5). Flags given with ``--preset`` override
its values.
"""

from __future__ import annotations

import dataclasses

from fedenv.config import EnvConfig
from fedenv.names import check_known

_PAPER_SCALE = {"num_clients": 100, "clients_per_round": 10, "local_epochs": 5}
PRESETS: dict[str, dict] = {
    "mnist-lenet": {**_PAPER_SCALE, "dataset": "mnist", "model": "lenet5"},
    "fmnist-resnet18": {**_PAPER_SCALE, "dataset": "fashion-mnist", "model": "resnet18"},
    "cifar10-vgg": {**_PAPER_SCALE, "dataset": "cifar10", "model": "vgg6"},
    "shakespeare-lstm": {**_PAPER_SCALE, "dataset": "shakespeare", "model": "lstm", "partition": "natural"},
}


def apply_preset(name: str, base: EnvConfig | None = None) -> EnvConfig:
    """``base`` (default :class:`EnvConfig`) with the preset's fields set.

    Raises:
        ValueError: unknown preset (the message lists the allowed names).
    """
    check_known(name, PRESETS, "preset", field=False)
    return dataclasses.replace(base or EnvConfig(), **PRESETS[name])
