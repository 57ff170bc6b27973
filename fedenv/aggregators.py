"""Aggregation rules on stacked client models.

A stacked model is a ``dict[name -> Tensor]`` whose tensors have a leading client dimension ``K``
(parameters and buffers alike). Floating-point entries are combined as floats; integer entries
(BatchNorm's ``num_batches_tracked``) are combined as floats and rounded back to their own dtype.

Rules (``EnvConfig.aggregation``):

``fedavg``  weights ``n_k / sum_{j in S_t} n_j`` (McMahan et al., AISTATS 2017).
``fedpdp``  FedCM's Table 1 form of FedAvg with partial device participation (Li et al., ICLR 2020):
            ``w = sum_{k in S_t} p_k |S| / |S_t| w_k`` with ``p_k = n_k / sum_{j in S} n_j`` over all
            clients ``S``; the weights are not renormalised (they sum to 1 only in expectation).
``fedca``   combinatorial averaging (Kim et al., arXiv 2012.03270, Eq. 4-5): keep the subset ``S_opt``
            of uploads whose averaged logits score best on the server's validation split, then the
            FedPdp form over ``S_opt``.
``fedadp``  adaptive weighting (Wu and Wang, arXiv 2012.00661): weights from the smoothed angle between
            each client's update and the data-weighted mean update, through a Gompertz function.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch

from fedenv.config import FEDCA_SCORES

FEDCA_EXHAUSTIVE_LIMIT = 10


def weighted_sum(stacked: dict[str, torch.Tensor], weights) -> dict[str, torch.Tensor]:
    """``sum_k weights[k] * stacked[name][k]`` for every entry (weights not renormalised).

    Args:
        stacked: ``name -> (K, *shape)`` tensors.
        weights: ``(K,)`` finite, non-negative weights.

    Returns:
        ``name -> (*shape)`` tensors, each with its input dtype.

    Raises:
        ValueError: weights of the wrong shape, negative or not finite.
    """
    weights = torch.as_tensor(np.asarray(weights, dtype=np.float64))
    k = next(iter(stacked.values())).shape[0]
    if weights.shape != (k,):
        raise ValueError(f"need {k} aggregation weights, got shape {tuple(weights.shape)}")
    if not torch.isfinite(weights).all() or (weights < 0).any():
        raise ValueError(f"aggregation weights must be finite and >= 0, got {weights.tolist()}")
    out = {}
    for name, tensor in stacked.items():
        w = weights.to(tensor.device).view(-1, *([1] * (tensor.dim() - 1)))
        if tensor.is_floating_point():
            out[name] = (w.to(tensor.dtype) * tensor).sum(dim=0)
        else:
            out[name] = torch.round((w * tensor.double()).sum(dim=0)).to(tensor.dtype)
    return out


def weighted_average(stacked: dict[str, torch.Tensor], weights) -> dict[str, torch.Tensor]:
    """:func:`weighted_sum` with the weights normalised to sum to 1.

    Raises:
        ValueError: as :func:`weighted_sum`, or weights summing to zero.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if not np.all(np.isfinite(weights)) or weights.sum() <= 0:
        raise ValueError(f"aggregation weights must be finite, >= 0 and not all 0, got {weights.tolist()}")
    return weighted_sum(stacked, weights / weights.sum())


def fedavg_weights(data_sizes) -> np.ndarray:
    """FedAvg weights ``n_k / sum_j n_j`` over the uploads (McMahan et al., AISTATS 2017, Algorithm 1).

    Args:
        data_sizes: ``(K,)`` training samples of each uploading client.

    Returns:
        ``(K,)`` float64 weights summing to 1.
    """
    sizes = np.asarray(data_sizes, dtype=np.float64)
    return sizes / sizes.sum()


def fedpdp_weights(data_sizes, total_samples: float, num_clients: int) -> np.ndarray:
    """FedCM's Table 1 FedPdp weights ``p_k |S| / |S_t|`` with ``p_k = n_k / total_samples``.

    Args:
        data_sizes: ``(|S_t|,)`` samples of each uploading client.
        total_samples: samples of all clients ``S`` together.
        num_clients: ``|S|``.
    """
    sizes = np.asarray(data_sizes, dtype=np.float64)
    return sizes / total_samples * num_clients / len(sizes)


def fedca_scores(logits: torch.Tensor, labels: torch.Tensor, members: torch.Tensor, score: str) -> torch.Tensor:
    """Validation score of the averaged logits of each candidate subset.

    Args:
        logits: ``(K, V, C)`` logits of each upload on the validation split.
        labels: ``(V,)`` validation labels.
        members: ``(M, K)`` 0/1 float masks, one subset per row (non-empty).
        score: ``acc`` (the Dirac-delta score: accuracy) or ``ce`` (minus the mean cross-entropy of the
            softmax of the averaged logits; the paper's classification loss, negated so that larger is
            better).

    Returns:
        ``(M,)`` scores (larger is better).
    """
    if score not in FEDCA_SCORES:
        raise ValueError(f"fedca_score={score!r} is not known; allowed: {', '.join(FEDCA_SCORES)}")
    k, v, c = logits.shape
    averaged = (members / members.sum(dim=1, keepdim=True)) @ logits.reshape(k, v * c)
    averaged = averaged.reshape(-1, v, c)
    if score == "acc":
        return (averaged.argmax(dim=-1) == labels).double().mean(dim=1)
    log_probs = averaged.log_softmax(dim=-1)
    return log_probs.gather(-1, labels.expand(len(members), v).unsqueeze(-1)).squeeze(-1).double().mean(dim=1)


def fedca_subset(logits: torch.Tensor, labels: torch.Tensor, score: str = "ce") -> np.ndarray:
    """FedCA's combinatorial model filter (Kim et al., arXiv 2012.03270, Eq. 4): the subset of uploads
    whose averaged logits score best on the validation split.

    Up to :data:`FEDCA_EXHAUSTIVE_LIMIT` uploads every non-empty subset is scored (ties go to the larger
    subset, then to the lower indices); above it, greedy forward selection adds the upload that improves
    the score most until none does (our default, DESIGN.md section 7).

    Args:
        logits: ``(K, V, C)``; labels: ``(V,)``; score: ``acc`` or ``ce``.

    Returns:
        Sorted row indices of ``S_opt`` (never empty when ``K >= 1``).
    """
    k = logits.shape[0]
    if k <= FEDCA_EXHAUSTIVE_LIMIT:
        subsets = [s for size in range(k, 0, -1) for s in itertools.combinations(range(k), size)]
        members = torch.zeros(len(subsets), k, dtype=logits.dtype, device=logits.device)
        for row, subset in enumerate(subsets):
            members[row, list(subset)] = 1.0
        scores = fedca_scores(logits, labels, members, score)
        return np.array(subsets[int(torch.argmax(scores))])  # first maximum: larger subsets come first
    chosen: list[int] = []
    best = -math.inf
    while len(chosen) < k:
        rest = [i for i in range(k) if i not in chosen]
        members = torch.zeros(len(rest), k, dtype=logits.dtype, device=logits.device)
        for row, i in enumerate(rest):
            members[row, chosen + [i]] = 1.0
        scores = fedca_scores(logits, labels, members, score)
        top = int(torch.argmax(scores))
        if chosen and float(scores[top]) <= best:
            break
        best = float(scores[top])
        chosen.append(rest[top])
    return np.array(sorted(chosen))


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
