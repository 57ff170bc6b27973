"""Derive the device table and generate the shipped trace from public measurements.

Compute speed (``devices``)
    AI-Benchmark scores of 307 Android devices and the device population of FLASH's user trace (Yang et
    al., WWW 2021; files ``raw_ai_benchmark_list.json``, ``benchmark2score.json`` and
    ``real2benchmark.json`` of the PKU-Chengxu/FLASH repository, BSD-2-Clause) are combined with the
    on-device training times that FLASH measured for its FEMNIST CNN (``device_util.py``; ms per batch
    of 10 samples: Google Nexus S 1642, Xiaomi Redmi Note 7 Pro 588, Google Pixel 4 179). A power law
    ``ms_per_batch = a * AI_Score ** b`` is fitted to the three measured devices by least squares in
    log-log space and gives every other device's time; the measured devices keep their measurement.
    A device's population weight is the number of FLASH trace device codes mapped to it; codes FLASH
    could not map ("unknown") are spread over the three measured devices with FLASH's weights
    18820 : 16428 : 159.

Bandwidth (``generate``)
    Per client, a median download bandwidth drawn from a log-normal whose median is the global mean
    mobile download speed reported by Ookla for November 2017 (20.28 Mbps) and whose spread puts 20 %
    of clients below 5 Mbps (Ookla's 2018 US "consistency score": 66.1 % to 79.7 % of mobile tests
    reached 5 Mbps down / 1 Mbps up, i.e. 20 % to 34 % did not; we take the best carrier's 20 %).
    Upload is download times 8.63 / 27.33 (Ookla, US mobile means for H1 2018: 8.63 Mbps up, 27.33 Mbps
    down). Round-to-round variation: an AR(1) process on log bandwidth shared by both directions,
    correlation 0.9 and stationary standard deviation 0.3 (our default; no public figure used).
    Bandwidths are clipped to the physical range of :mod:`fedenv.traces.loading` (1 kbit/s to 10 Gbit/s),
    so a trace of any number of clients loads.

Compute variation: per round, a factor drawn from a normal distribution with the coefficient of
variation FLASH measured for the nearest measured device (in log AI_Score): 99.5 / 1642, 23.9 / 588,
2.3 / 179 ms per batch; clipped to [0.5, 2]. Availability: the sources hold none, so the shipped
clients are always online (imported FedScale traces bring availability).

``traces/README.md`` lists each source with its address.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import torch
from torch import nn

from fedenv.fileio import atomic_write_text, json_text
from fedenv.models import count_macs
from fedenv.traces.loading import PHYSICAL_RANGES
from fedenv.traces.schema import TRACE_FORMAT, TRACE_VERSION, DeviceTrace

# FLASH device_util.py: FEMNIST CNN training time per batch (batch size 10, FLASH's femnist configs).
MEASURED_MS_PER_BATCH = {"Google Nexus S": 1642.0, "Xiaomi Redmi Note 7 Pro": 588.0, "Google Pixel 4": 179.0}
MEASURED_STD_MS = {"Google Nexus S": 99.5, "Xiaomi Redmi Note 7 Pro": 23.9, "Google Pixel 4": 2.3}
MEASURED_BATCH_SIZE = 10
UNKNOWN_DEVICE_WEIGHTS = {"Google Nexus S": 18820, "Xiaomi Redmi Note 7 Pro": 16428, "Google Pixel 4": 159}

DOWNLOAD_MEDIAN_KBPS = 20_280.0
UPLOAD_TO_DOWNLOAD = 8.63 / 27.33
SLOW_DOWNLOAD_KBPS = 5_000.0
SLOW_SHARE = 0.20
BANDWIDTH_AR_CORRELATION = 0.9
BANDWIDTH_AR_STD = 0.3

DEVICE_TABLE_COLUMNS = (
    "device", "soc", "year", "ai_score", "femnist_ms_per_batch", "train_ms_per_sample", "time_cv", "time_source",
    "trace_codes", "population_weight",
)
SOURCES = {
    "train_ms_per_sample": (
        "FLASH (Yang et al., WWW 2021, github.com/PKU-Chengxu/FLASH): AI-Benchmark scores "
        "(benchmark2score.json) scaled by FLASH's measured FEMNIST-CNN training times (device_util.py)"
    ),
    "device": "FLASH user-trace device population (real2benchmark.json) and FLASH's weights for unknown devices",
    "download_kbps": (
        "Ookla Speedtest Global Index, Nov 2017: global mean mobile download 20.28 Mbps (median of our "
        "log-normal); spread from Ookla's 2018 US consistency score (20 % of tests below 5 Mbps down)"
    ),
    "upload_kbps": "Ookla, US mobile means H1 2018: upload 8.63 Mbps / download 27.33 Mbps (ratio applied to download)",
    "compute_factor": (
        "FLASH device_util.py: per-batch std / mean of the measured device nearest in log AI_Score "
        "(6.1 %, 4.1 %, 1.3 %), drawn independently per round"
    ),
    "availability": "none in the sources: every client is always online",
}


def femnist_cnn() -> nn.Module:
    """LEAF/FLASH's FEMNIST CNN (conv 5x5x32, pool, conv 5x5x64, pool, dense 2048, dense 62): the model
    FLASH's on-device training times were measured with (reference for compute scaling)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 2048), nn.ReLU(), nn.Linear(2048, 62),
    )


