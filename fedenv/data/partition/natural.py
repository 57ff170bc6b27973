"""LEAF's natural partition: one user's samples per client (Caldas et al., arXiv 1812.01097)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedenv.data.partition.common import check_min_size

if TYPE_CHECKING:
    from fedenv.config import EnvConfig


def partition_natural(owners: np.ndarray, num_clients: int, rng: np.random.Generator,
                      min_size: int = 10) -> list[np.ndarray]:
    """LEAF's natural partition: each client is one user, drawn at random among the users holding at
    least ``min_size`` samples.

    Args:
        owners: int array ``(N,)``: the user of each sample (:attr:`Dataset.train_owner`).

    Returns:
        One sorted index array (into ``owners``) per client: all the samples of its user.

    Raises:
        ValueError: ``min_size < 1``, or fewer than ``num_clients`` users hold ``min_size`` samples
            (names both counts).
    """
    check_min_size(min_size)
    users, counts = np.unique(owners, return_counts=True)
    eligible = users[counts >= min_size]
    if len(eligible) < num_clients:
        raise ValueError(
            f"natural partition: num_clients={num_clients} but only {len(eligible)} users hold >= "
            f"min_client_size={min_size} samples"
        )
    return [np.flatnonzero(owners == user) for user in rng.choice(eligible, num_clients, replace=False)]


def natural(labels: np.ndarray, owners: np.ndarray | None, num_clients: int, rng: np.random.Generator,
            config: EnvConfig) -> list[np.ndarray]:
    """The registered ``natural`` partitioner: :func:`partition_natural` of ``owners`` with ``min_size``
    = ``config.min_client_size``.

    Raises:
        ValueError: ``owners`` is None (the dataset records no users).
    """
    if owners is None:
        raise ValueError(
            f"partition='natural' needs a dataset that records users (shakespeare), not {config.dataset!r}"
        )
    return partition_natural(owners, num_clients, rng, min_size=config.min_client_size)
