"""The comparison's summary as a fixed-width text table."""

from __future__ import annotations

import math

from fedenv.evaluation.metrics import METRICS

FORMATS = {"final_accuracy": "{:.4f}", "rounds_to_fedavg": "{:.1f}", "total_latency_s": "{:.1f}",
           "total_comm_mb": "{:.1f}", "team_return": "{:.4f}"}
"""Number format of each metric in the table."""


def _cell(row: dict, metric: str) -> str:
    mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
    if math.isnan(mean):
        return "never"
    fmt = FORMATS[metric]
    cell = f"{fmt.format(mean)} +- {fmt.format(std)}"
    if f"{metric}_runs_std" in row:
        cell += f" (runs +- {fmt.format(row[f'{metric}_runs_std'])})"
    if metric == "rounds_to_fedavg" and row["reached"] < row["episodes"]:
        cell += f" ({row['reached']}/{row['episodes']})"
    return cell


def format_table(rows: list[dict]) -> str:
    """Fixed-width text table of :func:`~fedenv.evaluation.metrics.summarise` rows (mean +- std over
    evaluation seeds), with each policy's probing mode (on: its candidates probed before the decision).
    A policy evaluated from several checkpoints adds ``(runs +- std over training runs)`` to each cell
    and a note under the table."""
    headers = ["policy", "probing", "final acc", "rounds to fedavg acc", "latency (s)", "upload (MB)", "team return"]
    lines = [[row["policy"], "on" if row["probing"] else "off", *(_cell(row, m) for m in METRICS)] for row in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *lines)]

    def render(cells):
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    table = [render(headers), render(["-" * w for w in widths])] + [render(c) for c in lines]
    for row in rows:
        if row.get("checkpoints", 0) > 1:
            table.append(f"{row['policy']}: {row['checkpoints']} checkpoints (training runs); +- is the std over "
                         "evaluation seeds of the mean over runs, 'runs +-' the std over runs of each run's mean")
    return "\n".join(table)