def reference_macs() -> int:
    """Multiply-accumulates per sample of :func:`femnist_cnn` on a 1x28x28 input."""
    with torch.device("meta"):  # shapes only: no weights drawn, no RNG read
        return count_macs(femnist_cnn(), (1, 28, 28))


def fit_power_law(scores: np.ndarray, ms: np.ndarray) -> tuple[float, float]:
    """Least-squares fit of ``log(ms) = log(a) + b * log(score)``; returns ``(a, b)``."""
    b, log_a = np.polyfit(np.log(scores), np.log(ms), 1)
    return float(math.exp(log_a)), float(b)


def derive_device_table(sources_dir: str | Path) -> list[dict]:
    """Build the device table from FLASH's files in ``sources_dir/flash``.

    Returns:
        One row per AI-Benchmark device (columns :data:`DEVICE_TABLE_COLUMNS`), sorted by name.

    Raises:
        FileNotFoundError: a source file is missing. ValueError: a measured device has no score.
    """
    flash = Path(sources_dir) / "flash"
    scores = json.loads((flash / "benchmark2score.json").read_text())
    listing = json.loads((flash / "raw_ai_benchmark_list.json").read_text())
    codes = json.loads((flash / "real2benchmark.json").read_text())
    meta = {}
    for entry in listing:
        meta.setdefault(entry["Model"], entry)
    missing = [d for d in MEASURED_MS_PER_BATCH if d not in scores]
    if missing:
        raise ValueError(f"measured devices without an AI-Benchmark score: {missing}")
    a, b = fit_power_law(
        np.array([scores[d] for d in MEASURED_MS_PER_BATCH], dtype=float),
        np.array(list(MEASURED_MS_PER_BATCH.values())),
    )
    code_counts: dict[str, int] = {}
    for device in codes.values():
        code_counts[device] = code_counts.get(device, 0) + 1
    unknown = code_counts.pop("unknown", 0)
    total_unknown_weight = sum(UNKNOWN_DEVICE_WEIGHTS.values())
    measured_scores = {d: math.log(scores[d]) for d in MEASURED_MS_PER_BATCH}
    rows = []
    for device in sorted(scores):
        measured = MEASURED_MS_PER_BATCH.get(device)
        ms_per_batch = measured if measured is not None else a * scores[device] ** b
        nearest = min(measured_scores, key=lambda d: abs(measured_scores[d] - math.log(scores[device])))
        weight = code_counts.get(device, 0) + unknown * UNKNOWN_DEVICE_WEIGHTS.get(device, 0) / total_unknown_weight
        rows.append({
            "device": device.strip(),
            "soc": meta.get(device, {}).get("CPU", ""),
            "year": meta.get(device, {}).get("Year", ""),
            "ai_score": int(scores[device]),
            "femnist_ms_per_batch": round(ms_per_batch, 3),
            "train_ms_per_sample": round(ms_per_batch / MEASURED_BATCH_SIZE, 4),
            "time_cv": round(MEASURED_STD_MS[nearest] / MEASURED_MS_PER_BATCH[nearest], 4),
            "time_source": "measured" if measured is not None else f"fit a*score^b, a={a:.2f}, b={b:.4f}",
            "trace_codes": code_counts.get(device, 0),
            "population_weight": round(weight, 4),
        })
    return rows


def write_device_table(rows: list[dict], out: str | Path) -> None:
    """Write the device table as CSV (``\\n`` line ends, fixed column order), atomically."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=DEVICE_TABLE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(out, text.getvalue())


def read_device_table(path: str | Path) -> list[dict]:
    """Read a device table written by :func:`write_device_table`."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for column in ("train_ms_per_sample", "time_cv", "population_weight"):
            row[column] = float(row[column])
    return rows


def held_out_devices(devices: list[dict], trace: DeviceTrace) -> list[dict]:
    """The rows of the device table ``devices`` whose device no client of ``trace`` has (rows of population
    weight 0 included; they are never drawn): the held-out device types of a transfer study (``python -m
    fedenv.traces generate --held-out-from default --seed 1`` draws ``traces/held-out-devices.json`` from them).
    Of the shipped table's 116 devices with population weight, the default trace's 100 clients hold 19 (82 % of
    the weight); the other 97 hold 18 %, and the held-out trace's 100 clients hold 57 of them.

    Raises:
        ValueError: no row with population weight above 0 is left (the trace holds every device).
    """
    seen = {client.device for client in trace.clients}
    left = [row for row in devices if row["device"] not in seen]
    if not any(row["population_weight"] > 0 for row in left):
        raise ValueError(f"every device of the table with population weight > 0 is in the trace "
                         f"({len(seen)} devices): none is left to hold out")
    return left


