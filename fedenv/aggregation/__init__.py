"""Server aggregation rules on stacked client models (``EnvConfig.aggregation``; registered in
:data:`fedenv.registry.AGGREGATION_RULES`).

- ``fedavg``: :class:`~.fedavg.FedAvg`, weights ``n_k / sum_{j in S_t} n_j`` (McMahan et al., AISTATS 2017).
- ``fedavg-eq3``: :class:`~.fedavg.FedAvgEq3`, FedAvg as FedCM writes it (Kim et al., arXiv 2012.03270,
  Eq. 3): ``w = sum_{k not in S_t} p_k w_t + sum_{k in S_t} p_k w_k``, ``p_k = n_k / sum_{j in S} n_j``: the
  clients not sampled keep the current global model.
- ``fedpdp``: :class:`~.fedpdp.FedPdp`, FedCM's Table 1 form of FedAvg with partial device participation
  (Li et al., ICLR 2020): ``w = sum_{k in S_t} p_k |S| / |S_t| w_k`` with
  ``p_k = n_k / sum_{j in S} n_j`` over all clients ``S``, renormalised to sum to 1 (our default:
  then FedAvg's weights); its option ``unnormalised`` keeps the literal form, which sums to
  1 only in expectation.
- ``fedca``: :class:`~.fedca.FedCA`, combinatorial averaging (Kim et al., arXiv 2012.03270, Eq. 4-5): keep
  the subset ``S_opt`` of uploads whose averaged logits score best on the server's validation
  split, then the FedPdp form over ``S_opt`` (renormalised likewise).
- ``fedadp``: :class:`~.fedadp.FedAdp`, adaptive weighting (Wu and Wang, arXiv 2012.00661): weights from
  the smoothed angle between each client's update and the data-weighted mean update, through a
  Gompertz function.
- ``trimmed-mean``, ``median``: :class:`~.trimmed_mean.TrimmedMean`, :class:`~.trimmed_mean.Median`:
  coordinate-wise robust aggregation (Yin et al., ICML 2018; Flower's FedTrimmedAvg, FedMedian).

Every weighted rule's weights sum to 1 over the uploads it keeps (FedPdp and FedCA only stray from this
when their option ``unnormalised`` asks for the papers' literal form; ``fedavg-eq3``'s weights sum to the
uploads' share of the samples, the rest sitting on the current global model). A rule's options are a dataclass
beside its class (``FedCAOptions``; :mod:`fedenv.options`). The contract (:class:`~.base.Uploads`,
:class:`~.base.AggregationRule`, :class:`~.base.AggregationResult`) is in :mod:`.base`; the weighted sums
of today's rules are in :mod:`.weights`; :func:`fedenv.testing.check_aggregation_rule` checks a rule.
"""

from fedenv.aggregation.base import AggregationResult, AggregationRule, Uploads, weighted_result
from fedenv.aggregation.fedadp import FedAdp, fedadp_weights, gompertz
from fedenv.aggregation.fedavg import FedAvg, FedAvgEq3, fedavg_weights
from fedenv.aggregation.fedca import FEDCA_EXHAUSTIVE_LIMIT, FedCA, fedca_scores, fedca_subset
from fedenv.aggregation.fedpdp import FedPdp, fedpdp_weights
from fedenv.aggregation.trimmed_mean import Median, TrimmedMean, trimmed_mean
from fedenv.aggregation.weights import weighted_average, weighted_sum

__all__ = [
    "FEDCA_EXHAUSTIVE_LIMIT",
    "AggregationResult",
    "AggregationRule",
    "FedAdp",
    "FedAvg",
    "FedAvgEq3",
    "FedCA",
    "FedPdp",
    "Median",
    "TrimmedMean",
    "Uploads",
    "fedadp_weights",
    "fedavg_weights",
    "fedca_scores",
    "fedca_subset",
    "fedpdp_weights",
    "gompertz",
    "trimmed_mean",
    "weighted_average",
    "weighted_result",
    "weighted_sum",
]
