"""FedCA: combinatorial averaging (Kim et al., arXiv 2012.03270, Eq. 4-5): keep the subset ``S_opt`` of
uploads whose averaged logits score best on the server's validation split, then the FedPdp form over
``S_opt`` (renormalised by default, see :class:`FedCA`)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from fedenv.aggregation.base import AggregationRule, Uploads
from fedenv.aggregation.fedpdp import UNNORMALISED_HELP, fedpdp_weights
from fedenv.config import EnvConfig
from fedenv.names import check_known
from fedenv.options import option

FEDCA_SCORES = ("acc", "ce")
"""FedCA's validation scores (:func:`fedca_scores`)."""

FEDCA_EXHAUSTIVE_LIMIT = 10
"""Up to this many uploads :func:`fedca_subset` scores every subset; above it, greedy forward selection."""


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

    Raises:
        ValueError: ``score`` is not one of :data:`FEDCA_SCORES`.
    """
    check_known(score, FEDCA_SCORES, "score")
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
    the score most until none does (our default, docs/design.md, section 8).

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


@dataclass(frozen=True)
class FedCAOptions:
    """Options of the ``fedca`` rule."""

    score: str = option("ce", "FedCA's validation score of a subset: acc (Dirac delta, accuracy) or ce "
                              "(classification loss; our default, the score FedCM reports generalising better, "
                              "arXiv 2012.03270 Fig. 2)", choices=FEDCA_SCORES, alias="fedca_score")
    unnormalised: bool = option(False, UNNORMALISED_HELP + " (FedCA: |S_opt| for |S_t|, Eq. 5)",
                                alias="fedpdp_unnormalised")


class FedCA(AggregationRule):
    """:func:`fedca_subset` of the uploads, then FedPdp weights (:func:`~fedenv.aggregation.fedpdp.fedpdp_weights`)
    over it (Eq. 5: ``p_k |S| / |S_opt|``), renormalised to sum to 1 over ``S_opt`` (our default) unless
    its option ``unnormalised`` asks for the paper's literal form; its option ``score`` (``acc`` or ``ce``;
    the paper found ``ce`` generalise better, our default) scores the subsets (:class:`FedCAOptions`)."""

    needs_validation = True
    Options: ClassVar[type] = FedCAOptions

    def __init__(self, data_sizes: np.ndarray, config: EnvConfig):
        super().__init__(data_sizes, config)
        options = config.component_options("aggregation")
        self.score, self.renormalise = options.score, not options.unnormalised

    def weights(self, uploads: Uploads) -> tuple[np.ndarray, np.ndarray]:
        kept = fedca_subset(uploads.validation_logits(), uploads.validation_labels, self.score)
        return kept, fedpdp_weights(uploads.data_sizes[kept], uploads.total_samples, uploads.num_clients,
                                    self.renormalise)
