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

Two options of :class:`fedenv.config.EnvConfig`, both off by default (the table above is then the whole
layout), change it so that one network can serve other numbers of clients K and rounds T:

``observation_normalised``: three features are replaced, in place, by ones whose range and typical
value do not move with K or T (:data:`HORIZON_ROUNDS` = 100 rounds is a fixed horizon, not ``T``):

====================================  =================================================  ===========
``data_size_quantile``                quantile of the client's samples among all K       [0, 1]
``rounds_since_last_upload_h100``     min(rounds, 100) / 100                             [0, 1]
``round_index_h100``                  min(t, 100) / 100                                  [0, 1]
====================================  =================================================  ===========

``observation_context``: four features of this round's candidate set, which the server holds for every
candidate (all agents run on the server), are appended:

====================================  =================================================  ===========
``probing_loss_quantile``             quantile of the client's probing loss among the    [0, 1]
                                      round's candidates (0 for a non-candidate)
``probe_latency_quantile``            the same for its newest probing latency            [0, 1]
``slowest_probe_latency``             max newest probing latency over the candidates /   [0, 50]
                                      reference latency (the same for every client)
``num_candidates_log``                log10(1 + candidates) / 3 (the same for every      [0, 1]
                                      client)
====================================  =================================================  ===========

``observation_estimates``: three features of the server's per-client estimates, which the fixed
policies read (Oort's and ``fastest``'s speed, ``stale-fastest``'s staleness), are appended last:

========================================  =================================================  ===========
``expected_round_latency``                the client's expected round time / reference       [0, 50]
                                          latency: its latest probing latency plus its
                                          latest upload latency, or its device-profile
                                          estimate before its first report
                                          (:func:`fedenv.latency.expected_round_s`)
``expected_round_quantile``               quantile of that time among the round's            [0, 1]
                                          candidates (0 for a non-candidate)
``rounds_since_last_upload_quantile``     quantile of the rounds since the last upload       [0, 1]
                                          among the round's candidates (0 for a
                                          non-candidate)
========================================  =================================================  ===========

A quantile is ``(rank - 1) / (n - 1)`` with ``rank`` the average rank (ties share it,
``scipy.stats.rankdata(method="average")``) among ``n`` values, 0.5 when ``n = 1``; a NaN loss ranks
last. Without probing (``probing=False``) the probing columns hold each client's report from the last
round it took part, as the features above do.

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
from scipy.stats import rankdata

MODEL_SIZE_MB_LOG_SCALE = 3.0
HORIZON_ROUNDS = 100
"""The fixed horizon (rounds) of the ``observation_normalised`` round features."""
NUM_CANDIDATES_LOG_SCALE = 3.0
CONTEXT_FEATURES = ("probing_loss_quantile", "probe_latency_quantile", "slowest_probe_latency",
                    "num_candidates_log")
"""The features ``observation_context`` appends, in order."""
ESTIMATE_FEATURES = ("expected_round_latency", "expected_round_quantile", "rounds_since_last_upload_quantile")
"""The features ``observation_estimates`` appends, in order (after the context's)."""


def layout_options(config) -> dict:
    """The keyword arguments of :func:`feature_names` and :func:`feature_bounds` for an
    :class:`~fedenv.config.EnvConfig` ``config`` (its ``history_length`` and ``observation_*`` fields)."""
    return dict(history_length=config.history_length, context=config.observation_context,
                normalised=config.observation_normalised, estimates=config.observation_estimates)


def feature_names(history_length: int, context: bool = False, normalised: bool = False,
                  estimates: bool = False) -> list[str]:
    """Names of the observation features in order (length ``2 * history_length + 7``, plus 4 with
    ``context`` and 3 with ``estimates``; module docstring)."""
    data, since, round_index = (("data_size_quantile", "rounds_since_last_upload_h100", "round_index_h100")
                                if normalised else ("data_size", "rounds_since_last_upload", "round_fraction"))
    return (
        ["probing_loss"]
        + [f"probe_latency_hist_{i}" for i in range(history_length)]
        + [f"upload_latency_hist_{i}" for i in range(history_length)]
        + ["model_size_mb", data, since, round_index, "is_candidate", "global_accuracy"]
        + (list(CONTEXT_FEATURES) if context else [])
        + (list(ESTIMATE_FEATURES) if estimates else [])
    )


