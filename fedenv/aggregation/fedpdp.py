"""FedPdp: FedAvg with partial device participation in FedCM's Table 1 form (Li et al., ICLR 2020;
Kim et al., arXiv 2012.03270, Table 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fedenv.aggregation.base import AggregationRule, Uploads
from fedenv.config import EnvConfig
from fedenv.options import option

UNNORMALISED_HELP = ("use FedCM's Table 1 weights p_k |S| / |S_t| literally (p_k = n_k / all clients' samples; "
                     "arXiv 2012.03270), not renormalised: they sum to 1 only in expectation, so each round the "
                     "global model is rescaled by the weights' sum. Default False (ours): renormalised to sum to "
                     "1 over the kept uploads")
"""The help of the ``unnormalised`` option of ``fedpdp`` and ``fedca``."""


def fedpdp_weights(data_sizes, total_samples: float, num_clients: int, renormalise: bool = False) -> np.ndarray:
    """FedCM's Table 1 FedPdp weights ``p_k |S| / |S_t|`` with ``p_k = n_k / total_samples``.

    Args:
        data_sizes: ``(|S_t|,)`` samples of each uploading client.
        total_samples: samples of all clients ``S`` together.
        num_clients: ``|S|``.
        renormalise: divide the weights by their sum. Renormalised, they are FedAvg's
            ``n_k / sum_{j in S_t} n_j`` whatever the data sizes (the factor ``|S| / (|S_t| total_samples)``
            is common to all uploads).

    Returns:
        ``(|S_t|,)`` float64 weights; as the paper writes them (``renormalise=False``) they sum to 1 only in
        expectation over a uniform selection.
    """
    sizes = np.asarray(data_sizes, dtype=np.float64)
    weights = sizes / total_samples * num_clients / len(sizes)
    return weights / weights.sum() if renormalise else weights


@dataclass(frozen=True)
class FedPdpOptions:
    """Options of the ``fedpdp`` rule."""

    unnormalised: bool = option(False, UNNORMALISED_HELP + " (fedpdp's weights are then FedAvg's)",
                                alias="fedpdp_unnormalised")


class FedPdp(AggregationRule):
    """``w = sum_{k in S_t} p_k |S| / |S_t| w_k`` over every usable upload, ``p_k = n_k / sum_{j in S} n_j``
    over all clients ``S``. The weights are renormalised to sum to 1 (our default, which makes them
    FedAvg's) unless its option ``unnormalised`` asks for the paper's literal form, which rescales the
    global model by the weights' sum every round."""

    Options: ClassVar[type] = FedPdpOptions

    def __init__(self, data_sizes: np.ndarray, config: EnvConfig):
        super().__init__(data_sizes, config)
        self.renormalise = not config.component_options("aggregation").unnormalised

    def weights(self, uploads: Uploads) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(len(uploads.clients)), fedpdp_weights(uploads.data_sizes, uploads.total_samples,
                                                               uploads.num_clients, self.renormalise)
