"""Per-agent observation vector: layout, scaling and bounds (docs/design.md, section 6).

Features, in order (``h`` = ``history_length``), each scaled to a bounded range and clipped to it:

====================================  =================================================  ===========
feature                               scaling                                            range
====================================  =================================================  ===========
``probing_loss``                      latest probing loss / ln(num_classes)              [0, 5]
``probe_latency_hist[0..h-1]``        probing latency / reference latency, newest first  [0, 50]
``upload_latency_hist[0..h-1]``       upload latency / reference latency, newest first   [0, 50]
``model_size_mb``                     log10(1 + MB of one model) / 3                     [0, 1]
``data_size``                         client samples / mean client samples               [0, 20]
``rounds_since_last_upload``          rounds / num_rounds                                [0, 1]
``round_fraction``                    t / T                                              [0, 1]
``is_candidate``                      1 if a candidate this round, else 0                [0, 1]
``global_accuracy``                   accuracy of the current global model (see below)   [0, 1]
====================================  =================================================  ===========

Histories hold zeros before a client has any. A non-finite value (a diverged client's loss) becomes
the feature's upper bound (+inf) or 0 (NaN), so every observation stays finite and inside its Box.
The reference latency is a per-configuration constant:
the median over trace clients of one full local round (download, ``E`` epochs on the mean client
size, upload) at each client's median bandwidth. ``global_accuracy`` is an addition to FedMarl's state:
the accuracy term of the reward is a difference of utilities, so a state's value depends on the
current accuracy; without it, every round's accuracy swing enters the TD target as unexplained noise.
It is the accuracy the reward uses (``EnvConfig.reward_accuracy_split``: by default the server's
validation split, so no test label reaches a policy).
"""

from __future__ import annotations

import math

import numpy as np

MODEL_SIZE_MB_LOG_SCALE = 3.0


def feature_names(history_length: int) -> list[str]:
    """Names of the observation features in order (length ``2 * history_length + 7``)."""
    return (
        ["probing_loss"]
        + [f"probe_latency_hist_{i}" for i in range(history_length)]
        + [f"upload_latency_hist_{i}" for i in range(history_length)]
        + ["model_size_mb", "data_size", "rounds_since_last_upload", "round_fraction", "is_candidate",
           "global_accuracy"]
    )


def feature_bounds(history_length: int) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` float32 arrays of the observation Box."""
    high = np.array(
        [5.0] + [50.0] * (2 * history_length) + [1.0, 20.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float32
    )
    return np.zeros_like(high), high


def build_observations(
    probing_loss: np.ndarray,
    probe_latency_hist_s: np.ndarray,
    upload_latency_hist_s: np.ndarray,
    model_size_mb: float,
    data_size: np.ndarray,
    rounds_since_upload: np.ndarray,
    round_index: int,
    num_rounds: int,
    is_candidate: np.ndarray,
    global_accuracy: float,
    num_classes: int,
    reference_latency_s: float,
) -> np.ndarray:
    """Stack every client's scaled, clipped observation.

    Args:
        probing_loss: ``(K,)`` latest probing loss of each client (cross-entropy, nats).
        probe_latency_hist_s: ``(K, h)`` probing latencies, s, newest first.
        upload_latency_hist_s: ``(K, h)`` upload latencies, s, newest first.
        model_size_mb: size of one model transfer (upload or download), MB.
        data_size: ``(K,)`` client sample counts.
        rounds_since_upload: ``(K,)`` rounds since each client last uploaded.
        round_index: rounds completed ``t``; num_rounds: ``T``.
        is_candidate: ``(K,)`` bool.
        global_accuracy: accuracy of the global model on the reward's split, in [0, 1].
        num_classes: number of labels (scales the loss).
        reference_latency_s: latency scale, s.

    Returns:
        float32 ``(K, 2h + 7)``, inside :func:`feature_bounds`.
    """
    k, h = probe_latency_hist_s.shape
    columns = [
        np.asarray(probing_loss)[:, None] / math.log(num_classes),
        probe_latency_hist_s / reference_latency_s,
        upload_latency_hist_s / reference_latency_s,
        np.full((k, 1), math.log10(1.0 + model_size_mb) / MODEL_SIZE_MB_LOG_SCALE),
        (np.asarray(data_size, dtype=np.float64) / np.mean(data_size))[:, None],
        np.asarray(rounds_since_upload, dtype=np.float64)[:, None] / num_rounds,
        np.full((k, 1), round_index / num_rounds),
        np.asarray(is_candidate, dtype=np.float64)[:, None],
        np.full((k, 1), global_accuracy),
    ]
    low, high = feature_bounds(h)
    stacked = np.nan_to_num(np.concatenate(columns, axis=1), nan=0.0, posinf=float(high.max()))
    return np.clip(stacked, low, high).astype(np.float32)
