"""The team reward of one FL round (docs/design.md, section 5; after FedMarl, arXiv 2201.02932, Eq. 3).

``r_t = w1 * (U(Acc(t)) - U(Acc(t-1))) - w2 * H_t - w3 * B_t``

with ``Acc(t)`` the global model's accuracy after round ``t`` on the split
``EnvConfig.reward_accuracy_split`` names (our default the server's validation split; FedMarl's is the
test accuracy), ``H_t`` the round latency in seconds and ``B_t`` the megabytes the communication term
charges (``EnvConfig.reward_traffic``: FedMarl's upload, our default, or upload and download). Summed over
an episode the accuracy term telescopes to ``w1 * (U(Acc(T)) - U(Acc(0)))``.
"""

from __future__ import annotations

from fedenv.config import REWARD_TRAFFIC, UTILITIES
from fedenv.names import check_known


def utility(accuracy: float, kind: str = "exp64") -> float:
    """Accuracy utility ``U``.

    ``exp64``: our choice, after the exponential utility of FAVOR's reward ``64**(a - target) - 1``
    (Wang et al., "Optimizing federated learning on non-IID data with reinforcement learning", INFOCOM
    2020); FedMarl's reward (arXiv 2201.02932, pp. 4-5) uses a utility responsive late in training whose
    formula the text we hold does not give. Shifted and scaled here to ``U(a) = (64**a - 1) / 63`` so that
    ``U(0) = 0`` and ``U(1) = 1``; its slope grows with accuracy, so the reward stays responsive near the
    end of training. ``linear``: ``U(a) = a``.

    Args:
        accuracy: accuracy as a fraction in ``[0, 1]``.
        kind: one of :data:`UTILITIES`.

    Raises:
        ValueError: unknown kind.
    """
    check_known(kind, UTILITIES, "utility")
    if kind == "linear":
        return float(accuracy)
    return float((64.0**accuracy - 1.0) / 63.0)


def charged_traffic_mb(upload_mb: float, download_mb: float, traffic: str = "upload") -> float:
    """The megabytes ``B_t`` the reward's communication term charges for a round that uploaded
    ``upload_mb`` and downloaded ``download_mb``: ``upload_mb`` for ``"upload"`` (FedMarl's term, arXiv
    2201.02932 Eq. 3), their sum for ``"upload+download"``.

    Raises:
        ValueError: ``traffic`` not in :data:`~fedenv.config.REWARD_TRAFFIC`.
    """
    check_known(traffic, REWARD_TRAFFIC, "reward_traffic")
    return upload_mb + download_mb if traffic == "upload+download" else upload_mb


def team_reward(
    accuracy: float,
    previous_accuracy: float,
    latency_s: float,
    traffic_mb: float,
    weights: tuple[float, float, float],
    kind: str = "exp64",
) -> float:
    """``w1 * (U(accuracy) - U(previous_accuracy)) - w2 * latency_s - w3 * traffic_mb``.

    Args:
        accuracy, previous_accuracy: ``Acc(t)`` and ``Acc(t-1)``, fractions in ``[0, 1]``.
        latency_s: the round's latency ``H_t``, s.
        traffic_mb: the charged traffic ``B_t``, MB (:func:`charged_traffic_mb`).
        weights: ``(w1, w2, w3)``.
        kind: the utility, one of :data:`UTILITIES`.
    """
    w1, w2, w3 = weights
    return w1 * (utility(accuracy, kind) - utility(previous_accuracy, kind)) - w2 * latency_s - w3 * traffic_mb
