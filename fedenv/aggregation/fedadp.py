"""FedAdp: adaptive weighting (Wu and Wang, arXiv 2012.00661): weights from the smoothed angle between
each client's update and the data-weighted mean update, through a Gompertz function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from fedenv.aggregation.base import AggregationRule, Uploads
from fedenv.config import EnvConfig
from fedenv.options import option


def gompertz(theta: np.ndarray, alpha: float = 5.0) -> np.ndarray:
    """FedAdp's Gompertz function ``f(theta) = alpha (1 - exp(-exp(-alpha (theta - 1))))`` (Wu and Wang,
    arXiv 2012.00661, Eq. 10; theta in radians)."""
    theta = np.asarray(theta, dtype=np.float64)
    return alpha * (1.0 - np.exp(-np.exp(-alpha * (theta - 1.0))))


def fedadp_weights(updates: np.ndarray, data_sizes, smoothed: np.ndarray, participations: np.ndarray,
                   alpha: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
    """FedAdp weights (Wu and Wang, arXiv 2012.00661, Eq. 8-11).

    The global update is the data-weighted mean of the client updates; ``theta_i`` the angle between
    client i's update and it; the smoothed angle ``theta~_i(t) = ((t-1)/t) theta~_i(t-1) + (1/t)
    theta_i(t)``, where ``t`` counts the rounds client i has been aggregated in (this one included: with
    client selection, a client's angle is only observed when it uploads); weights proportional to
    ``n_i exp(f(theta~_i))``.

    Args:
        updates: ``(K, P)`` flattened updates ``w_i - w_global`` (the negative local gradient, scaled).
        data_sizes: ``(K,)`` samples per client.
        smoothed: ``(K,)`` previous smoothed angles (ignored where ``participations`` is 0).
        participations: ``(K,)`` earlier rounds each client was aggregated in.
        alpha: Gompertz constant (the paper's best: 5).

    Returns:
        ``(weights (K,) summing to 1, new smoothed angles (K,))``.
    """
    sizes = np.asarray(data_sizes, dtype=np.float64)
    updates = np.asarray(updates, dtype=np.float64)
    mean_update = (sizes / sizes.sum()) @ updates
    norms = np.linalg.norm(updates, axis=1) * np.linalg.norm(mean_update)
    cosine = np.divide(updates @ mean_update, norms, out=np.ones(len(sizes)), where=norms > 0)
    theta = np.arccos(np.clip(cosine, -1.0, 1.0))
    t = np.asarray(participations, dtype=np.float64) + 1.0
    new_smoothed = (t - 1.0) / t * np.asarray(smoothed, dtype=np.float64) + theta / t
    scores = sizes * np.exp(gompertz(new_smoothed, alpha))
    return scores / scores.sum(), new_smoothed


@dataclass(frozen=True)
class FedAdpOptions:
    """Options of the ``fedadp`` rule."""

    alpha: float = option(5.0, "FedAdp's Gompertz parameter alpha (FedAdp's best value 5, arXiv 2012.00661, "
                               "discussion of Fig. 6: \"Empirically, the best alpha is 5\")",
                          low=0.0, low_open=True, alias="fedadp_alpha")


class FedAdp(AggregationRule):
    """:func:`fedadp_weights` over every usable upload, with the Gompertz constant of its option ``alpha``
    (:class:`FedAdpOptions`).

    Attributes:
        smoothed_angle: ``(N,)`` each client's smoothed angle (radians; 0 before its first aggregation).
        participations: ``(N,)`` rounds each client has been aggregated in.
    """

    Options: ClassVar[type] = FedAdpOptions

    def __init__(self, data_sizes: np.ndarray, config: EnvConfig):
        super().__init__(data_sizes, config)
        self.alpha = config.component_options("aggregation").alpha
        self.smoothed_angle = np.zeros(len(self.data_sizes))
        self.participations = np.zeros(len(self.data_sizes), dtype=np.int64)

    def weights(self, uploads: Uploads) -> tuple[np.ndarray, np.ndarray]:
        ids = uploads.clients
        local = torch.cat([v.reshape(len(ids), -1) for v in uploads.params.values()], dim=1)
        anchor = torch.cat([v.reshape(1, -1) for v in uploads.global_params.values()], dim=1)
        updates = (local - anchor).double().cpu().numpy()
        weights, smoothed = fedadp_weights(updates, uploads.data_sizes, self.smoothed_angle[ids],
                                           self.participations[ids], self.alpha)
        self.smoothed_angle[ids] = smoothed
        self.participations[ids] += 1
        return np.arange(len(ids)), weights
