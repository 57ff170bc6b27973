"""Compare policies on identical seeds: run every policy on every seed, print the table, write the results.

Every policy runs the same seeds, so on a given seed all policies see the same partition, model
initialisation, trace assignment and candidate draws (paired comparison).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path

from fedenv.baselines.base import Policy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.metrics import per_episode_metrics, summarise
from fedenv.evaluation.paired import compare_to_references
from fedenv.evaluation.progress import progress_bar
from fedenv.evaluation.results import write_results
from fedenv.evaluation.rollout import EpisodeRecord, run_episode
from fedenv.evaluation.tables import format_paired_table, format_table
from fedenv.evaluation.transfer import describe_transfer


def evaluate_policies(
    env_config: EnvConfig, policies: list[Policy], seeds: list[int], progress: bool = True,
    probing: bool | None = None, checkpoints: list[str | None] | None = None,
) -> dict[str, list[EpisodeRecord]]:
    """Run every policy on every seed, each in the env its ``env_overrides`` ask for and in its probing
    mode (:func:`policy_config`), told ``env_config.clients_per_round`` first (:meth:`Policy.configure`:
    FedCM sizes its selection by it however large the pool it ranks).

    Args:
        probing: None runs each policy in its own mode (``Policy.probes``); True or False runs every
            policy in that mode. ``env_config.probing`` is not used.
        checkpoints: the checkpoint each policy was loaded from (None for a fixed policy), in the order
            of ``policies``. Policies sharing a name (one learned policy from several training runs) are
            pooled under that name, each episode recording its checkpoint.
        progress: a progress bar (:func:`~fedenv.evaluation.progress.progress_bar`: plain lines, rarely,
            without a terminal).

    Returns:
        ``policy name -> [EpisodeRecord per checkpoint and seed]``, seeds in the given order.
    """
    checkpoints = checkpoints or [None] * len(policies)
    if len(checkpoints) != len(policies):
        raise ValueError(f"{len(checkpoints)} checkpoints for {len(policies)} policies; give one per policy")
    envs: dict[str, ClientSelectionEnv] = {}
    records: dict[str, list[EpisodeRecord]] = {}
    bar = progress_bar(len(policies) * len(seeds), "evaluate", "episode", enabled=progress)
    for policy, checkpoint in zip(policies, checkpoints):
        config = policy_config(env_config, policy, probing)
        policy.configure(env_config.clients_per_round)
        key = config.to_json()
        if key not in envs:
            envs[key] = ClientSelectionEnv(config)
        records.setdefault(policy.name, [])
        for seed in seeds:
            records[policy.name].append(run_episode(envs[key], policy, seed, checkpoint))
            bar.update()
            bar.set_postfix(policy=policy.name, ret=f"{records[policy.name][-1].team_return:.3f}")
    bar.close()
    return records


def policy_config(env_config: EnvConfig, policy: Policy, probing: bool | None = None) -> EnvConfig:
    """The env config ``policy`` runs in, resolved once: ``env_config`` with the policy's method settings
    (``env_overrides``: its aggregation rule and the rule's options, local-training settings such as
    FedProx's mu or FedAdp's lr decay) and ``probing`` (None: the policy's own mode, ``policy.probes``:
    pre-selection policies run without probing, so that they are charged only for what they make clients
    do). A method that sets another aggregation rule runs it with the options given for that rule
    (``EnvConfig.aggregation_options`` holds options per rule). A policy that
    ``selects_from_all_online`` (FedCM) gets every online client as a candidate without probing, and a
    ``UserWarning`` with probing when the env offers fewer candidates than clients.
    :func:`method_overrides` says which settings the method changed."""
    mode = policy.probes if probing is None else probing
    overrides = dict(policy.env_overrides)
    if policy.selects_from_all_online and env_config.clients_per_round < env_config.num_clients:
        if mode:
            warnings.warn(f"{policy.name} chooses among the env's {env_config.clients_per_round} random candidates "
                          f"of {env_config.num_clients} clients because it runs with probing (every candidate "
                          "trains first): its per-client statistics cover few clients; without probing it chooses "
                          "from every online client", stacklevel=2)
        else:
            overrides["clients_per_round"] = env_config.num_clients
    return dataclasses.replace(env_config, **overrides, probing=mode)


def method_overrides(env_config: EnvConfig, policy: Policy, probing: bool | None = None) -> dict[str, dict]:
    """The settings of ``env_config`` that ``policy``'s method replaces (:func:`policy_config`), among those
    set away from :class:`EnvConfig`'s defaults (by a flag, a config file, a preset or a checkpoint):
    ``field -> {"given": value, "used": value}``. Empty when the method runs what was given."""
    used, defaults = policy_config(env_config, policy, probing), EnvConfig()
    return {name: {"given": getattr(env_config, name), "used": getattr(used, name)}
            for name in sorted(policy.env_overrides)
            if getattr(env_config, name) != getattr(defaults, name)
            and getattr(used, name) != getattr(env_config, name)}


def describe_overrides(policy_name: str, overridden: dict[str, dict]) -> str:
    """One line saying what a method changed: ``"fedavg runs aggregation='fedavg' (its method), not the
    aggregation='fedadp' given; policy select-all runs the rule given"``."""
    used = ", ".join(f"{name}={change['used']!r}" for name, change in overridden.items())
    given = ", ".join(f"{name}={change['given']!r}" for name, change in overridden.items())
    hint = "; policy select-all runs the rule given" if "aggregation" in overridden else ""
    return f"{policy_name} runs {used} (its method), not the {given} given{hint}"


