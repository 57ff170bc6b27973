"""The team reward of one FL round (docs/design.md, section 5; after FedMarl, arXiv 2201.02932, Eq. 3).

``r_t = w1 * (U(Acc(t)) - U(Acc(t-1))) - w2 * H_t - w3 * B_t``

with ``H_t`` the round latency in seconds and ``B_t`` the uploaded megabytes. Summed over an episode
the accuracy term telescopes to ``w1 * (U(Acc(T)) - U(Acc(0)))``.
"""

from __future__ import annotations

from fedenv.config import UTILITIES
from fedenv.names import check_known


def utility(accuracy: float, kind: str = "exp64") -> float:
    """Accuracy utility ``U``.

    ``exp64``: the exponential utility of FAVOR's reward ``64**(a - target) - 1`` (Wang et al.,
    "Optimizing federated learning on non-IID data with reinforcement learning", INFOCOM 2020), which
    FedMarl adopts; shifted and scaled here to ``U(a) = (64**a - 1) / 63`` so that ``U(0) = 0`` and ``U(1) = 1``;
    its slope grows with
    accuracy, so the reward stays responsive near the end of training. ``linear``: ``U(a) = a``.

    Args:
        accuracy: test accuracy as a fraction in ``[0, 1]``.
        kind: one of :data:`UTILITIES`.

    Raises:
        ValueError: unknown kind.
    """
    check_known(kind, UTILITIES, "utility")
    if kind == "linear":
        return float(accuracy)
    return float((64.0**accuracy - 1.0) / 63.0)


def team_reward(
    accuracy: float,
    previous_accuracy: float,
    latency_s: float,
    upload_mb: float,
    weights: tuple[float, float, float],
    kind: str = "exp64",
) -> float:
    """``w1 * (U(accuracy) - U(previous_accuracy)) - w2 * latency_s - w3 * upload_mb``."""
    w1, w2, w3 = weights
    return w1 * (utility(accuracy, kind) - utility(previous_accuracy, kind)) - w2 * latency_s - w3 * upload_mb
