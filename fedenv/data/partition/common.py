"""Helpers shared by the partitioners: the server's validation split, argument checks, drawing and
topping up shards."""

from __future__ import annotations

import numpy as np


def split_validation(labels: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Hold out a stratified server validation split from the training set (used by FedCA, Kim et al.
    arXiv 2012.03270), before the rest is partitioned.

    Args:
        labels: int array ``(N,)`` of training labels.
        fraction: share of every class to hold out, in ``[0, 1)``.
        rng: numpy generator (seeded by the caller).

    Returns:
        ``(pool, validation)``: sorted index arrays into ``labels``; disjoint, together all of ``0..N-1``.

    Raises:
        ValueError: ``fraction`` outside ``[0, 1)``.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {fraction}")
    validation = []
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        validation.append(rng.choice(members, round(fraction * len(members)), replace=False))
    validation = np.sort(np.concatenate(validation))
    pool = np.setdiff1d(np.arange(len(labels)), validation)
    return pool, validation


def check_min_size(value: int, name: str = "min_size") -> None:
    """Refuse a least client size that would allow a client without samples (local training of an
    empty shard has no batch and a 0/0 mean loss).

    Raises:
        ValueError: ``value`` is not an integer >= 1 (names ``name``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}={value!r} must be an integer >= 1 (every client needs a sample)")


def check_num_clients(num_clients: int, n: int, min_size: int) -> None:
    """Raises ValueError: ``num_clients < 1``, ``min_size < 1`` or ``num_clients * min_size > n``."""
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    check_min_size(min_size)
    if num_clients * min_size > n:
        raise ValueError(
            f"cannot give {num_clients} clients at least {min_size} samples each from {n} samples"
        )


def check_class_budget(counts: np.ndarray, available: np.ndarray, classes: np.ndarray) -> None:
    """Raises ValueError naming the first class whose total demand ``counts.sum(axis=0)`` exceeds
    ``available`` (the pool's samples per class), and the shortfall."""
    demand = counts.sum(axis=0)
    short = np.flatnonzero(demand > available)
    if len(short):
        c = short[0]
        raise ValueError(
            f"partition needs {demand[c]} samples of class {classes[c]} but the pool holds {available[c]} "
            f"(short by {demand[c] - available[c]}); lower the client sizes or the dominant fraction"
        )


def draw_shards(labels: np.ndarray, classes: np.ndarray, counts: np.ndarray, rng) -> list[np.ndarray]:
    """Draw ``counts[k, c]`` distinct samples of class ``classes[c]`` for each client k, without
    replacement across clients; one sorted int64 index array per client."""
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in classes]
    starts = np.zeros(len(classes), dtype=np.int64)
    shards = []
    for row in counts:
        parts = [pools[c][starts[c] : starts[c] + k] for c, k in enumerate(row)]
        starts += row
        shards.append(np.sort(np.concatenate(parts).astype(np.int64)))
    return shards


def top_up(shards: list[np.ndarray], min_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Move random samples from the largest shard to the smallest until every shard holds ``min_size``
    (the caller checked that the shards hold ``len(shards) * min_size`` samples in all)."""
    shards = [list(s) for s in shards]
    sizes = np.array([len(s) for s in shards])
    while sizes.min() < min_size:
        small, large = int(sizes.argmin()), int(sizes.argmax())
        shards[small].append(shards[large].pop(int(rng.integers(sizes[large]))))
        sizes[small] += 1
        sizes[large] -= 1
    return [np.asarray(s, dtype=np.int64) for s in shards]


def check_shards(partition: str, shards: list[np.ndarray], num_clients: int) -> list[np.ndarray]:
    """``shards`` if a registered partitioner gave ``num_clients`` non-empty shards.

    Raises:
        ValueError: another number of shards, or an empty one (names the partitioner and the clients).
    """
    if len(shards) != num_clients:
        raise ValueError(f"partitioner {partition!r} gave {len(shards)} shards for num_clients={num_clients}")
    empty = [k for k, shard in enumerate(shards) if len(shard) == 0]
    if empty:
        raise ValueError(f"partitioner {partition!r} gave clients {empty} no samples; every client needs one")
    return shards
