"""Several independent federations stepped in lockstep through one batched engine.

``VectorClientSelectionEnv(config, num_envs=B)`` holds B copies of :class:`~fedenv.env.ClientSelectionEnv`
(same configuration, different seeds: :func:`federation_seeds`). Each copy runs its own episode, but the
local training every copy asks for in a step (probing and remaining epochs) is served by one batched computation
(:func:`~fedenv.engine.requests.train_together`), which makes more transitions per second for the learner.
Every federation gets the same results as it would alone (a test checks it).
"""

from __future__ import annotations

import numpy as np

from fedenv.config import EnvConfig
from fedenv.engine import EnvProcess, train_together
from fedenv.env import ClientSelectionEnv


def federation_seeds(seed: int | None, num_copies: int) -> list[int]:
    """Distinct episode seeds of ``num_copies`` copies of a federation, derived from one base seed.

    Copy i gets the first 63 bits of the state of ``numpy.random.SeedSequence(seed).spawn(num_copies)[i]``
    (NumPy's recipe for independent parallel streams), so the copies play different federations and
    the same base seed gives the same list. ``seed=None`` draws the base from fresh OS entropy.

    Raises:
        ValueError: ``num_copies < 0`` or a negative ``seed``.
    """
    if num_copies < 0:
        raise ValueError(f"num_copies={num_copies!r} must be >= 0")
    if seed is not None and seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer or None")
    children = np.random.SeedSequence(seed).spawn(num_copies)
    return [int(child.generate_state(1, np.uint64)[0] >> np.uint64(1)) for child in children]


def drive_together(processes: list[EnvProcess]) -> list:
    """Run env processes (:meth:`ClientSelectionEnv.reset_process` / ``step_process``) to their ends,
    serving the training requests they yield at the same point as one batched computation.

    Returns:
        Each process's return value, in order.
    """
    outputs = [None] * len(processes)
    waiting = {}
    for i, process in enumerate(processes):
        try:
            waiting[i] = next(process)
        except StopIteration as stop:
            outputs[i] = stop.value
    while waiting:
        results = train_together(list(waiting.values()))
        served, waiting = waiting, {}
        for (i, _), result in zip(served.items(), results):
            try:
                waiting[i] = processes[i].send(result)
            except StopIteration as stop:
                outputs[i] = stop.value
    return outputs


class VectorClientSelectionEnv:
    """B federations of one configuration, reset and stepped together.

    Args:
        config: the configuration every federation uses.
        num_envs: B (>= 1).
        report_test_accuracy: when the infos carry ``test_accuracy`` (:class:`ClientSelectionEnv`).

    Its outputs are the environment's own, with the infos' ``test_accuracy`` (for reports): a learner is
    handed them through a view without it (the SB3 vec env of :mod:`fedenv.integrations.sb3_vec_env`;
    the VDN trainer reads the test accuracy only into its episode summaries).

    Attributes:
        envs: the B :class:`ClientSelectionEnv` copies (read their attributes freely).

    Raises:
        ValueError: ``num_envs < 1``, an invalid configuration or an unknown ``report_test_accuracy``.
    """

    def __init__(self, config: EnvConfig, num_envs: int, report_test_accuracy: str = "every_round"):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs={num_envs!r} must be an integer >= 1")
        self.envs = [ClientSelectionEnv(config, report_test_accuracy=report_test_accuracy) for _ in range(num_envs)]
        self.possible_agents = self.envs[0].possible_agents

    @property
    def num_envs(self) -> int:
        return len(self.envs)

    def reset(self, seeds: int | list[int] | None = None) -> list[tuple[dict, dict]]:
        """Reset every federation; returns each one's ``(observations, infos)``.

        Args:
            seeds: a list resets federation i with ``seeds[i]``; an integer is a base seed, expanded by
                :func:`federation_seeds`; None lets every federation draw its next seed from its own
                generator (the copies' generators are independent, so their federations differ).

        Raises:
            ValueError: not one seed per federation.
        """
        if seeds is None:
            seeds = [None] * self.num_envs
        elif isinstance(seeds, (int, np.integer)):
            seeds = federation_seeds(int(seeds), self.num_envs)
        if len(seeds) != self.num_envs:
            raise ValueError(f"need {self.num_envs} seeds, got {len(seeds)}")
        return drive_together([env.reset_process(seed) for env, seed in zip(self.envs, seeds)])

    def step(self, actions: list[dict | None]) -> list[tuple | None]:
        """Step every federation whose actions are given (``None`` skips one, e.g. a finished episode).

        Returns:
            Per federation, the ``step`` tuple ``(observations, rewards, terminations, truncations,
            infos)``, or None where skipped.

        Raises:
            ValueError: not one entry per federation, or an invalid action (before anything runs).
            RuntimeError: a finished federation was given actions.
        """
        if len(actions) != self.num_envs:
            raise ValueError(f"need {self.num_envs} action dicts (None to skip), got {len(actions)}")
        active = [i for i, a in enumerate(actions) if a is not None]
        processes = [self.envs[i].step_process(actions[i]) for i in active]
        outputs = [None] * self.num_envs
        for i, output in zip(active, drive_together(processes)):
            outputs[i] = output
        return outputs
