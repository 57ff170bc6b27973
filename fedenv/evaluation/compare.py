"""Compare policies on identical seeds: run every policy on every seed, print the table, write the results.

Every policy runs the same seeds, so on a given seed all policies see the same partition, model
initialisation, trace assignment and candidate draws (paired comparison).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fedenv.baselines.base import Policy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.metrics import per_episode_metrics, summarise
from fedenv.evaluation.results import write_results
from fedenv.evaluation.rollout import EpisodeRecord, run_episode
from fedenv.evaluation.tables import format_table


def evaluate_policies(
    env_config: EnvConfig, policies: list[Policy], seeds: list[int], progress: bool = True,
    probing: bool | None = None,
) -> dict[str, list[EpisodeRecord]]:
    """Run every policy on every seed, each in the env its ``env_overrides`` ask for and in its probing
    mode (:func:`policy_config`).

    Args:
        probing: None runs each policy in its own mode (``Policy.probes``); True or False runs every
            policy in that mode. ``env_config.probing`` is not used.

    Returns:
        ``policy name -> [EpisodeRecord per seed]``, seeds in the given order.
    """
    from tqdm.auto import tqdm

    envs: dict[str, ClientSelectionEnv] = {}
    records: dict[str, list[EpisodeRecord]] = {}
    bar = tqdm(total=len(policies) * len(seeds), desc="evaluate", unit="episode", disable=not progress)
    for policy in policies:
        config = policy_config(env_config, policy, probing)
        key = config.to_json()
        if key not in envs:
            envs[key] = ClientSelectionEnv(config)
        records[policy.name] = []
        for seed in seeds:
            records[policy.name].append(run_episode(envs[key], policy, seed))
            bar.update()
            bar.set_postfix(policy=policy.name, ret=f"{records[policy.name][-1].team_return:.3f}")
    bar.close()
    return records


def policy_config(env_config: EnvConfig, policy: Policy, probing: bool | None = None) -> EnvConfig:
    """The env config ``policy`` runs in: ``env_config`` with the policy's ``env_overrides`` and
    ``probing`` (None: the policy's own mode, ``policy.probes``: pre-selection policies run without
    probing, so that they are charged only for what they make clients do)."""
    mode = policy.probes if probing is None else probing
    return dataclasses.replace(env_config, **policy.env_overrides, probing=mode)


def compare(env_config: EnvConfig, policies: list[Policy], seeds: list[int], out_dir: str | Path | None = None,
            progress: bool = False, title: str = "", probing: bool | None = None) -> dict[str, list[EpisodeRecord]]:
    """Evaluate ``policies`` on ``seeds`` (each in its probing mode unless ``probing`` is True or False,
    :func:`evaluate_policies`), print the summary table (after ``title``) and, with ``out_dir``, write the
    result files (:func:`~fedenv.evaluation.results.write_results`). Returns the records."""
    records = evaluate_policies(env_config, policies, seeds, progress=progress, probing=probing)
    print(title or f"seeds {seeds} (team return = shared reward summed over rounds; mean +- std over episodes)")
    print(format_table(summarise(per_episode_metrics(records))))
    if out_dir is not None:
        paths = write_results(out_dir, records, env_config)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return records
