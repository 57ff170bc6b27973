"""What the server knows of its clients, and what one FL round did (the records of
:class:`fedenv.simulator.FederationSimulator`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ClientStates:
    """What the server knows of each of its ``K`` clients (arrays indexed by client id).

    Attributes:
        data_size: ``(K,)`` training samples.
        probe_loss, probe_loss_sq: ``(K,)`` mean and mean square of the per-sample training losses of the
            client's latest probing epoch (without probing: the first local epoch of its latest round
            finished by the deadline), nats (0 before its first).
        probe_latency_hist_s, upload_latency_hist_s: ``(K, h)`` latest probing and upload latencies, s,
            newest first (0 before any).
        last_upload_round: ``(K,)`` round of the client's latest aggregated-or-not upload, -1 before any.
        epoch_samples: ``(K,)`` samples trained per epoch (``data_size`` less a partial batch for
            BatchNorm models), known once the client has probed.
        online: ``(K,)`` bool, online when the current round started.
    """

    data_size: np.ndarray
    probe_loss: np.ndarray
    probe_loss_sq: np.ndarray
    probe_latency_hist_s: np.ndarray
    upload_latency_hist_s: np.ndarray
    last_upload_round: np.ndarray
    epoch_samples: np.ndarray
    online: np.ndarray

    @classmethod
    def fresh(cls, data_size: np.ndarray, history_length: int) -> ClientStates:
        """The record at the start of an episode: nothing reported yet, nobody online."""
        k = len(data_size)
        return cls(np.asarray(data_size), np.zeros(k), np.zeros(k), np.zeros((k, history_length)),
                   np.zeros((k, history_length)), np.full(k, -1), np.zeros(k), np.zeros(k, dtype=bool))


@dataclass(frozen=True)
class RoundOutcome:
    """What one round did. Client sets are sorted int arrays of client ids.

    Attributes:
        candidates: the round's candidates (with probing, the clients that probed).
        selected: the candidates told to finish and upload.
        completed: the selected clients that finished by the deadline (all of them without one); their
            uploads count in ``upload_mb``.
        usable: the completed uploads whose models were finite.
        kept: the uploads the aggregation rule used (FedCA's ``S_opt``; ``usable`` for the other rules).
        weights: ``(len(kept),)`` aggregation weight of each kept upload.
        latency_s: the round's latency, s (:mod:`fedenv.latency`; an idle round waits for a client).
        upload_mb: megabytes uploaded this round (``model_size_mb`` per completed client).
        download_mb: megabytes of the global model sent to clients this round (``model_size_mb`` per
            candidate with probing, where every candidate downloads it to probe; per selected client
            without probing, stragglers included).
        reward_accuracy, previous_reward_accuracy: accuracy of the global model after and before the round
            on the split ``EnvConfig.reward_accuracy_split`` names (what the reward uses).
        idle: nobody was online: the round only advanced the clock.
    """

    candidates: np.ndarray
    selected: np.ndarray
    completed: np.ndarray
    usable: np.ndarray
    kept: np.ndarray
    weights: np.ndarray
    latency_s: float
    upload_mb: float
    download_mb: float
    reward_accuracy: float
    previous_reward_accuracy: float
    idle: bool



def push_history(history: np.ndarray, clients: np.ndarray, values: np.ndarray) -> None:
    """Shift ``clients``' rows of a newest-first history right by one and write ``values`` first."""
    history[clients] = np.roll(history[clients], 1, axis=1)
    history[clients, 0] = values