def compare(env_config: EnvConfig, policies: list[Policy], seeds: list[int], out_dir: str | Path | None = None,
            progress: bool = False, title: str = "", probing: bool | None = None,
            checkpoints: list[str | None] | None = None, transfer: dict | None = None,
            evaluate: Callable[..., dict[str, list[EpisodeRecord]]] = evaluate_policies,
            ) -> dict[str, list[EpisodeRecord]]:
    """Evaluate ``policies`` on ``seeds`` (each in its probing mode unless ``probing`` is True or False;
    ``checkpoints`` as in :func:`evaluate_policies`), print the summary table (after ``title`` and, for a
    learned policy evaluated elsewhere than it was trained, the ``transfer`` line of
    :func:`~fedenv.evaluation.transfer.describe_transfer`), then every policy's paired difference to FedAvg
    and to the best fixed policy with its 95 % bootstrap interval
    (:func:`~fedenv.evaluation.paired.compare_to_references`, :func:`~fedenv.evaluation.tables.format_paired_table`)
    and, with ``out_dir``, write the result files
    (:func:`~fedenv.evaluation.results.write_results`), with each policy's method. Before the episodes a
    line ``note: ...`` names every setting given that a policy's method replaces (:func:`method_overrides`).
    ``evaluate`` runs the episodes: a function with
    the arguments of :func:`evaluate_policies` (e.g. its Ray version,
    :func:`fedenv.distributed.episodes.evaluate_policies_on_ray` with its options bound). Returns the
    records."""
    methods = {}
    for policy in policies:
        overridden = method_overrides(env_config, policy, probing)
        ran, base = policy_config(env_config, policy, probing).to_dict(), env_config.to_dict()
        methods.setdefault(policy.name, {"ran": {k: v for k, v in ran.items() if v != base[k]},
                                         "overridden": overridden})
    for name, method in methods.items():
        if method["overridden"]:
            print(f"note: {describe_overrides(name, method['overridden'])}")
    run = {policy_config(env_config, policy, probing).aggregation for policy in policies}
    for rule in sorted(set(env_config.aggregation_options) - run):
        print(f"note: options given for aggregation rule {rule!r}, which no policy runs: "
              f"{env_config.aggregation_options[rule]}")
    records = evaluate(env_config, policies, seeds, progress=progress, probing=probing, checkpoints=checkpoints)
    print(title or f"seeds {seeds} (team return = shared reward summed over rounds; mean +- std over episodes)")
    if transfer is not None:
        print(f"transfer: {describe_transfer(transfer)}")
    per_episode = per_episode_metrics(records)
    print(format_table(summarise(per_episode)))
    paired = compare_to_references(per_episode)
    if paired[1]:
        print()
        print(format_paired_table(paired[1]))
    elif not paired[0]:
        print("no paired differences: neither fedavg nor a baseline that --policies all compares ran, so there is "
              "no reference")
    if out_dir is not None:
        paths = write_results(out_dir, records, env_config, transfer, paired, methods)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return records
