"""The comparison's summary as a fixed-width text table."""

from __future__ import annotations

import math

from fedenv.evaluation.metrics import METRICS


def format_table(rows: list[dict]) -> str:
    """Fixed-width text table of :func:`~fedenv.evaluation.metrics.summarise` rows (mean +- std), with
    each policy's probing mode (on: its candidates probed before the decision)."""
    headers = ["policy", "probing", "final acc", "rounds to fedavg acc", "latency (s)", "upload (MB)", "team return"]
    fmt = {"final_accuracy": "{:.4f}", "rounds_to_fedavg": "{:.1f}", "total_latency_s": "{:.1f}",
           "total_comm_mb": "{:.1f}", "team_return": "{:.4f}"}
    lines = []
    for row in rows:
        cells = [row["policy"], "on" if row["probing"] else "off"]
        for metric in METRICS:
            mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
            cell = "never" if math.isnan(mean) else f"{fmt[metric].format(mean)} +- {fmt[metric].format(std)}"
            if metric == "rounds_to_fedavg" and not math.isnan(mean) and row["reached"] < row["episodes"]:
                cell += f" ({row['reached']}/{row['episodes']})"
            cells.append(cell)
        lines.append(cells)
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *lines)]

    def render(cells):
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))

    return "\n".join([render(headers), render(["-" * w for w in widths])] + [render(c) for c in lines])
