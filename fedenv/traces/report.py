"""Look at a trace: per-device and per-client summary tables, and a plot of the distributions."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from fedenv.fileio import atomic_write
from fedenv.traces import DeviceTrace


def _format(value) -> str:
    if not isinstance(value, float):
        return str(value)
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"


def _table(headers: list[str], rows: list[list]) -> str:
    cells = [[_format(v) for v in row] for row in rows]
    widths = [max(len(x) for x in column) for column in zip(headers, *cells)]

    def render(row: list[str]) -> str:
        return "  ".join(x.ljust(w) for x, w in zip(row, widths))

    return "\n".join([render(headers), render(["-" * w for w in widths])] + [render(r) for r in cells])


def client_rows(trace: DeviceTrace) -> list[list]:
    """Per client: id, device, ms per sample, median upload / download kbit/s, online fraction."""
    return [
        [c.client, c.device, c.train_ms_per_sample, float(np.median(c.upload_kbps)),
         float(np.median(c.download_kbps)), c.availability.online_fraction()]
        for c in trace.clients
    ]


def summary_text(trace: DeviceTrace) -> str:
    """Per-device table (clients, medians over their clients) followed by the per-client table."""
    by_device = defaultdict(list)
    for row in client_rows(trace):
        by_device[row[1]].append(row)
    device_rows = [
        [device or "(unnamed)", len(rows), float(np.median([r[2] for r in rows])),
         float(np.median([r[3] for r in rows])),
         float(np.median([r[4] for r in rows])), float(np.mean([r[5] for r in rows]))]
        for device, rows in sorted(by_device.items(), key=lambda item: -len(item[1]))
    ]
    headers = ["ms/sample", "upload kbps", "download kbps", "online"]
    return "\n".join([
        (f"trace {trace.path}: {len(trace.clients)} clients; reference model {trace.reference_model} "
         f"({trace.reference_macs:,} MACs per sample)"),
        "", "per device (medians over its clients; online = mean online fraction):",
        _table(["device", "clients", *headers], device_rows),
        "", "per client (bandwidth: median over rounds):",
        _table(["client", "device", *headers], client_rows(trace)),
    ])


def plot_trace(trace: DeviceTrace, path: str | Path) -> None:
    """PNG with the distributions of training time per sample, bandwidth (all rounds) and online fraction."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    compute = np.array([c.train_ms_per_sample * f for c in trace.clients for f in c.compute_factor])
    upload = np.concatenate([c.upload_kbps for c in trace.clients])
    download = np.concatenate([c.download_kbps for c in trace.clients])

    def bins(values: np.ndarray) -> np.ndarray:
        return np.logspace(np.log10(values.min()), np.log10(values.max()) + 1e-9, 30)

    axes[0].hist(compute, bins=bins(compute), color="tab:purple")
    axes[0].set(xscale="log", xlabel=f"training time per sample, ms ({trace.reference_model})", ylabel="client-rounds")
    axes[0].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    both = np.concatenate([upload, download])
    axes[1].hist([upload, download], bins=bins(both), label=["upload", "download"])
    axes[1].set(xscale="log", xlabel="bandwidth, kbit/s", ylabel="client-rounds")
    axes[1].legend()
    axes[2].hist([c.availability.online_fraction() for c in trace.clients], bins=np.linspace(0, 1, 21),
                 color="tab:green")
    axes[2].set(xlabel="online fraction", ylabel="clients")
    fig.suptitle(f"{Path(trace.path).name}: {len(trace.clients)} clients")
    fig.tight_layout()
    atomic_write(path, lambda handle: fig.savefig(handle, format="png", dpi=110))
    plt.close(fig)
