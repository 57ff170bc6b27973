"""Convert other trace formats to ``fedenv-trace`` documents.

FedScale (Lai et al., ICML 2022) ships two pickles:

- ``client_device_capacity``: ``dict[client_id] -> {"computation": float, "communication": float}``;
  computation is the inference time in ms per sample (FedScale counts training as 3x that: forward
  plus backward), communication the bandwidth in kbit/s (used for upload and download alike);
- ``client_behave_trace``: ``dict[client_id] -> {"duration", "inactive": [int], "finish_time",
  "active": [int], "model": str}``; a client is online at time t when
  ``active[i] <= t % finish_time <= inactive[i]`` for some i.

They are read with :func:`safe_unpickle`, which admits only dicts, lists, tuples, numbers, strings,
booleans and None: any pickle that names a class or function (the way ``__reduce__`` payloads run
code) is rejected before anything is called. FedScale applies its per-sample times to every model
unchanged; to reproduce its latencies, import with ``reference_model`` set to the model you train.

A plain CSV with columns ``client, device, ms_per_sample, upload_kbps, download_kbps`` (one row per
client, constant over rounds, always online) is the simplest way to bring measured devices.
"""

from __future__ import annotations

import csv
import io
import pickle
from pathlib import Path

from fedenv.models import build_model, count_macs
from fedenv.names import check_known
from fedenv.registry import MODELS
from fedenv.traces import TRACE_FORMAT, TRACE_VERSION, check_unique_clients, parse_trace

FEDSCALE_TRAINING_FACTOR = 3.0
CSV_COLUMNS = ("client", "device", "ms_per_sample", "upload_kbps", "download_kbps")


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(
            f"refused to load {module}.{name}: trace pickles may hold only dicts, lists, tuples, numbers "
            "and strings"
        )

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused a persistent reference: trace pickles may hold only plain data")


def safe_unpickle(data: bytes, name: str = "<bytes>"):
    """Unpickle plain data only (dicts, lists, tuples, numbers, strings, booleans, None).

    Raises:
        ValueError: the pickle names any class or function (nothing is imported or called), or is
            not a valid pickle.
    """
    try:
        return _PlainDataUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as error:
        raise ValueError(f"{name}: not a plain-data pickle ({error})") from error


def _reference(model: str) -> dict:
    """The trace's reference model: its MACs per sample on the input of its own task
    (:attr:`fedenv.models.ModelSpec.reference_input_shape`)."""
    check_known(model, MODELS, "reference_model")
    spec = MODELS.get(model)
    network = build_model(model, spec.reference_input_shape, spec.reference_num_classes, seed=0)
    return {"name": model, "macs_per_sample": count_macs(network, spec.reference_input_shape, spec.input_dtype)}


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where} must be a number, got {value!r}")
    return float(value)


def import_fedscale(capacity_path: str | Path, behave_path: str | Path | None = None,
                    reference_model: str = "mlp") -> dict:
    """FedScale's ``client_device_capacity`` (and optionally ``client_behave_trace``) as a
    ``fedenv-trace`` document, validated.

    Raises:
        ValueError: an unsafe or malformed pickle, a missing field, or a value outside its physical range
            (names the client, the field and the range); a client of the capacity file missing from the
            behaviour file; two keys naming the same client id (``7`` and ``"7"``; names the keys).
    """
    capacity = safe_unpickle(Path(capacity_path).read_bytes(), str(capacity_path))
    if not isinstance(capacity, dict) or not capacity:
        raise ValueError(f"{capacity_path}: expected a non-empty dict client_id -> {{computation, communication}}")
    behave = None
    if behave_path is not None:
        behave = safe_unpickle(Path(behave_path).read_bytes(), str(behave_path))
        if not isinstance(behave, dict):
            raise ValueError(f"{behave_path}: expected a dict client_id -> behaviour record")
    client_ids = sorted(capacity, key=lambda k: (str(type(k)), k))
    check_unique_clients([str(k) for k in client_ids], [f"key {k!r}" for k in client_ids], str(capacity_path))
    clients = []
    for client_id in client_ids:
        record = capacity[client_id]
        where = f"{capacity_path}: client {client_id}"
        if not isinstance(record, dict) or not {"computation", "communication"} <= set(record):
            raise ValueError(f"{where}: needs 'computation' and 'communication', got {record!r}")
        computation = _number(record["computation"], f"{where}: computation")
        bandwidth = _number(record["communication"], f"{where}: communication")
        entry = {
            "client": client_id if isinstance(client_id, (int, str)) else str(client_id),
            "device": "",
            "train_ms_per_sample": FEDSCALE_TRAINING_FACTOR * computation,
            "upload_kbps": [bandwidth],
            "download_kbps": [bandwidth],
        }
        if behave is not None:
            entry.update(_fedscale_behaviour(behave, client_id, behave_path))
        clients.append(entry)
    sources = {
        "train_ms_per_sample": f"FedScale client_device_capacity ({Path(capacity_path).name}): 3 x computation",
        "upload_kbps": f"FedScale client_device_capacity ({Path(capacity_path).name}): communication",
        "download_kbps": f"FedScale client_device_capacity ({Path(capacity_path).name}): communication",
        "availability": f"FedScale client_behave_trace ({Path(behave_path).name})" if behave_path else "always online",
    }
    return _document(clients, reference_model, sources, {"importer": "fedscale"})


