"""The reward-weight calibration rule (docs/design.md section 5), measured locally.

For FedAvg on a federation, measure the summed accuracy term ``A = sum_t (U(Acc(t)) - U(Acc(t-1)))``,
the summed latency ``L = sum_t H_t`` (s) and the summed upload ``C = sum_t B_t`` (MB), averaged over the
given seeds, and set ``w2 = share * A / L`` and ``w3 = share * A / C`` (``w1 = 1``): FedAvg's summed
latency and upload terms are then each ``share`` (our default a quarter) of its accuracy term. The rule
and its share are ours. The command is :mod:`fedenv.calibrate`; the Ray version
:func:`fedenv.distributed.episodes.calibrate_weights_on_ray`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fedenv.baselines import FedAvgPolicy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import run_episode
from fedenv.reward import utility

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
        ``{"latency_weight", "comm_weight", "accuracy_term", "latency_s", "comm_mb"}`` (means over seeds).
    """
    env = env or calibration_env(config)
    accuracy_terms, latencies, uploads = [], [], []
    for seed in seeds:
        record = run_episode(env, FedAvgPolicy(), seed)
        gain = utility(record.final_accuracy, config.utility) - utility(record.accuracy[0], config.utility)
        accuracy_terms.append(gain)
        latencies.append(record.total_latency_s)
        uploads.append(record.total_comm_mb)
    accuracy, latency, upload = float(np.mean(accuracy_terms)), float(np.mean(latencies)), float(np.mean(uploads))
    return {"latency_weight": share * accuracy / latency, "comm_weight": share * accuracy / upload,
            "accuracy_term": accuracy, "latency_s": latency, "comm_mb": upload}
