"""Do VDN agents keep winning in settings they were not trained in? FedMarl's transfer study (Zhang et al.,
AAAI 2022, arXiv 2201.02932, Sec. 5 "Evaluation under Different System Conditions", Fig. 7, and Table 3):
agents trained with K = 100 clients beat the other methods at K = 400 and 800 (1.36x and 1.32x higher
total reward), at other local-epoch counts, on new device types, and on another model and dataset
(0.965 of agents trained there from scratch; 10 episodes of fine-tuning close most of the gap).

One VDN agent is trained at K clients, ``E`` local epochs, MLP on MNIST, on a trace of half of the device
types of ``traces/devices.csv``; it is then evaluated, without retraining, on held-out seeds at

- the trained setting (reference);
- 4K and 8K clients (the same number of candidates per round, drawn from the larger pool);
- each of ``--other-epochs`` local epochs;
- a trace of the other half of the device types (held out of training);
- ``--target-model`` on ``--target-dataset`` (LeNet-5 on Fashion-MNIST), zero-shot and after
  ``--fine-tune-episodes`` episodes of fine-tuning, next
  to an agent trained there from scratch for as many episodes as the source agent (``vs_scratch``:
  the row's VDN return over the scratch agent's, FedMarl's 0.965).

The device types are split by rank of training time per sample (even ranks train, odd ranks are held
out), so both halves span fast and slow phones. Both traces are written to ``OUT/traces`` with
:func:`fedenv.traces.generate.generate_trace`, with 8K clients each. Every row compares VDN with FedAvg
and the best fixed policy on the same seeds (``ratio``, :mod:`benchmarks.common`).

    python -m benchmarks.transfer --quick --out results/transfer_quick
    python -m benchmarks.transfer --quick --rows cross-task --out results/transfer_quick_cross
    python -m benchmarks.transfer --dataset mnist --data-root ~/data --train-samples 4500 --num-clients 10 \\
        --episodes 300 --out results/transfer

With ``--train-samples N`` the clients keep their data sizes at 4K and 8K clients (``4N`` and ``8N``
samples); the embedded ``mnist5k`` has too few digits for that, hence full MNIST from ``--data-root``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import dataclasses

from benchmarks.common import (
    PRINTED,
    add_study_arguments,
    apply_quick,
    base_config,
    checkpoint_path,
    compare_columns,
    eval_seeds,
    evaluate,
    fine_tune,
    fixed_names,
    return_ratio,
    train_agent,
    write_study,
)
from fedenv.config import EnvConfig
from fedenv.fileio import atomic_write_text
from fedenv.traces import SHIPPED_TRACES_DIR
from fedenv.traces.generate import dumps_trace, generate_trace, read_device_table

CLIENT_SCALES = (4, 8)
"""FedMarl's K = 400 and 800 for agents trained at K = 100."""
ROW_GROUPS = ("all", "cross-task")
"""``--rows``: every row, or only the rows of ``--target-model`` on ``--target-dataset``."""


def split_devices(devices: list[dict]) -> tuple[list[dict], list[dict]]:
    """Split the device types seen in the population (``population_weight > 0``) into two halves by rank
    of ``train_ms_per_sample``: even ranks (training) and odd ranks (held out).

    Raises:
        ValueError: fewer than two device types with a population weight.
    """
    seen = sorted((row for row in devices if row["population_weight"] > 0), key=lambda row: row["train_ms_per_sample"])
    if len(seen) < 2:
        raise ValueError(f"the device table has {len(seen)} device types with a population weight; need >= 2")
    return seen[0::2], seen[1::2]


def write_split_traces(out: Path, num_clients: int, seed: int) -> tuple[str, str]:
    """Write ``devices_train.json`` and ``devices_held_out.json`` (``num_clients`` clients each) into
    ``out``; their paths."""
    halves = split_devices(read_device_table(SHIPPED_TRACES_DIR / "devices.csv"))
    paths = []
    for name, devices in zip(("devices_train", "devices_held_out"), halves):
        path = out / f"{name}.json"
        atomic_write_text(path, dumps_trace(generate_trace(devices, num_clients, seed=seed)))
        print(f"{path}: {num_clients} clients drawn from {len(devices)} device types")
        paths.append(str(path))
    return paths[0], paths[1]


