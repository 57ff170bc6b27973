"""Find, read and validate trace files (format: :mod:`fedenv.traces.schema`).

Every value must lie in a physical range (:data:`PHYSICAL_RANGES`, bounds inclusive):

===================================  ==================  =====================================================
field                                range               why
===================================  ==================  =====================================================
``train_ms_per_sample``              1e-6 .. 1e6 ms      1 ns per sample is faster than any device trains even
                                                         a tiny model; 1000 s per sample is slower than any
                                                         device federated learning runs on
``upload_kbps``, ``download_kbps``   1 .. 1e7 kbit/s     below 1 kbit/s no model can be moved (GPRS gives tens
                                                         of kbit/s); 10 Gbit/s is above the peak rate of any
                                                         device's link (5G, Wi-Fi 6)
``compute_factor``                   0.01 .. 100         a per-round multiplier of the typical speed: FLASH
                                                         measured 1 % to 6 % variation (Yang et al., WWW 2021),
                                                         throttling slows a phone a few times; 100x either way
                                                         is a unit mistake, not variation
``availability.period_s``            1 .. 1e8 s          availability is recorded in whole seconds (FedScale's
                                                         client_behave_trace); 1e8 s is about three years
``availability.online``              0 .. ``period_s``   intervals ``[start_s, end_s]`` with start <= end
``reference_model.macs_per_sample``  1 .. 1e15 (int)     a forward pass of a billion-parameter model over 1000
                                                         tokens is about 1e12 multiply-accumulates
===================================  ==================  =====================================================

With every value in range, a trained model of up to 1e10 MACs per sample and 1e10 bits, and up to 1e6
samples per round, the longest latency (1e6 ms x 100 x 1e10 x 1e6 / 1000 = 1e27 s) and the shortest
(about 1e-26 s, still > 0) are finite positive float64 numbers, so no infinite or NaN latency, and no
division by a zero reference latency, can reach an observation or a reward.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from fedenv.traces.schema import (
    ALWAYS_ONLINE,
    READABLE_VERSIONS,
    TRACE_FORMAT,
    Availability,
    ClientTrace,
    DeviceTrace,
)

SHIPPED_TRACES_DIR = Path(__file__).resolve().parents[2] / "traces"
DEFAULT_TRACE = "default"
HELD_OUT_DEVICES_TRACE = "held-out-devices"
"""The shipped trace whose clients hold only devices no client of :data:`DEFAULT_TRACE` has
(:func:`fedenv.traces.generate.held_out_devices`; traces/README.md)."""
MORE_CLIENTS_TRACE = "default-800"
"""The shipped trace of 800 clients whose first 100 are :data:`DEFAULT_TRACE`'s, the other 700 drawn from the same
device population (:func:`fedenv.traces.generate.extend_trace`): the pool of a federation of more clients than the
default trace holds (traces/README.md)."""

PHYSICAL_RANGES: dict[str, tuple[float, float, str]] = {
    "train_ms_per_sample": (1e-6, 1e6, "ms"),
    "upload_kbps": (1.0, 1e7, "kbit/s"),
    "download_kbps": (1.0, 1e7, "kbit/s"),
    "compute_factor": (0.01, 100.0, ""),
    "availability.period_s": (1.0, 1e8, "s"),
    "reference_model.macs_per_sample": (1, 10**15, ""),
}
"""Field -> ``(low, high, unit)``: the inclusive physical range of each trace value (see the module docstring)."""


def resolve_trace_path(trace: str) -> Path:
    """A shipped trace name (``"default"`` -> ``traces/default.json``) or a file path.

    Raises:
        FileNotFoundError: neither a shipped trace nor an existing file.
    """
    shipped = SHIPPED_TRACES_DIR / f"{trace}.json"
    if shipped.is_file():
        return shipped
    path = Path(trace).expanduser()
    if path.is_file():
        return path
    names = sorted(p.stem for p in SHIPPED_TRACES_DIR.glob("*.json"))
    raise FileNotFoundError(f"trace={trace!r} is neither a shipped trace ({', '.join(names)}) nor a file")


def load_trace(trace: str = DEFAULT_TRACE) -> DeviceTrace:
    """Load and validate a trace file.

    Args:
        trace: shipped trace name or path to a ``fedenv-trace`` JSON file.

    Raises:
        FileNotFoundError: see :func:`resolve_trace_path`.
        ValueError: not valid JSON, wrong format or version, a repeated client id, or a value outside
            its physical range (:data:`PHYSICAL_RANGES`; NaN and infinity are outside every range);
            the message names the client (id and position), the field and the allowed range.
    """
    path = resolve_trace_path(trace)
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a JSON trace file ({error})") from error
    return parse_trace(raw, str(path))


def parse_trace(raw: dict, path: str = "<memory>") -> DeviceTrace:
    """Validate a decoded trace document (see :func:`load_trace`; ``path`` only names it in errors)."""
    if not isinstance(raw, dict) or raw.get("format") != TRACE_FORMAT or raw.get("version") not in READABLE_VERSIONS:
        found = (raw.get("format"), raw.get("version")) if isinstance(raw, dict) else type(raw).__name__
        raise ValueError(f"{path}: not a {TRACE_FORMAT} file of version {READABLE_VERSIONS} (found {found})")
    reference = raw.get("reference_model", {})
    macs = reference.get("macs_per_sample") if isinstance(reference, dict) else None
    if not isinstance(macs, int) or not _in_range(macs, "reference_model.macs_per_sample"):
        raise ValueError(f"{path}: reference_model.macs_per_sample must be an integer in "
                         f"{_range_text('reference_model.macs_per_sample')}, got {macs!r}")
    clients = raw.get("clients")
    if not isinstance(clients, list) or not clients:
        raise ValueError(f"{path}: the trace holds no clients")
    parsed = tuple(_parse_client(entry, position, path) for position, entry in enumerate(clients))
    check_unique_clients([c.client for c in parsed], [f"clients[{i}]" for i in range(len(parsed))], path)
    return DeviceTrace(parsed, macs, str(reference.get("name", "")), dict(raw.get("sources", {})), path)


def check_unique_clients(ids: list[str], locations: list[str], source: str) -> None:
    """Refuse a client id that occurs more than once.

    Args:
        ids: the client ids, as the strings the trace keeps.
        locations: where each id was read (``"line 3"``, ``"key 7"``, ``"clients[2]"``), same length.
        source: the file, for the message.

    Raises:
        ValueError: names every repeated id and the locations it was read at.
    """
    seen: dict[str, list[str]] = {}
    for client, location in zip(ids, locations):
        seen.setdefault(client, []).append(location)
    repeated = [f"client {client!r} at {', '.join(where)}" for client, where in seen.items() if len(where) > 1]
    if repeated:
        raise ValueError(f"{source}: client ids must be unique, found {'; '.join(repeated)}")


def _parse_client(entry: dict, position: int, path: str) -> ClientTrace:
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: clients[{position}] must be an object, got {type(entry).__name__}")
    client = entry.get("client", position)
    where = f"{path}: client {client!r} (clients[{position}])"
    speed = entry.get("train_ms_per_sample")
    if not _in_range(speed, "train_ms_per_sample"):
        raise ValueError(f"{where}: train_ms_per_sample must be a number in {_range_text('train_ms_per_sample')}, "
                         f"got {speed!r}")
    series = {field: _series(entry.get(field), where, field) for field in ("upload_kbps", "download_kbps")}
    factor = _series(entry.get("compute_factor", [1.0]), where, "compute_factor")
    return ClientTrace(str(client), str(entry.get("device", "")), float(speed), factor, series["upload_kbps"],
                       series["download_kbps"], _parse_availability(entry.get("availability"), where))


def _series(values, where: str, field: str) -> np.ndarray:
    if not isinstance(values, list) or not values:
        raise ValueError(f"{where}: {field} must be a non-empty list of numbers in {_range_text(field)}")
    for index, value in enumerate(values):
        if not _in_range(value, field):
            raise ValueError(f"{where}: {field}[{index}] must be a number in {_range_text(field)}, got {value!r}")
    return np.asarray(values, dtype=np.float64)


def _parse_availability(raw, where: str) -> Availability:
    if raw is None:
        return ALWAYS_ONLINE
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: availability must be an object with period_s and online")
    period = raw.get("period_s")
    if not _in_range(period, "availability.period_s"):
        raise ValueError(f"{where}: availability.period_s must be a number in "
                         f"{_range_text('availability.period_s')}, got {period!r}")
    intervals = raw.get("online")
    if not isinstance(intervals, list):
        raise ValueError(f"{where}: availability.online must be a list of [start_s, end_s] intervals")
    for index, interval in enumerate(intervals):
        ok = (isinstance(interval, (list, tuple)) and len(interval) == 2
              and all(_is_number(v) for v in interval) and 0 <= interval[0] <= interval[1] <= period)
        if not ok:
            raise ValueError(
                f"{where}: availability.online[{index}] must be [start_s, end_s] with "
                f"0 <= start_s <= end_s <= period_s={period}, got {interval!r}"
            )
    return Availability(float(period), np.asarray(intervals, dtype=np.float64).reshape(-1, 2))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _in_range(value, field: str) -> bool:
    """A number within ``PHYSICAL_RANGES[field]`` (NaN compares false, so it is never in range)."""
    low, high, _ = PHYSICAL_RANGES[field]
    return _is_number(value) and low <= value <= high


def _range_text(field: str) -> str:
    low, high, unit = PHYSICAL_RANGES[field]
    return f"[{low:g}, {high:g}]" + (f" {unit}" if unit else "")
