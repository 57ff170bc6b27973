"""How long an FL round takes: the round-latency and deadline rules (docs/design.md, "Latency model").

With probing (``EnvConfig.probing``, the default) a round has two phases. Every candidate downloads the
global model and trains the probing epoch; the server waits for the slowest of them before the agents
decide. Each selected client then trains its remaining epochs and uploads; the server waits for the
slowest of those. Without probing (pre-selection, as FedAvg and Oort select) the policy decides first and
only the selected clients download, train every local epoch and upload (:func:`full_round_s`); the
rules below then take an empty ``probe_s``. With a round deadline
(FedScale's straggler handling, Lai et al., OSDI 2022) a selected client that would finish after the
deadline is dropped, and the server waits no longer than the deadline. The per-client times come from
the trace replay (:class:`fedenv.traces.TraceReplay`); these functions only combine them.
"""

from __future__ import annotations

import numpy as np


def round_latency_s(probe_s: np.ndarray, finish_s: np.ndarray) -> float:
    """Round latency ``H_t = max_candidates H^p + max_selected (H^rest + H^u)`` (FedMarl, arXiv 2201.02932,
    Section 3: the server waits for the slowest probing candidate, then for the slowest selected client).

    Args:
        probe_s: ``(C,)`` probing latency (download + first epoch) of every candidate, s.
        finish_s: ``(S,)`` remaining-epochs plus upload latency of every selected client, s (may be empty).

    Returns:
        Seconds; the second term is 0 when nobody is selected, the first when nobody probed (no
        candidate, or a round without probing: then ``finish_s`` holds whole rounds, :func:`full_round_s`).
    """
    probe = float(np.max(probe_s)) if len(probe_s) else 0.0
    finish = float(np.max(finish_s)) if len(finish_s) else 0.0
    return probe + finish


def on_time(probe_s: np.ndarray, finish_s: np.ndarray, deadline_s: float | None) -> np.ndarray:
    """Which selected clients finish by the round deadline.

    A selected client finishes at (slowest probing candidate) + (its own remaining epochs and upload):
    the decision waits for every probe, so its own probe time does not count separately. In a round
    without probing ``probe_s`` is empty and a client finishes at its own whole round (:func:`full_round_s`).

    Args:
        probe_s: ``(C,)`` probing latencies of the round's candidates, s (empty: no probing phase).
        finish_s: ``(S,)`` remaining-epochs plus upload latency of each selected client, s (with an
            empty ``probe_s``: its whole round).
        deadline_s: the round deadline, s, or None (no deadline: everyone is on time).

    Returns:
        ``(S,)`` bool.
    """
    finish_s = np.asarray(finish_s, dtype=np.float64)
    if deadline_s is None or len(finish_s) == 0:
        return np.ones(len(finish_s), dtype=bool)
    start_s = float(np.max(probe_s)) if len(probe_s) else 0.0
    return start_s + finish_s <= deadline_s


def full_round_s(download_s: np.ndarray, epoch_s: np.ndarray, local_epochs: int, upload_s: np.ndarray) -> np.ndarray:
    """Each selected client's whole round when nobody probes before the decision:
    ``H^d + E * H^epoch + H^u`` (download, ``E`` local epochs, upload; FedScale's client round,
    Lai et al., OSDI 2022, where selection precedes training).

    Args:
        download_s, epoch_s, upload_s: ``(S,)`` download, one-epoch training and upload time of each
            selected client, s.
        local_epochs: ``E`` >= 1.

    Returns:
        ``(S,)`` float64 seconds; the round latency is their maximum (:func:`round_latency_s` with an
        empty ``probe_s``).
    """
    return np.asarray(download_s, dtype=np.float64) + local_epochs * np.asarray(epoch_s) + np.asarray(upload_s)


def capped_latency_s(latency_s: float, deadline_s: float | None, probe_s: np.ndarray = ()) -> float:
    """The round latency with the server waiting for uploads no longer than ``deadline_s`` (None: no cap).

    The decision uses every candidate's probing result, so the probing phase (the slowest of ``probe_s``)
    is charged in full even when it outlasts the deadline; every selected client is then late (:func:`on_time`)
    and the round ends when the decision is taken: ``min(latency_s, max(deadline_s, max(probe_s)))``
    (docs/design.md section 3, step 5).

    Args:
        latency_s: :func:`round_latency_s`, s. deadline_s: the round deadline, s, or None.
        probe_s: ``(C,)`` probing latencies of the round's candidates, s (empty: no probing phase).
    """
    if deadline_s is None:
        return latency_s
    probing_s = float(np.max(probe_s)) if len(probe_s) else 0.0
    return min(latency_s, max(deadline_s, probing_s))


def reported_round_s(probe_latency_s, upload_latency_s):
    """A client's expected round time from its latest reports, s: its probing latency plus its upload latency
    (the probing latency again before its first upload), elementwise over arrays or scalars; 0 where it has
    reported nothing (probing latency 0). The terms are a round's: download and first epoch, then upload."""
    probe, upload = np.asarray(probe_latency_s, dtype=np.float64), np.asarray(upload_latency_s, dtype=np.float64)
    return probe + np.where(upload > 0, upload, probe)


def expected_round_s(probe_latency_s: np.ndarray, upload_latency_s: np.ndarray,
                     profile_round_s: np.ndarray) -> np.ndarray:
    """``(K,)`` each client's expected round time, s, as the server estimates it: :func:`reported_round_s` once it
    has reported a probing latency, else its device-profile estimate ``profile_round_s``
    (:meth:`fedenv.simulator.FederationSimulator.profile_round_s`; FedScale's ``registerDuration``)."""
    probe = np.asarray(probe_latency_s, dtype=np.float64)
    return np.where(probe > 0, reported_round_s(probe, upload_latency_s), np.asarray(profile_round_s, dtype=np.float64))