def feature_bounds(history_length: int, context: bool = False, normalised: bool = False, estimates: bool = False
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` float32 arrays of the observation Box (same arguments as :func:`feature_names`)."""
    high = [5.0] + [50.0] * (2 * history_length) + [1.0, 1.0 if normalised else 20.0, 1.0, 1.0, 1.0, 1.0]
    if context:
        high += [1.0, 1.0, 50.0, 1.0]
    if estimates:
        high += [50.0, 1.0, 1.0]
    high = np.array(high, dtype=np.float32)
    return np.zeros_like(high), high


def quantile(values: np.ndarray) -> np.ndarray:
    """``(n,)`` -> ``(n,)`` quantiles ``(rank - 1) / (n - 1)`` with average ranks for ties, 0.5 for
    ``n = 1``; NaN ranks last (as +inf)."""
    values = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=np.inf)
    if len(values) == 1:
        return np.array([0.5])
    return (rankdata(values, method="average") - 1.0) / (len(values) - 1)


def candidate_context(probing_loss: np.ndarray, probe_latency_s: np.ndarray, is_candidate: np.ndarray,
                      reference_latency_s: float) -> np.ndarray:
    """``(K, 4)`` columns of :data:`CONTEXT_FEATURES` (module docstring), unclipped.

    Args:
        probing_loss: ``(K,)`` nats. probe_latency_s: ``(K,)`` newest probing latency, s.
        is_candidate: ``(K,)`` bool. reference_latency_s: latency scale, s.
    """
    k = len(is_candidate)
    out = np.zeros((k, 4))
    chosen = np.flatnonzero(is_candidate)
    if len(chosen):
        out[chosen, 0] = quantile(np.asarray(probing_loss)[chosen])
        out[chosen, 1] = quantile(np.asarray(probe_latency_s)[chosen])
        out[:, 2] = np.max(np.asarray(probe_latency_s)[chosen]) / reference_latency_s
    out[:, 3] = math.log10(1.0 + len(chosen)) / NUM_CANDIDATES_LOG_SCALE
    return out


def candidate_estimates(expected_round_s: np.ndarray, rounds_since_upload: np.ndarray, is_candidate: np.ndarray,
                        reference_latency_s: float) -> np.ndarray:
    """``(K, 3)`` columns of :data:`ESTIMATE_FEATURES` (module docstring), unclipped.

    Args:
        expected_round_s: ``(K,)`` each client's expected round time, s (:func:`fedenv.latency.expected_round_s`).
        rounds_since_upload: ``(K,)`` rounds since each client last uploaded. is_candidate: ``(K,)`` bool.
        reference_latency_s: latency scale, s.
    """
    out = np.zeros((len(is_candidate), 3))
    out[:, 0] = np.asarray(expected_round_s, dtype=np.float64) / reference_latency_s
    chosen = np.flatnonzero(is_candidate)
    if len(chosen):
        out[chosen, 1] = quantile(np.asarray(expected_round_s)[chosen])
        out[chosen, 2] = quantile(np.asarray(rounds_since_upload)[chosen])
    return out


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
    context: bool = False,
    normalised: bool = False,
    expected_round_s: np.ndarray | None = None,
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
        context, normalised: the layout options (module docstring; ``EnvConfig.observation_context`` and
            ``EnvConfig.observation_normalised``).
        expected_round_s: ``(K,)`` each client's expected round time, s, to append the
            :data:`ESTIMATE_FEATURES` (``EnvConfig.observation_estimates``); None: not appended.

    Returns:
        float32 ``(K, 2h + 7)`` (4 columns more with ``context``, then 3 more with ``expected_round_s``),
        inside :func:`feature_bounds`.
    """
    k, h = probe_latency_hist_s.shape
    since = np.asarray(rounds_since_upload, dtype=np.float64)[:, None]
    if normalised:
        data = quantile(data_size)[:, None]
        since = np.minimum(since, HORIZON_ROUNDS) / HORIZON_ROUNDS
        round_column = np.full((k, 1), min(round_index, HORIZON_ROUNDS) / HORIZON_ROUNDS)
    else:
        data = (np.asarray(data_size, dtype=np.float64) / np.mean(data_size))[:, None]
        since = since / num_rounds
        round_column = np.full((k, 1), round_index / num_rounds)
    columns = [
        np.asarray(probing_loss)[:, None] / math.log(num_classes),
        probe_latency_hist_s / reference_latency_s,
        upload_latency_hist_s / reference_latency_s,
        np.full((k, 1), math.log10(1.0 + model_size_mb) / MODEL_SIZE_MB_LOG_SCALE),
        data,
        since,
        round_column,
        np.asarray(is_candidate, dtype=np.float64)[:, None],
        np.full((k, 1), global_accuracy),
    ]
    if context:
        columns.append(candidate_context(probing_loss, probe_latency_hist_s[:, 0], is_candidate, reference_latency_s))
    if expected_round_s is not None:
        columns.append(candidate_estimates(expected_round_s, rounds_since_upload, is_candidate, reference_latency_s))
    low, high = feature_bounds(h, context, normalised, expected_round_s is not None)
    stacked = np.nan_to_num(np.concatenate(columns, axis=1), nan=0.0, posinf=float(high.max()))
    return np.clip(stacked, low, high).astype(np.float32)
