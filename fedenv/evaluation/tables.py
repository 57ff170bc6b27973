"""The comparison's summary as a fixed-width text table."""

from __future__ import annotations

import math

from fedenv.evaluation.metrics import METRICS

FORMATS = {"final_accuracy": "{:.4f}", "rounds_to_fedavg": "{:.1f}", "total_latency_s": "{:.1f}",
           "total_upload_mb": "{:.1f}", "total_download_mb": "{:.1f}", "total_traffic_mb": "{:.1f}",
           "team_return": "{:.4f}"}
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
    evaluation seeds), with each policy's probing mode (on: its candidates probed before the decision);
    traffic is upload and download together.
    A policy evaluated from several checkpoints adds ``(runs +- std over training runs)`` to each cell
    and a note under the table. Without a fedavg row, "rounds to fedavg acc" is ``n/a`` (not ``never``)."""
    headers = ["policy", "probing", "final test acc", "rounds to fedavg acc", "latency (s)", "upload (MB)",
               "download (MB)", "traffic (MB)", "team return"]
    fedavg_ran = any(row["policy"] == "fedavg" for row in rows)
    lines = [[row["policy"], "on" if row["probing"] else "off",
              *("n/a" if m == "rounds_to_fedavg" and not fedavg_ran else _cell(row, m) for m in METRICS)]
             for row in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *lines)]

    def render(cells):
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    table = [render(headers), render(["-" * w for w in widths])] + [render(c) for c in lines]
    for row in rows:
        if row.get("checkpoints", 0) > 1:
            table.append(f"{row['policy']}: {row['checkpoints']} checkpoints (training runs); +- is the std over "
                         "evaluation seeds of the mean over runs, 'runs +-' the std over runs of each run's mean")
    return "\n".join(table)


PAIRED_HEADERS = {"team_return": "team return", "final_accuracy": "final acc"}
"""Column title of each metric of :data:`~fedenv.evaluation.paired.COMPARED_METRICS` in the paired table."""


def _paired_cell(row: dict) -> str:
    fmt = FORMATS[row["metric"]].replace("{:", "{:+")
    interval = ("no interval (fewer than 2 seeds)" if math.isnan(row["ci_low"])
                else f"[{fmt.format(row['ci_low'])}, {fmt.format(row['ci_high'])}] {row['label']}")
    return f"{fmt.format(row['difference'])} {interval}"


def format_paired_table(rows: list[dict]) -> str:
    """Fixed-width text tables of :func:`~fedenv.evaluation.paired.paired_differences` rows, one per
    reference: each policy's mean difference to the reference on the same seeds with its confidence
    interval and the label read from it ("better": the interval lies above 0, "level": it contains 0,
    "worse": below 0). Empty without rows."""
    blocks = []
    for role in dict.fromkeys(r["role"] for r in rows):
        chosen = [r for r in rows if r["role"] == role]
        first = chosen[0]
        runs = {r["policy"]: r["runs"] for r in chosen if r["runs"] > 1}
        over = f"{first['seeds']} evaluation seeds" + (
            " and training runs (" + ", ".join(f"{p}: {n} runs" for p, n in runs.items()) + ")" if runs else "")
        what = "FedAvg" if role == "fedavg" else "the best by mean team return of the baselines evaluated here"
        title = (f"paired difference to {first['reference']} ({what}): policy minus reference on the same seeds, "
                 f"{first['confidence_level']:.0%} CI, bootstrap over {over}")
        metrics = list(dict.fromkeys(r["metric"] for r in chosen))
        cells: dict[str, dict[str, str]] = {}
        for r in chosen:
            cells.setdefault(r["policy"], {})[r["metric"]] = _paired_cell(r)
        headers = ["policy", *(PAIRED_HEADERS.get(m, m) for m in metrics)]
        lines = [[policy, *(by_metric.get(m, "") for m in metrics)] for policy, by_metric in cells.items()]
        widths = [max(len(str(x)) for x in column) for column in zip(headers, *lines)]

        def render(row, widths=widths):
            return "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()

        blocks.append("\n".join([title, render(headers), render(["-" * w for w in widths]),
                                  *(render(line) for line in lines)]))
    return "\n\n".join(blocks)
