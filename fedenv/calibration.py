"""The reward-weight calibration rule (docs/design.md section 5), measured locally.

For FedAvg on a federation, measure the summed accuracy term ``A = sum_t (U(Acc(t)) - U(Acc(t-1)))``
(``Acc`` on the split the reward uses, ``EnvConfig.reward_accuracy_split``: by default the server's
validation split, so calibration never sees a test label), the summed latency ``L = sum_t H_t`` (s) and
the summed charged traffic ``C = sum_t B_t`` (MB; the upload, or upload and download, as
``EnvConfig.reward_traffic`` says), averaged over the given seeds, and set ``w2 = share * A / L`` and
``w3 = share * A / C`` (``w1 = 1``): FedAvg's summed latency and communication terms are then each
``share`` (our default a quarter) of its accuracy term. The rule and its share are ours. The command is
:mod:`fedenv.calibrate`; the Ray version
:func:`fedenv.distributed.episodes.calibrate_weights_on_ray`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fedenv.baselines import FedAvgPolicy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import run_episode
from fedenv.reward import charged_traffic_mb, utility

CALIBRATION_SEEDS = (10000, 10001, 10002, 10003, 10004)


def calibration_env(config: EnvConfig) -> ClientSelectionEnv:
    """The federation of ``config`` with reward weights ``(1, 0, 0)``, built (so checked: data, trace,
    model, partition) before anything is measured.

    Raises:
        ValueError, FileNotFoundError: what :class:`~fedenv.env.ClientSelectionEnv` raises for ``config``.
    """
    return ClientSelectionEnv(dataclasses.replace(config, accuracy_weight=1.0, latency_weight=0.0, comm_weight=0.0))


def calibrate_weights(config: EnvConfig, seeds=CALIBRATION_SEEDS, share: float = 0.25,
                      env: ClientSelectionEnv | None = None) -> dict:
    """Measure FedAvg on ``seeds`` and return the weights and the measured sums.

    Args:
        env: the :func:`calibration_env` of ``config`` when already built.

    Returns:
        ``{"latency_weight", "comm_weight", "accuracy_term", "latency_s", "charged_mb"}`` (means over
        seeds; ``charged_mb`` is ``C``).
    """
    env = env or calibration_env(config)
    measured = []
    for seed in seeds:
        record = run_episode(env, FedAvgPolicy(), seed)
        accuracy = record.accuracy_on(config.reward_accuracy_split)
        measured.append({
            "accuracy_term": utility(accuracy[-1], config.utility) - utility(accuracy[0], config.utility),
            "latency_s": record.total_latency_s,
            "charged_mb": charged_traffic_mb(record.total_upload_mb, record.total_download_mb, config.reward_traffic),
        })
    return weights_from_measurements(measured, share)


def weights_from_measurements(measured: list[dict], share: float) -> dict:
    """The weights from per-seed measurements ``{"accuracy_term", "latency_s", "charged_mb"}``: their means
    ``A``, ``L``, ``C`` over seeds, ``w2 = share * A / L`` and ``w3 = share * A / C``; returns what
    :func:`calibrate_weights` returns."""
    accuracy, latency, charged = (float(np.mean([m[key] for m in measured]))
                                  for key in ("accuracy_term", "latency_s", "charged_mb"))
    return {"latency_weight": share * accuracy / latency, "comm_weight": share * accuracy / charged,
            "accuracy_term": accuracy, "latency_s": latency, "charged_mb": charged}
