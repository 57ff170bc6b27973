"""The trace file format and the in-memory trace: what a device trace holds.

Trace file format (``fedenv-trace``, version 2; version 1 files, without ``compute_factor`` and
``availability``, are read too). One JSON object::

    {
      "format": "fedenv-trace", "version": 2,
      "reference_model": {"name": str, "macs_per_sample": int},
      "sources": {field: citation, ...},      # where each field's values come from
      "generator": {...},                     # how the file was made (informative)
      "clients": [
        {"client": int | str, "device": str,  # client ids are unique (compared as strings)
         "train_ms_per_sample": float,        # training time per sample (forward + backward), ms,
                                              # for the reference model
         "compute_factor": [float, ...],      # optional: per-round multiplier of the time (default 1)
         "upload_kbps": [float, ...],         # per-round upload bandwidth, kbit/s
         "download_kbps": [float, ...],       # per-round download bandwidth, kbit/s
         "availability": {                    # optional: absent = always online
            "period_s": float,                # the pattern repeats every period_s seconds
            "online": [[start_s, end_s], ...] # online when start_s <= t mod period_s <= end_s
         }},
        ...
      ]
    }

Availability follows FedScale's rule (Lai et al., ICML 2022): online at time t when
``active[i] <= t % finish_time <= inactive[i]`` for some i. The physical range every value must lie
in is documented in :mod:`fedenv.traces.loading`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TRACE_FORMAT = "fedenv-trace"
TRACE_VERSION = 2
READABLE_VERSIONS = (1, 2)


@dataclass(frozen=True)
class Availability:
    """When a client is online: ``start_s <= t mod period_s <= end_s`` for one of the intervals.

    Attributes:
        period_s: length of the repeating pattern, s (> 0).
        online: ``(M, 2)`` float intervals ``[start_s, end_s]`` within ``[0, period_s]``; may be empty
            (never online).
    """

    period_s: float
    online: np.ndarray

    def is_online(self, time_s: float) -> bool:
        phase = time_s % self.period_s
        return bool(np.any((self.online[:, 0] <= phase) & (phase <= self.online[:, 1])))

    def wait_s(self, time_s: float) -> float:
        """Seconds from ``time_s`` until the client is next online (0 if online; inf if never)."""
        if self.is_online(time_s):
            return 0.0
        if len(self.online) == 0:
            return math.inf
        phase = time_s % self.period_s
        starts = self.online[:, 0]
        ahead = starts[starts > phase]
        return float((ahead.min() if len(ahead) else starts.min() + self.period_s) - phase)

    def online_fraction(self) -> float:
        """Share of the period the client is online."""
        return float(np.sum(self.online[:, 1] - self.online[:, 0]) / self.period_s) if len(self.online) else 0.0


ALWAYS_ONLINE = Availability(1.0, np.array([[0.0, 1.0]]))


@dataclass(frozen=True)
class ClientTrace:
    """One trace client.

    Attributes:
        client: the client's id in the trace file.
        device: device name.
        train_ms_per_sample: training time per sample, ms, for the reference model.
        compute_factor: ``(L_c,)`` per-round multiplier of ``train_ms_per_sample``.
        upload_kbps: ``(L_u,)`` upload bandwidth per round, kbit/s.
        download_kbps: ``(L_d,)`` download bandwidth per round, kbit/s.
        availability: when the client is online.
    """

    client: str
    device: str
    train_ms_per_sample: float
    compute_factor: np.ndarray
    upload_kbps: np.ndarray
    download_kbps: np.ndarray
    availability: Availability


@dataclass(frozen=True)
class DeviceTrace:
    """A loaded, validated trace.

    Attributes:
        clients: the trace clients.
        reference_macs: multiply-accumulates per sample of the model ``train_ms_per_sample`` refers to.
        reference_model: that model's name.
        sources: citation of each field.
        path: where it was loaded from.
    """

    clients: tuple[ClientTrace, ...]
    reference_macs: int
    reference_model: str
    sources: dict
    path: str
