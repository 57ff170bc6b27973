"""The accuracy / latency / upload trade-off as the reward's latency and upload weights grow: FedMarl's
Table 4 (Zhang et al., AAAI 2022, arXiv 2201.02932, Sec. 5 "Performance under Different Rewards": raising
w2 from 0.2 to 0.5 and w3 from 0.1 to 0.3 lowers total latency and communication at some accuracy).

For each scale s of ``--scales`` (default x0.5, x1, x2, x4) the latency weight w2 and the upload weight w3
of the default federation are both multiplied by s, VDN agents are trained in that setting, and they are
evaluated with FedAvg and the fixed policies on the same held-out seeds. Writes ``table.csv``,
``episodes.json`` (:mod:`benchmarks.common`) and ``reward_sweep.png``: final accuracy against total
latency and against total upload, one point per scale for VDN and FedAvg's point for reference.

    python -m benchmarks.reward_sweep --quick --out results/reward_sweep_quick
    python -m benchmarks.reward_sweep --episodes 300 --out results/reward_sweep
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from benchmarks.common import (
    PRINTED,
    add_study_arguments,
    apply_quick,
    base_config,
    compare_columns,
    eval_seeds,
    evaluate,
    fixed_names,
    scaled_weights,
    train_agent,
    write_study,
)


def plot_trade_off(rows: list[dict], path: Path) -> None:
    """Final test accuracy against total latency (s), total upload and total traffic (upload + download, MB),
    VDN per scale and FedAvg."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(15, 4), constrained_layout=True)
    axis_labels = {"total_latency_s": "total latency (s)", "total_upload_mb": "total upload (MB)",
                   "total_traffic_mb": "total traffic, upload + download (MB)"}
    for axis, (metric, label) in zip(axes, axis_labels.items()):
        for prefix, marker in (("learned", "o"), ("fedavg", "x")):
            x = [row[f"{prefix}_{metric}"] for row in rows]
            y = [row[f"{prefix}_final_accuracy"] for row in rows]
            axis.plot(x, y, marker=marker, linestyle="-" if prefix == "learned" else "none",
                      label="VDN" if prefix == "learned" else "FedAvg")
        for row in rows:
            axis.annotate(f"x{row['weight_scale']:g}", (row[f"learned_{metric}"], row["learned_final_accuracy"]))
        axis.set_xlabel(label)
        axis.set_ylabel("final test accuracy")
        axis.legend()
    figure.suptitle("latency and upload weights scaled (points: VDN trained per scale)")
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_study_arguments(parser, episodes=300)
    parser.add_argument("--scales", default="0.5,1,2,4", help="comma-separated multipliers of w2 and w3")
    args = parser.parse_args(argv)
    apply_quick(args)
    out, fixed, seeds = Path(args.out), fixed_names(args), eval_seeds(args.eval_episodes)
    base = base_config(args)
    rows, episodes = [], {}
    for scale in (float(s) for s in args.scales.split(",")):
        config, setting = scaled_weights(base, scale), f"x{scale:g}"
        agent = train_agent(config, args.episodes, args.seed, out / "agents" / setting)
        episodes[setting] = evaluate(config, [agent], fixed, seeds)
        rows.append({"setting": setting, "weight_scale": scale, "latency_weight": config.latency_weight,
                     "comm_weight": config.comm_weight, **compare_columns(episodes[setting], "vdn", fixed)})
    write_study(out, rows, episodes, ["setting", "learned_total_latency_s", "learned_total_upload_mb",
                                      "learned_total_download_mb", *PRINTED])
    plot_trade_off(rows, out / "reward_sweep.png")
    print(f"wrote {out / 'reward_sweep.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
