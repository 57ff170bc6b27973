"""Evaluation episodes as Ray tasks: every (policy, seed) episode runs as one task, with the same records
as :func:`fedenv.evaluation.evaluate_policies` and :func:`fedenv.calibration.calibrate_weights` give locally.

Policies travel to the workers pickled (once per policy, through the object store), so they must be
picklable: the baselines and the VDN :class:`~agents.policy.GreedyPolicy` (its Q-network) are. A worker
process keeps the environments it built (one per configuration), as the local loop keeps one per
configuration; every episode is reset with its seed, so a record does not depend on which worker ran it.
"""

from __future__ import annotations

import ray

from fedenv.baselines.base import Policy
from fedenv.config import EnvConfig
from fedenv.distributed.cluster import RayOptions, start_ray
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.compare import policy_config
from fedenv.evaluation.rollout import EpisodeRecord, run_episode

_ENVS: dict[str, ClientSelectionEnv] = {}
"""The environments this worker process built, by configuration (JSON)."""


def _episode(config_json: str, policy: Policy, seed: int, checkpoint: str | None) -> EpisodeRecord:
    if config_json not in _ENVS:
        _ENVS[config_json] = ClientSelectionEnv(EnvConfig.from_json(config_json))
    return run_episode(_ENVS[config_json], policy, seed, checkpoint)


def run_episodes(jobs: list[tuple[EnvConfig, Policy, int, str | None]], options: RayOptions,
                 progress: bool = False) -> list[EpisodeRecord]:
    """Run ``(env config, policy, seed, checkpoint)`` episodes as Ray tasks (one CPU and
    ``options.worker_gpus`` GPUs each) on the cluster of ``options`` (started if needed); ``checkpoint``
    labels a learned policy's records (None for a fixed policy).

    Returns:
        One record per job, in the order of ``jobs``.

    Raises:
        TypeError: a policy cannot be pickled (Ray names it).
    """
    from tqdm.auto import tqdm

    start_ray(options)
    task = ray.remote(num_cpus=1, num_gpus=options.worker_gpus)(_episode)
    policy_refs = {id(policy): ray.put(policy) for _, policy, _, _ in jobs}
    refs = [task.remote(config.to_json(), policy_refs[id(policy)], seed, checkpoint)
            for config, policy, seed, checkpoint in jobs]
    with tqdm(total=len(refs), desc="evaluate", unit="episode", disable=not progress) as bar:
        waiting = list(refs)
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            bar.update(len(done))
    return ray.get(refs)


def evaluate_policies_on_ray(env_config: EnvConfig, policies: list[Policy], seeds: list[int], options: RayOptions,
                             progress: bool = True, probing: bool | None = None,
                             checkpoints: list[str | None] | None = None) -> dict[str, list[EpisodeRecord]]:
    """:func:`fedenv.evaluation.evaluate_policies` with every episode a Ray task (:func:`run_episodes`);
    the same arguments (but ``options``) and the same records.

    Returns:
        ``policy name -> [EpisodeRecord per checkpoint and seed]``, seeds in the given order.
    """
    checkpoints = checkpoints or [None] * len(policies)
    if len(checkpoints) != len(policies):
        raise ValueError(f"{len(checkpoints)} checkpoints for {len(policies)} policies; give one per policy")
    for policy in policies:
        policy.configure(env_config.clients_per_round)
    jobs = [(policy_config(env_config, policy, probing), policy, seed, checkpoint)
            for policy, checkpoint in zip(policies, checkpoints) for seed in seeds]
    records: dict[str, list[EpisodeRecord]] = {}
    for (_, policy, _, _), record in zip(jobs, run_episodes(jobs, options, progress)):
        records.setdefault(policy.name, []).append(record)
    return records


def calibrate_weights_on_ray(config: EnvConfig, seeds, share: float, options: RayOptions) -> dict:
    """:func:`fedenv.calibration.calibrate_weights` with one Ray task per seed: each task measures its seed
    with ``calibrate_weights(config, [seed], share)``; the sums are averaged over seeds here and the
    weights computed from the means as there (``w2 = share * A / L``, ``w3 = share * A / C``).

    Returns:
        The same dictionary as ``calibrate_weights(config, seeds, share)``.
    """
    from fedenv.calibration import calibrate_weights, weights_from_measurements

    start_ray(options)
    task = ray.remote(num_cpus=1, num_gpus=options.worker_gpus)(calibrate_weights)
    return weights_from_measurements(ray.get([task.remote(config, [seed], share) for seed in seeds]), share)
