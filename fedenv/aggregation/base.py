"""What an aggregation rule is: it sees the round's uploads and returns the new global model.

The server (:meth:`fedenv.engine.server.Federation.aggregate`) leaves out uploads holding a non-finite
value and calls :meth:`AggregationRule.aggregate` on the others; the rule returns an
:class:`AggregationResult`: the new global model (parameters and BatchNorm statistics), which uploads it
used and with what weight (in the manner of Flower's ``Strategy.aggregate_fit``, which returns the new
parameters). A rule of today's kind, a weighted sum of the uploads, implements :meth:`AggregationRule.weights`
only; the base class then forms ``sum_k weight_k * w_k`` over the kept uploads (:func:`weighted_result`).
Those rules return weights summing to 1 over the kept uploads, so the global model is a convex
combination of them; only the option ``unnormalised`` of ``fedpdp`` and ``fedca`` (the papers' literal
form) breaks this on purpose, and ``fedavg-eq3`` (FedCM's Eq. 3), whose weights leave the share of the
clients not sampled on the current global model. BatchNorm running statistics are averaged with the
weights normalised to sum to 1. A rule that is not a weighted sum (coordinate-wise median, trimmed mean:
:mod:`fedenv.aggregation.trimmed_mean`) implements :meth:`AggregationRule.aggregate` itself.

A new rule is one module with a subclass of :class:`AggregationRule` and one registration line in
:mod:`fedenv.registry` (``AGGREGATION_RULES``); ``EnvConfig(aggregation=name)`` then selects it, and
:func:`fedenv.testing.check_aggregation_rule` checks it against this contract.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from fedenv.aggregation.weights import take_rows, weighted_average, weighted_sum
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


@dataclass
class AggregationResult:
    """What a rule did: the new global model, and which uploads it used with what weight.

    Attributes:
        params: ``name -> (*shape)`` the new global model's parameters.
        buffers: ``name -> (*shape)`` its BatchNorm running statistics (empty for models without).
        kept_rows: rows of the uploads the rule used (FedCA's ``S_opt``; every usable upload for the other
            rules); the server turns them into rows of the round's completed clients.
        weights: ``(len(kept_rows),)`` the weight of each kept upload, in ``kept_rows`` order; NaN for a rule
            that weighs no upload as a whole (a coordinate-wise median or trimmed mean).
        usable_rows: set by the server: rows whose models were finite (the others were excluded before
            the rule); None in what a rule returns.
    """

    params: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]
    kept_rows: np.ndarray
    weights: np.ndarray
    usable_rows: np.ndarray | None = None


def weighted_result(uploads: Uploads, kept, weights) -> AggregationResult:
    """The weighted-sum aggregate of today's rules: ``sum_k weights[k] * w_k`` over the uploads at rows
    ``kept`` (:func:`~fedenv.aggregation.weights.weighted_sum`, weights as given), their BatchNorm
    statistics averaged with the weights normalised to sum to 1
    (:func:`~fedenv.aggregation.weights.weighted_average`; ``num_batches_tracked`` rounded to an integer).

    Args:
        kept: ``(M,)`` int rows of ``uploads``, ``M >= 1``. weights: ``(M,)`` finite, non-negative.

    Raises:
        ValueError: weights of the wrong shape, negative or not finite (or all 0 with BatchNorm).
    """
    kept = np.asarray(kept, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    params = weighted_sum(take_rows(uploads.params, kept), weights)
    buffers = weighted_average(take_rows(uploads.buffers, kept), weights) if uploads.buffers else {}
    return AggregationResult(params, buffers, kept, weights)


class AggregationRule:
    """A server aggregation rule; one instance per federation per episode, so it may keep state across
    rounds (FedAdp's smoothed angles). A subclass implements :meth:`weights` (a weighted-sum rule) or
    :meth:`aggregate` (any other); defining neither raises ``TypeError`` at class creation.

    Args:
        data_sizes: ``(N,)`` training samples of each of the federation's ``N`` clients.
        config: the environment's configuration; a rule reads its own options from it.

    Attributes:
        needs_validation: True if the rule calls ``uploads.validation_logits`` (the federation then
            refuses to start without a validation split).
    """

    needs_validation: bool = False

    def __init__(self, data_sizes: np.ndarray, config: EnvConfig):
        self.data_sizes = np.asarray(data_sizes, dtype=np.float64)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.weights is AggregationRule.weights and cls.aggregate is AggregationRule.aggregate:
            raise TypeError(f"aggregation rule {cls.__name__} must define weights() or aggregate()")

    def aggregate(self, uploads: Uploads) -> AggregationResult:
        """The new global model from the round's ``uploads`` (``K >= 1`` finite ones).

        The default is the weighted sum of :meth:`weights` (:func:`weighted_result`).

        Returns:
            An :class:`AggregationResult` whose ``params`` (and ``buffers``, for models with BatchNorm)
            have the global model's names, shapes and dtypes, and whose rows index ``uploads``.
        """
        kept, weights = self.weights(uploads)
        return weighted_result(uploads, kept, weights)

    def weights(self, uploads: Uploads) -> tuple[np.ndarray, np.ndarray]:
        """Which uploads to aggregate and their weights (a weighted-sum rule's one method).

        Returns:
            ``(kept rows (M,) int, weights (M,) float64)``: rows index the uploads (``M >= 1``); weights are
            finite, non-negative, sum to 1 (unless an option documented by the rule says otherwise) and
            are applied as given.

        Raises:
            NotImplementedError: the rule is not a weighted sum (it defines :meth:`aggregate`).
        """
        raise NotImplementedError(f"{type(self).__name__} is not a weighted-sum rule: call aggregate()")


