"""Compare policies on identical seeds: run every policy on every seed, print the table, write the results.

Every policy runs the same seeds, so on a given seed all policies see the same partition, model
initialisation, trace assignment and candidate draws (paired comparison).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from fedenv.baselines.base import Policy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.metrics import per_episode_metrics, summarise
from fedenv.evaluation.results import write_results
from fedenv.evaluation.rollout import EpisodeRecord, run_episode
from fedenv.evaluation.tables import format_table


def evaluate_policies(
    env_config: EnvConfig, policies: list[Policy], seeds: list[int], progress: bool = True
) -> dict[str, list[EpisodeRecord]]:
    """Run every policy on every seed (each in the env its ``env_overrides`` ask for).

    Returns:
        ``policy name -> [EpisodeRecord per seed]``, seeds in the given order.
    """
    from tqdm.auto import tqdm

    envs: dict[str, ClientSelectionEnv] = {}
    records: dict[str, list[EpisodeRecord]] = {}
    bar = tqdm(total=len(policies) * len(seeds), desc="evaluate", unit="episode", disable=not progress)
    for policy in policies:
        key = json.dumps(policy.env_overrides, sort_keys=True)
        if key not in envs:
            envs[key] = ClientSelectionEnv(dataclasses.replace(env_config, **policy.env_overrides))
        records[policy.name] = []
        for seed in seeds:
            records[policy.name].append(run_episode(envs[key], policy, seed))
            bar.update()
            bar.set_postfix(policy=policy.name, ret=f"{records[policy.name][-1].team_return:.3f}")
    bar.close()
    return records


def compare(env_config: EnvConfig, policies: list[Policy], seeds: list[int], out_dir: str | Path | None = None,
            progress: bool = False, title: str = "") -> dict[str, list[EpisodeRecord]]:
    """Evaluate ``policies`` on ``seeds``, print the summary table (after ``title``) and, with
    ``out_dir``, write the result files (:func:`~fedenv.evaluation.results.write_results`). Returns the records."""
    records = evaluate_policies(env_config, policies, seeds, progress=progress)
    print(title or f"seeds {seeds} (team return = shared reward summed over rounds; mean +- std over episodes)")
    print(format_table(summarise(per_episode_metrics(records))))
    if out_dir is not None:
        paths = write_results(out_dir, records, env_config)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return records
