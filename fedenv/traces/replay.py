"""The latency model: a loaded trace replayed round by round for one episode.

Latency model (docs/design.md, section 4; FedScale's client model, Lai et al. ICML 2022, computes the same
terms): ``compute_s = train_ms_per_sample * compute_factor[t] * (model_macs / reference_macs) * samples /
1000``, ``upload_s = model_bits / (upload_kbps * 1000)``, ``download_s = model_bits / (download_kbps *
1000)`` with ``model_bits = parameters * 32``.

Per-round series are replayed cyclically from a seeded offset; availability is looked up at the
simulated time a round starts, counted from a seeded start time. Latencies are float64; a latency
that is not finite is a ValueError naming the trace client (the ranges of
:mod:`fedenv.traces.loading` keep every loaded trace clear of that).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np

from fedenv.config import TRACE_MODES
from fedenv.names import check_known
from fedenv.traces.schema import DeviceTrace


def reference_round_latency_s(trace: DeviceTrace, model_macs: float, model_bits: float, samples: float) -> float:
    """The latency scale of a trace: the median over its clients of one full round at median bandwidth,
    ``download_s + compute_s + upload_s`` with compute factor 1 (the terms of the module docstring).

    Args:
        trace: the loaded trace (every client counts, not only those an episode uses).
        model_macs: multiply-accumulates per sample of the trained model.
        model_bits: size of one model transfer, bits (parameters * 32).
        samples: samples one client trains on in a round (local epochs x samples per client).

    Returns:
        Seconds, float64.

    Raises:
        ValueError: an argument that is not a finite number > 0, or a client whose latency is not finite
            (names the client).
    """
    for name, value in (("model_macs", model_macs), ("model_bits", model_bits), ("samples", samples)):
        _check_positive(name, value)
    latencies = np.array([
        model_bits / (np.median(c.download_kbps) * 1000.0)
        + c.train_ms_per_sample * model_macs / trace.reference_macs * samples / 1000.0
        + model_bits / (np.median(c.upload_kbps) * 1000.0)
        for c in trace.clients
    ], dtype=np.float64)
    _check_finite(latencies, lambda i: _client_name(trace, i), "round latency")
    return float(np.median(latencies))


def require_clients(trace: DeviceTrace, num_clients: int, label: str) -> None:
    """Raise unless ``trace`` holds at least ``num_clients`` clients (each federation client replays its
    own trace client).

    Args:
        label: how the error names the trace (its name or path).

    Raises:
        ValueError: too few trace clients; the message says how to generate a larger trace
            (``python -m fedenv.traces generate --clients N``).
    """
    if num_clients > len(trace.clients):
        raise ValueError(
            f"num_clients={num_clients} but trace {label} holds {len(trace.clients)} clients; make a trace "
            f"with enough clients with `python -m fedenv.traces generate --clients {num_clients} --out FILE` "
            "and pass it as --trace FILE"
        )


class TraceReplay:
    """Replays a trace for one episode.

    At construction (once per episode, from the episode's generator) the env's ``num_clients`` clients
    are mapped to distinct trace clients drawn uniformly, and offsets are drawn: a round offset into the
    per-round series and a start time (uniform within the longest availability period) for the
    availability patterns. In ``static`` mode every round
    uses each client's median bandwidth and a compute factor of 1.

    Args:
        trace: the loaded trace.
        num_clients: clients in the federation (<= clients in the trace).
        rng: the episode's numpy generator.
        model_macs: multiply-accumulates per sample of the trained model.
        model_bits: size of one model transfer, bits (parameters * 32).
        mode: ``"replay"`` or ``"static"``.

    Raises:
        ValueError: the trace has fewer clients than the federation, an unknown mode, ``model_macs`` or
            ``model_bits`` not a finite number > 0, or a chosen client whose slowest per-sample compute
            time or transfer time is not finite (names the client).
    """

    def __init__(self, trace: DeviceTrace, num_clients: int, rng: np.random.Generator, model_macs: int,
                 model_bits: int, mode: str = "replay"):
        require_clients(trace, num_clients, str(trace.path))
        check_known(mode, TRACE_MODES, "trace_mode")
        _check_positive("model_macs", model_macs)
        _check_positive("model_bits", model_bits)
        self._trace = trace
        self.assignment = rng.choice(len(trace.clients), size=num_clients, replace=False)
        self.offset = int(rng.integers(0, 1 << 30))
        chosen = [trace.clients[i] for i in self.assignment]
        self.start_time_s = float(rng.random()) * max(c.availability.period_s for c in chosen)
        self.devices = [c.device for c in chosen]
        self.ms_per_sample = np.array([c.train_ms_per_sample for c in chosen]) * model_macs / trace.reference_macs
        if mode == "static":
            self._factor = [np.ones(1) for _ in chosen]
            self._upload = [np.array([np.median(c.upload_kbps)]) for c in chosen]
            self._download = [np.array([np.median(c.download_kbps)]) for c in chosen]
        else:
            self._factor = [c.compute_factor for c in chosen]
            self._upload = [c.upload_kbps for c in chosen]
            self._download = [c.download_kbps for c in chosen]
        self._availability = [c.availability for c in chosen]
        self.model_bits = model_bits
        slowest_link = np.array([min(u.min(), d.min()) for u, d in zip(self._upload, self._download)])
        slowest_sample_ms = self.ms_per_sample * np.array([f.max() for f in self._factor])
        _check_finite(slowest_sample_ms, self._client_name, "compute time per sample")
        _check_finite(self.model_bits / (slowest_link * 1000.0), self._client_name, "transfer time")

    def _client_name(self, position: int) -> str:
        """The trace client behind env position ``position``, for messages."""
        return _client_name(self._trace, int(self.assignment[position]))

    def _at(self, series: list[np.ndarray], round_index: int) -> np.ndarray:
        position = self.offset + round_index
        return np.array([s[position % len(s)] for s in series])

    def bandwidth_kbps(self, round_index: int) -> tuple[np.ndarray, np.ndarray]:
        """Upload and download bandwidth of every client in round ``round_index``, kbit/s, ``(K,)`` each."""
        return self._at(self._upload, round_index), self._at(self._download, round_index)

    def compute_s(self, clients: np.ndarray, samples: np.ndarray, round_index: int) -> np.ndarray:
        """Training time, s, float64 ``(len(clients),)``, of ``clients`` (int array of env positions)
        processing ``samples`` samples each in a round.

        Raises:
            ValueError: a time that is not finite (names the trace client).
        """
        factor = self._at(self._factor, round_index)[clients]
        seconds = self.ms_per_sample[clients] * factor * np.asarray(samples, dtype=np.float64) / 1000.0
        positions = np.asarray(clients).reshape(-1)
        _check_finite(seconds, lambda i: self._client_name(positions[i]), "compute time")
        return seconds

    def transfer_s(self, kbps: np.ndarray) -> np.ndarray:
        """Time, s, float64, to move one model over links of ``kbps`` kbit/s (same shape as ``kbps``).

        Raises:
            ValueError: a time that is not finite (names the link's index in ``kbps`` and its bandwidth).
        """
        kbps = np.asarray(kbps, dtype=np.float64)
        seconds = self.model_bits / (kbps * 1000.0)
        _check_finite(seconds, lambda i: f"link {i} ({float(kbps.reshape(-1)[i])!r} kbit/s)", "transfer time")
        return seconds

    def profile_round_s(self, samples: np.ndarray) -> np.ndarray:
        """Each client's round time estimated from its device profile alone, s, float64 ``(K,)``: one model
        download and one upload at the client's median bandwidth plus ``samples`` samples trained at its
        device's speed (compute factor 1), the terms of the module docstring. It is what FedScale's client
        manager registers for a client before it has taken part (SymbioticLab/FedScale
        ``fedscale/cloud/client_manager.py`` ``registerDuration`` @ 0f1a07ea860dc5fe38c13ff8e51329da1e686809
        and ``fedscale/cloud/internal/client_metadata.py`` ``getCompletionTime`` @
        27d7cd3d81ffcbcfe8716758aa8d67f0b11a982c: computation from the device's speed plus
        ``(upload_size + download_size) / bandwidth``; FedScale's factor 3 for the backward pass is inside
        the trace's training time per sample already).

        Args:
            samples: ``(K,)`` samples each client trains (e.g. one local epoch of its data).

        Raises:
            ValueError: ``samples`` not of shape ``(K,)``.
        """
        samples = np.asarray(samples, dtype=np.float64)
        if samples.shape != self.ms_per_sample.shape:
            raise ValueError(f"samples has shape {samples.shape}; one count per client, {self.ms_per_sample.shape}")
        upload_kbps = np.array([np.median(u) for u in self._upload])
        download_kbps = np.array([np.median(d) for d in self._download])
        return (self.transfer_s(download_kbps) + self.ms_per_sample * samples / 1000.0
                + self.transfer_s(upload_kbps))

    def online(self, clock_s: float) -> np.ndarray:
        """``(K,)`` bool: who is online at simulated time ``clock_s`` (s since the episode started)."""
        return np.array([a.is_online(self.start_time_s + clock_s) for a in self._availability])

    def wait_s(self, clock_s: float) -> float:
        """Seconds from ``clock_s`` until some client is online (0 if one is; inf if none ever is)."""
        return min(a.wait_s(self.start_time_s + clock_s) for a in self._availability)


def _check_positive(name: str, value) -> None:
    try:
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 < float(value) < math.inf
    except OverflowError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _client_name(trace: DeviceTrace, position: int) -> str:
    return f"client {trace.clients[position].client!r} (trace position {position})"


def _check_finite(seconds: np.ndarray, name_of: Callable[[int], str], what: str) -> None:
    """Raise a ValueError naming (``name_of(index)``) the first entry of flattened ``seconds`` that is not finite."""
    bad = np.flatnonzero(~np.isfinite(seconds))
    if len(bad):
        raise ValueError(f"{what} of {name_of(int(bad[0]))} is not finite ({float(seconds.reshape(-1)[bad[0]])!r} s)")
