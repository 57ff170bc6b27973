"""Label-skewed partition with Dirichlet client proportions per class (Yurochkin et al., ICML 2019)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fedenv.data.partition.common import check_num_clients, top_up
from fedenv.options import option

if TYPE_CHECKING:
    from fedenv.config import EnvConfig


def partition_dirichlet(
    labels: np.ndarray,
    num_clients: int,
    rng: np.random.Generator,
    alpha: float = 0.5,
    min_size: int = 10,
    max_draws: int = 100,
) -> list[np.ndarray]:
    """Label-skewed partition with per-class client proportions drawn from ``Dir(alpha)``.

    Follows the reference code of Yurochkin et al. (ICML 2019, "Bayesian nonparametric federated
    learning of neural networks"), also used by FedMA and FedCM (Kim et al., arXiv 2012.03270): for each
    class, proportions ``p ~ Dir(alpha * 1_K)``, zeroed for clients that already hold ``N/K`` samples,
    then the class's shuffled samples are cut at the cumulative proportions. The reference resamples
    until every client holds ``min_size`` samples, which can loop for ever at small ``alpha``. Here the
    draw is repeated at most ``max_draws`` times; if no draw meets ``min_size``, the best draw is
    repaired by moving random samples from the largest shards to the smallest until all meet it.

    Args:
        labels: int array ``(N,)``.
        num_clients: number of shards ``K``.
        rng: numpy generator.
        alpha: Dirichlet concentration, ``> 0``; small is skewed, large is near-IID.
        min_size: least number of samples per client, ``>= 1``.
        max_draws: bound on the number of Dirichlet draws.

    Returns:
        One index array per client, each of at least ``min_size`` samples; together they hold every
        index of ``labels`` exactly once.

    Raises:
        ValueError: ``alpha <= 0``, ``min_size < 1`` (an empty client cannot train) or
            ``num_clients * min_size > N`` (the request cannot be met).
    """
    if not alpha > 0:
        raise ValueError(f"dirichlet alpha must be > 0, got {alpha}")
    n = len(labels)
    check_num_clients(num_clients, n, min_size)
    members = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    best = None
    for _ in range(max_draws):
        counts = _dirichlet_counts(np.array([len(m) for m in members]), num_clients, alpha, rng)
        if best is None or counts.sum(axis=0).min() > best.sum(axis=0).min():
            best = counts
        if best.sum(axis=0).min() >= min_size:
            break
    shards: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for class_members, row in zip(members, best):
        for k, part in enumerate(np.split(rng.permutation(class_members), np.cumsum(row)[:-1])):
            shards[k].append(part)
    return [np.sort(s) for s in top_up([np.concatenate(s) for s in shards], min_size, rng)]


def _dirichlet_counts(class_sizes: np.ndarray, num_clients: int, alpha: float, rng) -> np.ndarray:
    """One draw of the reference procedure, as per-class, per-client counts ``(C, K)``."""
    n = class_sizes.sum()
    sizes = np.zeros(num_clients, dtype=np.int64)
    counts = np.zeros((len(class_sizes), num_clients), dtype=np.int64)
    for c, class_size in enumerate(class_sizes):
        p = rng.dirichlet(np.full(num_clients, alpha)) * (sizes < n / num_clients)
        if p.sum() == 0:  # every client is full: the reference divides by zero here
            p = np.ones(num_clients)
        cuts = (np.cumsum(p / p.sum()) * class_size).astype(int)
        cuts[-1] = class_size
        counts[c] = np.diff(cuts, prepend=0)
        sizes += counts[c]
    return counts


@dataclass(frozen=True)
class DirichletOptions:
    """Options of the ``dirichlet`` partitioner."""

    alpha: float = option(0.5, "concentration alpha of the per-class client shares, small is skewed, large "
                               "near-IID (FedCM's class heterogeneity, arXiv 2012.03270; Yurochkin et al. 2019; "
                               "our default)", low=0.0, low_open=True, alias="dirichlet_alpha")


def dirichlet(labels: np.ndarray, owners: np.ndarray | None, num_clients: int, rng: np.random.Generator,
              config: EnvConfig) -> list[np.ndarray]:
    """The registered ``dirichlet`` partitioner: :func:`partition_dirichlet` with ``alpha`` =
    its option ``alpha`` (:class:`DirichletOptions`) and ``min_size`` = ``config.min_client_size``."""
    alpha = config.component_options("partition", "dirichlet").alpha
    return partition_dirichlet(labels, num_clients, rng, alpha=alpha, min_size=config.min_client_size)


dirichlet.Options = DirichletOptions
