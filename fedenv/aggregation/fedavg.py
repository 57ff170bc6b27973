"""FedAvg: each upload weighted by its client's share of the uploaded samples (McMahan et al.,
AISTATS 2017, Algorithm 1); and FedCM's form of it (Kim et al., arXiv 2012.03270, Eq. 3), where the
clients not sampled keep the current global model."""

from __future__ import annotations

import numpy as np
import torch

from fedenv.aggregation.base import AggregationResult, AggregationRule, Uploads
from fedenv.aggregation.weights import weighted_average, weighted_sum


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


class FedAvgEq3(AggregationRule):
    """FedAvg as FedCM writes it (Kim et al., arXiv 2012.03270, Eq. 3):
    ``w_{t+1} = sum_{k not in S_t} p_k w_t + sum_{k in S_t} p_k w_k`` with ``p_k = n_k / sum_{j in S} n_j``
    over all clients ``S``: a client not sampled keeps the current global model ``w_t``, so its share
    ``p_k`` stays on it, and a round whose uploads hold few samples moves the model little.

    The result's ``weights`` are the uploads' ``p_k`` (they sum to ``sum_{k in S_t} p_k <= 1``; the rest,
    ``1 - sum_{k in S_t} p_k``, sits on ``w_t``). An upload left out as non-finite counts as not sampled.
    BatchNorm running statistics are averaged over the uploads with the ``p_k`` normalised to sum to 1
    (the rule is not given the global model's statistics). With every client uploading it is
    :class:`FedAvg`.
    """

    def aggregate(self, uploads: Uploads) -> AggregationResult:
        shares = np.asarray(uploads.data_sizes, dtype=np.float64) / uploads.total_samples
        rest = max(0.0, 1.0 - float(shares.sum()))
        stacked = {name: torch.cat([uploads.global_params[name].unsqueeze(0).to(values), values])
                   for name, values in uploads.params.items()}   # row 0: the global model w_t
        params = weighted_sum(stacked, np.concatenate([[rest], shares]))
        buffers = weighted_average(uploads.buffers, shares) if uploads.buffers else {}
        return AggregationResult(params, buffers, np.arange(len(uploads.clients)), shares)

