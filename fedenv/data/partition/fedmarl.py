"""FedMarl's non-IID partition: one dominant label per client and power-law client sizes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fedenv.data.partition.common import check_class_budget, check_num_clients, draw_shards
from fedenv.options import option

if TYPE_CHECKING:
    from fedenv.config import EnvConfig


def partition_fedmarl(
    labels: np.ndarray,
    num_clients: int,
    rng: np.random.Generator,
    dominant_fraction: float = 0.8,
    size_exponent: float = 0.5,
    client_sizes: list[int] | None = None,
    min_size: int = 10,
) -> list[np.ndarray]:
    """FedMarl's non-IID partition: one dominant label per client and power-law client sizes.

    Each client draws ``dominant_fraction`` (FedMarl: 80 %) of its samples from its dominant label and
    the rest evenly from the other labels (remainders to randomly chosen labels). Dominant labels are
    dealt in a random order so that every label is dominant for ``K / C`` clients (+-1). Client sizes
    follow a Zipf power law over randomly permuted ranks, ``size_i ~ rank_i ** -size_exponent`` (our
    default exponent 0.5), scaled to the largest total that the pool can serve under the composition
    above; or are given by ``client_sizes``. Shards are disjoint; samples no client needs stay unused.
    Zhang, Lin and Zhang, FedMarl (AAAI 2022, arXiv 2201.02932), Sec. "Evaluation".

    Args:
        labels: int array ``(N,)`` of the client pool's labels.
        num_clients: number of clients ``K``.
        rng: numpy generator.
        dominant_fraction: share of each client's samples from its dominant label, in ``[0, 1]``.
        size_exponent: power-law exponent of the client sizes, ``>= 0`` (0 gives equal sizes).
        client_sizes: explicit sizes, one per client (overrides the power law).
        min_size: least number of samples per client, ``>= 1``.

    Returns:
        One sorted index array per client (at least ``min_size`` samples, or ``client_sizes``), pairwise
        disjoint.

    Raises:
        ValueError: before any index is drawn, when the requested composition needs more samples of a
            class than the pool holds (names the class and the shortfall), or on invalid arguments (``min_size < 1``
            included: an empty client cannot train).
    """
    if not 0.0 <= dominant_fraction <= 1.0:
        raise ValueError(f"dominant_fraction must be in [0, 1], got {dominant_fraction}")
    if size_exponent < 0:
        raise ValueError(f"size_exponent must be >= 0, got {size_exponent}")
    classes = np.unique(labels)
    available = np.array([(labels == c).sum() for c in classes])
    check_num_clients(num_clients, len(labels), min_size)
    dominant = np.resize(rng.permutation(len(classes)), num_clients)
    rng.shuffle(dominant)
    remainder_order = [rng.permutation(len(classes) - 1) for _ in range(num_clients)]
    if client_sizes is not None:
        sizes = np.asarray(client_sizes, dtype=np.int64)
        if sizes.shape != (num_clients,) or (sizes < 1).any():
            raise ValueError(f"client_sizes must be {num_clients} positive integers, got {client_sizes}")
        counts = _fedmarl_counts(sizes, dominant, dominant_fraction, len(classes), remainder_order)
        check_class_budget(counts, available, classes)
    else:
        ranks = rng.permutation(num_clients) + 1.0
        shares = ranks**-size_exponent / np.sum(ranks**-size_exponent)
        counts = _largest_feasible_counts(shares, dominant, dominant_fraction, available, remainder_order, min_size)
        if counts is None:
            check_class_budget(
                _fedmarl_counts(np.full(num_clients, min_size), dominant, dominant_fraction, len(classes),
                                remainder_order),
                available,
                classes,
            )
    return draw_shards(labels, classes, counts, rng)


def _fedmarl_counts(sizes, dominant, dominant_fraction, num_classes, remainder_order) -> np.ndarray:
    """Per-client, per-class sample counts ``(K, C)`` for the fedmarl composition."""
    counts = np.zeros((len(sizes), num_classes), dtype=np.int64)
    for i, (size, d) in enumerate(zip(sizes, dominant)):
        own = round(dominant_fraction * size)
        others = [c for c in range(num_classes) if c != d]
        rest = int(size) - own
        counts[i, d] = own
        counts[i, others] = rest // len(others) if others else 0
        if others:
            for j in remainder_order[i][: rest % len(others)]:
                counts[i, others[j]] += 1
        else:
            counts[i, d] += rest
    return counts


def _largest_feasible_counts(shares, dominant, dominant_fraction, available, remainder_order, min_size):
    num_classes = len(available)

    def counts_for(total: int) -> np.ndarray:
        sizes = np.maximum(min_size, np.floor(shares * total)).astype(np.int64)
        return _fedmarl_counts(sizes, dominant, dominant_fraction, num_classes, remainder_order)

    lo, hi = 0, int(available.sum())
    if (counts_for(lo).sum(axis=0) > available).any():
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if (counts_for(mid).sum(axis=0) <= available).all():
            lo = mid
        else:
            hi = mid - 1
    return counts_for(lo)


@dataclass(frozen=True)
class FedMarlOptions:
    """Options of the ``fedmarl`` partitioner."""

    dominant_fraction: float = option(0.8, "share of each client's samples drawn from its dominant label; the "
                                           "rest is spread evenly over the other labels (FedMarl's 0.8, arXiv "
                                           "2201.02932)", low=0.0, high=1.0, alias="dominant_fraction")
    size_exponent: float = option(0.5, "client sizes follow a power law, size ~ rank ** -exponent (0: equal "
                                       "sizes; the exponent is our default: FedMarl gives none)",
                                  low=0.0, alias="size_exponent")


def fedmarl(labels: np.ndarray, owners: np.ndarray | None, num_clients: int, rng: np.random.Generator,
            config: EnvConfig) -> list[np.ndarray]:
    """The registered ``fedmarl`` partitioner: :func:`partition_fedmarl` with its options
    (:class:`FedMarlOptions`) and ``min_size`` = ``config.min_client_size``."""
    options = config.component_options("partition", "fedmarl")
    return partition_fedmarl(labels, num_clients, rng, dominant_fraction=options.dominant_fraction,
                             size_exponent=options.size_exponent, min_size=config.min_client_size)


fedmarl.Options = FedMarlOptions