def generate_trace(devices: list[dict], num_clients: int = 100, num_rounds: int = 100, seed: int = 0) -> dict:
    """Generate a trace document: each client gets a device (drawn by population weight), a per-round
    compute factor (normal with the device's measured coefficient of variation, clipped to [0.5, 2])
    and per-round upload and download bandwidth series (see the module docstring for the model).
    Any ``num_clients`` >= 1 works (the shipped trace has 100; ``python -m fedenv.traces generate --clients N``).

    Returns:
        A ``fedenv-trace`` document (see :mod:`fedenv.traces.schema`).

    Raises:
        ValueError: ``num_clients`` or ``num_rounds`` below 1.
    """
    if num_clients < 1 or num_rounds < 1:
        raise ValueError(f"num_clients={num_clients} and num_rounds={num_rounds} must both be >= 1")
    rng = np.random.default_rng(seed)
    weights = np.array([row["population_weight"] for row in devices])
    picks = rng.choice(len(devices), size=num_clients, p=weights / weights.sum())
    spread = math.log(DOWNLOAD_MEDIAN_KBPS / SLOW_DOWNLOAD_KBPS) / NormalDist().inv_cdf(1 - SLOW_SHARE)
    medians = DOWNLOAD_MEDIAN_KBPS * np.exp(spread * rng.standard_normal(num_clients))
    innovation_std = BANDWIDTH_AR_STD * math.sqrt(1 - BANDWIDTH_AR_CORRELATION**2)
    bandwidth_range = PHYSICAL_RANGES["download_kbps"][:2]
    clients = []
    for client, (pick, median) in enumerate(zip(picks, medians)):
        log_factor = np.empty(num_rounds)
        log_factor[0] = BANDWIDTH_AR_STD * rng.standard_normal()
        for t in range(1, num_rounds):
            log_factor[t] = BANDWIDTH_AR_CORRELATION * log_factor[t - 1] + innovation_std * rng.standard_normal()
        download = np.clip(median * np.exp(log_factor), *bandwidth_range)
        upload = np.clip(download * UPLOAD_TO_DOWNLOAD, *bandwidth_range)
        compute = np.clip(1.0 + devices[pick]["time_cv"] * rng.standard_normal(num_rounds), 0.5, 2.0)
        clients.append({
            "client": client,
            "device": devices[pick]["device"],
            "train_ms_per_sample": devices[pick]["train_ms_per_sample"],
            "compute_factor": [round(float(v), 3) for v in compute],
            "upload_kbps": [round(float(v), 1) for v in upload],
            "download_kbps": [round(float(v), 1) for v in download],
        })
    return {
        "format": TRACE_FORMAT,
        "version": TRACE_VERSION,
        "reference_model": {"name": "FEMNIST CNN (LEAF/FLASH)", "macs_per_sample": reference_macs()},
        "sources": SOURCES,
        "generator": {
            "command": "python -m fedenv.traces generate",
            "seed": seed, "num_clients": num_clients, "num_rounds": num_rounds,
            "download_median_kbps": DOWNLOAD_MEDIAN_KBPS, "download_log_std": round(spread, 6),
            "upload_to_download": round(UPLOAD_TO_DOWNLOAD, 6),
            "ar_correlation": BANDWIDTH_AR_CORRELATION, "ar_std": BANDWIDTH_AR_STD,
        },
        "clients": clients,
    }


def extend_trace(base: dict, devices: list[dict], num_clients: int, seed: int) -> dict:
    """The trace document ``base`` (a ``fedenv-trace`` document as read from its file, e.g. the default trace's)
    with clients appended up to ``num_clients``, drawn as :func:`generate_trace` draws them (``seed``, ``base``'s
    number of rounds) and numbered on from ``base``'s: a larger pool of the same device population whose first
    clients are ``base``'s, unchanged (``python -m fedenv.traces generate --extend-from default --clients 800
    --seed 2`` writes ``traces/default-800.json``).

    Raises:
        ValueError: ``num_clients`` not above ``base``'s number of clients; ``base`` without the generator's
            header (an imported trace: its rounds are unknown).
    """
    held = len(base["clients"])
    if num_clients <= held:
        raise ValueError(f"num_clients={num_clients}: the trace to extend already holds {held} clients; "
                         f"give more than {held}")
    if "num_rounds" not in base.get("generator", {}):
        raise ValueError("the trace to extend has no generator header with num_rounds (an imported trace?); "
                         "extend a trace written by `python -m fedenv.traces generate`")
    document = generate_trace(devices, num_clients - held, base["generator"]["num_rounds"], seed)
    first = max(client["client"] for client in base["clients"]) + 1
    document["clients"] = [*base["clients"], *({**client, "client": first + client["client"]}
                                               for client in document["clients"])]
    document["generator"]["num_clients"] = num_clients
    return document


def dumps_trace(document: dict) -> str:
    """Serialise a trace document deterministically: header indented, one line per client."""
    header = {k: v for k, v in document.items() if k != "clients"}
    text = json_text(header, indent=1)[:-2]
    lines = [json_text(client, separators=(",", ":")) for client in document["clients"]]
    return text + ',\n "clients": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"
