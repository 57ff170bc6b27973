"""The environment as an outside learner sees it: infos without the report-only keys (the test accuracy).

A library's learner reads whatever the environment's infos hold: SB3 hands them to ``Monitor`` and to
callbacks, TorchRL copies every info key into its tensordicts (where a loss module or a replay buffer can
read them), BenchMARL logs and stores them. The test split's accuracy must reach none of them
(docs/design.md, section 3), so every wrapper of :mod:`fedenv.integrations` hands learners
:func:`~fedenv.env.policy_infos` and keeps the report-only values apart, for reports.
"""

from __future__ import annotations

from pettingzoo.utils import BaseParallelWrapper

from fedenv.env import REPORT_ONLY_INFO_KEYS, ClientSelectionEnv, policy_infos


def report_values(infos: dict) -> dict[str, float]:
    """The values of :data:`~fedenv.env.REPORT_ONLY_INFO_KEYS` in ``infos`` (``agent -> info``; they are the
    same for every agent, so the first agent's are taken): e.g. ``{"test_accuracy": 0.91}``."""
    first = next(iter(infos.values()))
    return {key: first[key] for key in REPORT_ONLY_INFO_KEYS}


class LearnerInfos(BaseParallelWrapper):
    """A :class:`~fedenv.env.ClientSelectionEnv` whose ``reset`` and ``step`` return the infos without
    :data:`~fedenv.env.REPORT_ONLY_INFO_KEYS` (:func:`~fedenv.env.policy_infos`); observations, rewards and
    the other info keys are the environment's own.

    Attributes:
        episode_reports: one dict per finished episode, in order: the report-only values of its last step
            (``{"test_accuracy": final test accuracy}``), for evaluation and logs only.
    """

    def __init__(self, env: ClientSelectionEnv):
        super().__init__(env)
        self.episode_reports: list[dict[str, float]] = []

    def reset(self, seed=None, options=None):
        observations, infos = self.env.reset(seed=seed, options=options)
        return observations, policy_infos(infos)

    def step(self, actions):
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        if any(terminations.values()) or any(truncations.values()):
            self.episode_reports.append(report_values(infos))
        return observations, rewards, terminations, truncations, policy_infos(infos)
