"""FedAvg: each upload weighted by its client's share of the uploaded samples (McMahan et al.,
AISTATS 2017, Algorithm 1)."""

from __future__ import annotations

import numpy as np

from fedenv.aggregation.base import AggregationRule, Uploads


def fedavg_weights(data_sizes) -> np.ndarray:
    """FedAvg weights ``n_k / sum_j n_j`` over the uploads (McMahan et al., AISTATS 2017, Algorithm 1).

    Args:
        data_sizes: ``(K,)`` training samples of each uploading client.

    Returns:
        ``(K,)`` float64 weights summing to 1.
    """
    sizes = np.asarray(data_sizes, dtype=np.float64)
    return sizes / sizes.sum()


class FedAvg(AggregationRule):
    """``w = sum_{k in S_t} n_k / sum_{j in S_t} n_j w_k`` over every usable upload."""

    def weights(self, uploads: Uploads) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(len(uploads.clients)), fedavg_weights(uploads.data_sizes)
