"""Coordinate-wise robust aggregation: the trimmed mean and the median of the uploads (Yin et al.,
ICML 2018, "Byzantine-robust distributed learning", Definitions 1-2; Flower's ``FedTrimmedAvg`` and
``FedMedian``, flwr/server/strategy/aggregate.py ``aggregate_trimmed_avg`` / ``aggregate_median``).

Neither is a weighted sum of the uploads: each coordinate keeps its own middle values. Both implement
:meth:`~fedenv.aggregation.base.AggregationRule.aggregate` directly and report every upload as used,
with weight NaN (no upload has one weight as a whole).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from fedenv.aggregation.base import AggregationResult, AggregationRule, Uploads
from fedenv.options import option


def trimmed_mean(stacked: torch.Tensor, cut: int) -> torch.Tensor:
    """Coordinate-wise mean of ``stacked`` ``(K, *shape)`` without the ``cut`` smallest and ``cut`` largest
    values of each coordinate (``0 <= 2 cut < K``); integer tensors are averaged as floats and rounded back.

    Returns:
        ``(*shape)`` in the input's dtype.
    """
    k = stacked.shape[0]
    if not 0 <= 2 * cut < k:
        raise ValueError(f"cannot cut {cut} of {k} values from each end")
    values = stacked if stacked.is_floating_point() else stacked.double()
    middle = values.sort(dim=0).values[cut:k - cut].mean(dim=0)
    return middle if stacked.is_floating_point() else torch.round(middle).to(stacked.dtype)


class CoordinateWise(AggregationRule):
    """A coordinate-wise rule: each coordinate (parameters and BatchNorm statistics alike) is the mean of
    its values over the ``K`` uploads without the :meth:`cut` smallest and largest."""

    def cut(self, k: int) -> int:
        """Values cut from each end of a coordinate of ``k`` uploads."""
        raise NotImplementedError

    def aggregate(self, uploads: Uploads) -> AggregationResult:
        k = len(uploads.clients)
        cut = self.cut(k)
        params = {name: trimmed_mean(p, cut) for name, p in uploads.params.items()}
        buffers = {name: trimmed_mean(b, cut) for name, b in uploads.buffers.items()}
        return AggregationResult(params, buffers, np.arange(k), np.full(k, np.nan))


@dataclass(frozen=True)
class TrimmedMeanOptions:
    """Options of the ``trimmed-mean`` rule."""

    beta: float = option(0.2, "share of the uploads cut from each end of every coordinate before averaging, "
                              "floor(beta K) each side (Flower's FedTrimmedAvg default 0.2)",
                         low=0.0, high=0.5, high_open=True)


class TrimmedMean(CoordinateWise):
    """Coordinate-wise trimmed mean, ``floor(beta K)`` values cut from each end of each of the ``K``
    uploads' coordinates (Yin et al., ICML 2018, Definition 2; Flower's ``FedTrimmedAvg``; scipy's
    ``trim_mean``)."""

    Options: ClassVar[type] = TrimmedMeanOptions

    def __init__(self, data_sizes: np.ndarray, config):
        super().__init__(data_sizes, config)
        self.beta = config.component_options("aggregation").beta

    def cut(self, k: int) -> int:
        return int(np.floor(self.beta * k))


class Median(CoordinateWise):
    """Coordinate-wise median of the uploads (Yin et al., ICML 2018, Definition 1; Flower's ``FedMedian``,
    ``np.median``: the mean of the two middle values when ``K`` is even)."""

    def cut(self, k: int) -> int:
        return (k - 1) // 2