def _fedscale_behaviour(behave: dict, client_id, path) -> dict:
    where = f"{path}: client {client_id}"
    if client_id not in behave:
        raise ValueError(f"{where}: missing from the behaviour trace")
    record = behave[client_id]
    if not isinstance(record, dict) or not {"active", "inactive", "finish_time"} <= set(record):
        raise ValueError(f"{where}: needs 'active', 'inactive' and 'finish_time', got {record!r}")
    active, inactive = record["active"], record["inactive"]
    if not isinstance(active, (list, tuple)) or not isinstance(inactive, (list, tuple)) or len(active) != len(inactive):
        raise ValueError(f"{where}: 'active' and 'inactive' must be lists of the same length")
    intervals = [[_number(a, f"{where}: active"), _number(i, f"{where}: inactive")] for a, i in zip(active, inactive)]
    return {
        "device": str(record.get("model", "")),
        "availability": {"period_s": _number(record["finish_time"], f"{where}: finish_time"), "online": intervals},
    }


def import_csv(path: str | Path, reference_model: str = "mlp") -> dict:
    """A CSV of ``client, device, ms_per_sample, upload_kbps, download_kbps`` as a validated
    ``fedenv-trace`` document. UTF-8, with or without a byte-order mark (spreadsheets' "CSV UTF-8").

    Raises:
        ValueError: missing columns, a value that is not a number (names the line and column), a client
            id listed twice (names the id and the lines), or a value outside its physical range (names the
            client, the field and the range; :data:`fedenv.traces.PHYSICAL_RANGES`).
    """
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing columns {missing}; needed: {', '.join(CSV_COLUMNS)}")
        clients, lines = [], []
        for line, row in enumerate(reader, start=2):
            values = {}
            for column in ("ms_per_sample", "upload_kbps", "download_kbps"):
                try:
                    values[column] = float(row[column])
                except (TypeError, ValueError) as error:
                    raise ValueError(f"{path}: line {line}, column {column}: not a number: {row[column]!r}") from error
            clients.append({
                "client": row["client"], "device": row["device"], "train_ms_per_sample": values["ms_per_sample"],
                "upload_kbps": [values["upload_kbps"]], "download_kbps": [values["download_kbps"]],
            })
            lines.append(f"line {line}")
    check_unique_clients([c["client"] for c in clients], lines, str(path))
    sources = {field: f"CSV {Path(path).name}" for field in ("train_ms_per_sample", "upload_kbps", "download_kbps")}
    return _document(clients, reference_model, sources | {"availability": "always online"}, {"importer": "csv"})


def _document(clients: list[dict], reference_model: str, sources: dict, generator: dict) -> dict:
    document = {
        "format": TRACE_FORMAT, "version": TRACE_VERSION, "reference_model": _reference(reference_model),
        "sources": sources, "generator": generator, "clients": clients,
    }
    parse_trace(document, "imported trace")
    return document
