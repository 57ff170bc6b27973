"""IID partition: every client draws uniformly from the whole pool."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedenv.data.partition.common import check_num_clients

if TYPE_CHECKING:
    from fedenv.config import EnvConfig


def partition_iid(labels: np.ndarray, num_clients: int, rng: np.random.Generator) -> list[np.ndarray]:
    """IID partition: a random permutation cut into ``num_clients`` shards of equal size (+-1).

    Returns:
        One index array per client (at least one sample each); together they hold every index of
        ``labels`` exactly once.

    Raises:
        ValueError: ``num_clients < 1`` or more clients than samples.
    """
    check_num_clients(num_clients, len(labels), min_size=1)
    return [np.sort(part) for part in np.array_split(rng.permutation(len(labels)), num_clients)]


def iid(labels: np.ndarray, owners: np.ndarray | None, num_clients: int, rng: np.random.Generator,
        config: EnvConfig) -> list[np.ndarray]:
    """The registered ``iid`` partitioner: :func:`partition_iid` (no options)."""
    return partition_iid(labels, num_clients, rng)
