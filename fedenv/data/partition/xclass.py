"""FedAdp's x-class non-IID partition (Wu and Wang, arXiv 2012.00661)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fedenv.data.partition.common import check_class_budget, check_min_size, check_num_clients, draw_shards
from fedenv.options import option

if TYPE_CHECKING:
    from fedenv.config import EnvConfig


def partition_xclass(
    labels: np.ndarray,
    num_clients: int,
    rng: np.random.Generator,
    classes_per_client: int = 1,
    noniid_clients: int = 5,
    samples_per_client: int = 600,
) -> list[np.ndarray]:
    """FedAdp's x-class non-IID setting (Wu and Wang, arXiv 2012.00661, Sec. III): every client gets
    ``samples_per_client`` samples; ``noniid_clients`` of them draw theirs from ``classes_per_client``
    (x) randomly chosen classes (classes may repeat across clients), the others from the whole set.
    Samples are drawn without replacement across clients.

    Raises:
        ValueError: before any index is drawn, when the draw needs more samples of a class than the
            pool holds (names the class and the shortfall), or on invalid arguments (``samples_per_client < 1``
            included: an empty client cannot train).
    """
    classes = np.unique(labels)
    if not 1 <= classes_per_client <= len(classes):
        raise ValueError(f"classes_per_client={classes_per_client} must be in [1, {len(classes)}]")
    if not 0 <= noniid_clients <= num_clients:
        raise ValueError(f"noniid_clients={noniid_clients} must be in [0, num_clients={num_clients}]")
    check_min_size(samples_per_client, "samples_per_client")
    check_num_clients(num_clients, len(labels), samples_per_client)
    available = np.array([(labels == c).sum() for c in classes])
    noniid = set(rng.choice(num_clients, noniid_clients, replace=False).tolist())
    counts = np.zeros((num_clients, len(classes)), dtype=np.int64)
    share = available / available.sum()
    for client in range(num_clients):
        if client in noniid:
            chosen = rng.choice(len(classes), classes_per_client, replace=False)
            even = np.full(classes_per_client, 1 / classes_per_client)
            counts[client, chosen] = rng.multinomial(samples_per_client, even)
        else:
            counts[client] = rng.multinomial(samples_per_client, share)
    check_class_budget(counts, available, classes)
    return draw_shards(labels, classes, counts, rng)


@dataclass(frozen=True)
class XClassOptions:
    """Options of the ``xclass`` partitioner (FedAdp, arXiv 2012.00661 Sec. III)."""

    classes: int = option(1, "number x of classes a non-IID client draws its samples from (FedAdp's x = 1 or 2)",
                          low=1, alias="xclass_classes")
    noniid_clients: int = option(5, "how many clients are non-IID (the others sample the whole pool), at most "
                                    "num_clients (FedAdp's 5 IID + 5 non-IID setting)", low=0,
                                 alias="xclass_noniid_clients")
    samples: int = option(600, "training samples per client (FedAdp's 600)", low=1, alias="xclass_samples")


def xclass(labels: np.ndarray, owners: np.ndarray | None, num_clients: int, rng: np.random.Generator,
           config: EnvConfig) -> list[np.ndarray]:
    """The registered ``xclass`` partitioner: :func:`partition_xclass` with its options ``classes``,
    ``noniid_clients`` and ``samples`` (:class:`XClassOptions`)."""
    options = config.component_options("partition", "xclass")
    return partition_xclass(labels, num_clients, rng, classes_per_client=options.classes,
                            noniid_clients=options.noniid_clients, samples_per_client=options.samples)


xclass.Options = XClassOptions
