"""Device traces: per-client compute speed, bandwidth and availability, replayed round by round.

- :mod:`fedenv.traces.schema`: the ``fedenv-trace`` file format and the trace dataclasses;
- :mod:`fedenv.traces.loading`: finding, reading and validating trace files against physical ranges;
- :mod:`fedenv.traces.replay`: the latency model, :class:`TraceReplay`, :func:`reference_round_latency_s` and
  :func:`require_clients`;
- :mod:`fedenv.traces.generate`: the shipped traces, made from public measurements (``traces/README.md``
  names every source);
- :mod:`fedenv.traces.importers`: FedScale's pickled traces and plain CSV files to ``fedenv-trace``;
- :mod:`fedenv.traces.report`: summary tables and plots.

Command line: ``python -m fedenv.traces --help``.
"""

from fedenv.traces.loading import (
    DEFAULT_TRACE,
    HELD_OUT_DEVICES_TRACE,
    MORE_CLIENTS_TRACE,
    PHYSICAL_RANGES,
    SHIPPED_TRACES_DIR,
    check_unique_clients,
    load_trace,
    parse_trace,
    resolve_trace_path,
)
from fedenv.traces.replay import TraceReplay, reference_round_latency_s, require_clients
from fedenv.traces.schema import (
    ALWAYS_ONLINE,
    READABLE_VERSIONS,
    TRACE_FORMAT,
    TRACE_VERSION,
    Availability,
    ClientTrace,
    DeviceTrace,
)

__all__ = [
    "ALWAYS_ONLINE", "DEFAULT_TRACE", "HELD_OUT_DEVICES_TRACE", "MORE_CLIENTS_TRACE", "PHYSICAL_RANGES",
    "READABLE_VERSIONS", "SHIPPED_TRACES_DIR", "TRACE_FORMAT",
    "TRACE_VERSION", "Availability", "ClientTrace", "DeviceTrace", "TraceReplay", "check_unique_clients",
    "load_trace", "parse_trace", "reference_round_latency_s", "require_clients", "resolve_trace_path",
]
