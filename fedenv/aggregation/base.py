"""What an aggregation rule is: it sees the round's uploads and says which to keep and with what weights.

The server (:meth:`fedenv.engine.server.Federation.aggregate`) leaves out uploads holding a non-finite
value, calls :meth:`AggregationRule.weights` on the others, and sets the global model to
``sum_k weight_k * w_k`` over the kept uploads, with the weights as the rule gives them. Rules return
weights summing to 1 over the kept uploads, so the global model is a convex combination of them; only
``EnvConfig.fedpdp_unnormalised`` (FedPdp and FedCA in the papers' literal form) breaks this on purpose.
BatchNorm running statistics are averaged with the weights normalised to sum to 1.

A new rule is one module with a subclass of :class:`AggregationRule` and one registration line in
:mod:`fedenv.registry` (``AGGREGATION_RULES``); ``EnvConfig(aggregation=name)`` then selects it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from fedenv.config import EnvConfig


@dataclass(frozen=True)
class Uploads:
    """The usable (finite) uploads of one round, as a rule sees them. ``K`` uploads, ``V`` validation
    samples, ``C`` classes.

    Attributes:
        clients: ``(K,)`` int64 ids of the uploading clients.
        params: ``name -> (K, *shape)`` their parameters.
        buffers: ``name -> (K, *shape)`` their BatchNorm running statistics (empty for models without).
        global_params: ``name -> (*shape)`` the global model the clients started from.
        data_sizes: ``(K,)`` float64 training samples of each uploading client.
        total_samples: training samples of all clients of the federation together.
        num_clients: clients of the federation.
        validation_logits: computes ``(K, V, C)`` logits of each upload on the server's validation split
            (evaluation mode); called only by rules that need it, as it runs every model.
        validation_labels: ``(V,)`` int64 labels of the validation split (empty without one).
    """

    clients: np.ndarray
    params: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]
    global_params: dict[str, torch.Tensor]
    data_sizes: np.ndarray
    total_samples: float
    num_clients: int
    validation_logits: Callable[[], torch.Tensor]
    validation_labels: torch.Tensor


class AggregationRule(ABC):
    """A server aggregation rule; one instance per federation per episode, so it may keep state across
    rounds (FedAdp's smoothed angles).

    Args:
        data_sizes: ``(N,)`` training samples of each of the federation's ``N`` clients.
        config: the environment's configuration; a rule reads its own options from it.

    Attributes:
        needs_validation: True if :meth:`weights` calls ``uploads.validation_logits`` (the federation then
            refuses to start without a validation split).
    """

    needs_validation: bool = False

    def __init__(self, data_sizes: np.ndarray, config: EnvConfig):
        self.data_sizes = np.asarray(data_sizes, dtype=np.float64)

    @abstractmethod
    def weights(self, uploads: Uploads) -> tuple[np.ndarray, np.ndarray]:
        """Which uploads to aggregate and their weights.

        Returns:
            ``(kept rows (M,) int, weights (M,) float64)``: rows index the uploads (``M >= 1``); weights are
            finite, non-negative, sum to 1 (unless an option documented by the rule says otherwise) and
            are applied as given.
        """


@dataclass
class AggregationResult:
    """What a rule did.

    Attributes:
        params: the new global model.
        kept_rows: rows of the uploads the rule aggregated (FedCA's ``S_opt``; every usable upload for
            the other rules).
        weights: the weight of each kept upload, in ``kept_rows`` order.
        usable_rows: rows whose models were finite (the others were excluded before the rule).
    """

    params: dict[str, torch.Tensor]
    kept_rows: np.ndarray
    weights: np.ndarray
    usable_rows: np.ndarray