def scaled_clients(config: EnvConfig, scale: int) -> EnvConfig:
    """``config`` with ``scale`` times the clients and the same candidates per round; with
    ``train_samples`` set, ``scale`` times the training samples too, so that the clients keep their
    data sizes (FedMarl's clients hold their own data: more clients, more data)."""
    train_samples = None if config.train_samples is None else scale * config.train_samples
    return dataclasses.replace(config, num_clients=scale * config.num_clients, train_samples=train_samples)


def transfer_settings(source: EnvConfig, held_out_trace: str, other_epochs: list[int],
                      target: EnvConfig) -> list[tuple[str, EnvConfig]]:
    """``(row name, env config)`` of every zero-shot row (module docstring)."""
    settings = [("trained setting", source)]
    for scale in CLIENT_SCALES:
        settings.append((f"clients x{scale}", scaled_clients(source, scale)))
    for epochs in other_epochs:
        settings.append((f"local epochs {epochs}", dataclasses.replace(source, local_epochs=epochs)))
    settings.append(("held-out devices", dataclasses.replace(source, trace=held_out_trace)))
    settings.append((f"{target.model}/{target.dataset} zero-shot", target))
    return settings


def setting_columns(config: EnvConfig) -> dict:
    """The columns naming a row's setting."""
    return {"num_clients": config.num_clients, "clients_per_round": config.clients_per_round,
            "local_epochs": config.local_epochs, "trace": Path(config.trace).stem, "model": config.model,
            "dataset": config.dataset}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_study_arguments(parser, episodes=300)
    parser.add_argument("--other-epochs", default="1,5", help="comma-separated local epochs to transfer to")
    parser.add_argument("--fine-tune-episodes", type=int, default=10, help="FedMarl's 10")
    parser.add_argument("--target-model", default="lenet5", help="model of the cross-task rows (default: %(default)s)")
    parser.add_argument("--target-dataset", default="fashion-mnist",
                        help="dataset of the cross-task rows (default: %(default)s; --quick: mnist5k)")
    parser.add_argument("--rows", choices=ROW_GROUPS, default="all",
                        help="all rows, or only the cross-task ones (zero-shot, fine-tuned, from scratch); the "
                             "source agent is trained either way (default: %(default)s)")
    args = parser.parse_args(argv)
    apply_quick(args)
    if args.quick:
        args.other_epochs, args.fine_tune_episodes = "1", 1
    out, fixed, seeds = Path(args.out), fixed_names(args), eval_seeds(args.eval_episodes)
    base = base_config(args)
    train_trace, held_out_trace = write_split_traces(out / "traces", max(CLIENT_SCALES) * base.num_clients, args.seed)
    source = dataclasses.replace(base, trace=train_trace)
    target = dataclasses.replace(source, model=args.target_model,
                                 dataset="mnist5k" if args.quick else args.target_dataset).validate()
    agent = train_agent(source, args.episodes, args.seed, out / "agents" / "source")
    settings = transfer_settings(source, held_out_trace, [int(e) for e in args.other_epochs.split(",")], target)
    if args.rows == "cross-task":
        settings = settings[-1:]
    policies = [agent] * len(settings)
    name = f"{target.model}/{target.dataset}"
    settings.append((f"{name} fine-tuned {args.fine_tune_episodes} episodes", target))
    policies.append(fine_tune(checkpoint_path(out / "agents" / "source"), target, args.fine_tune_episodes, args.seed))
    settings.append((f"{name} from scratch", target))
    policies.append(train_agent(target, args.episodes, args.seed, out / "agents" / "scratch"))
    rows, episodes, fixed_episodes = [], {}, {}
    for (setting, config), policy in zip(settings, policies):
        if config.to_json() not in fixed_episodes:
            fixed_episodes[config.to_json()] = evaluate(config, [], fixed, seeds)
        episodes[setting] = {**fixed_episodes[config.to_json()], **evaluate(config, [policy], [], seeds)}
        rows.append({"setting": setting, **setting_columns(config), **compare_columns(episodes[setting], "vdn", fixed)})
    scratch = rows[-1]["learned_team_return"]
    for row in rows[-3:]:
        row["vs_scratch"] = return_ratio(row["learned_team_return"], scratch)
    write_study(out, rows, episodes, ["setting", *PRINTED, "vs_scratch"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
