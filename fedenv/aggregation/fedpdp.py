"""FedPdp: FedAvg with partial device participation in FedCM's Table 1 form (Li et al., ICLR 2020)."""

from __future__ import annotations

import numpy as np

from fedenv.aggregation.base import AggregationRule, Uploads


def fedpdp_weights(data_sizes, total_samples: float, num_clients: int) -> np.ndarray:
    """FedCM's Table 1 FedPdp weights ``p_k |S| / |S_t|`` with ``p_k = n_k / total_samples``.

    Args:
        data_sizes: ``(|S_t|,)`` samples of each uploading client.
        total_samples: samples of all clients ``S`` together.
        num_clients: ``|S|``.

    Returns:
        ``(|S_t|,)`` float64 weights; they sum to 1 only in expectation over the selection.
    """
    sizes = np.asarray(data_sizes, dtype=np.float64)
    return sizes / total_samples * num_clients / len(sizes)


class FedPdp(AggregationRule):
    """``w = sum_{k in S_t} p_k |S| / |S_t| w_k`` over every usable upload, ``p_k = n_k / sum_{j in S} n_j``
    over all clients ``S``; the weights are not renormalised."""

    def weights(self, uploads: Uploads) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(len(uploads.clients)), fedpdp_weights(uploads.data_sizes, uploads.total_samples,
                                                               uploads.num_clients)
