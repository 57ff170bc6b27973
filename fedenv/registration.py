"""The environment's PettingZoo ids: the current version and the earlier one, which still builds.

``fedenv/ClientSelection-v1`` (:data:`ENV_ID`) is the current environment. ``fedenv/ClientSelection-v0``
is the environment of release 0.1.0, kept so that its results can be reproduced: its reward and
observation read the global model's accuracy on the test split. Version history: docs/concepts/env-card.md.
"""

from __future__ import annotations

import warnings

import pettingzoo

from fedenv.env import ClientSelectionEnv

ENV_ID = "fedenv/ClientSelection-v1"
"""The current environment: reward and observation on the server's validation split (docs/design.md, section 3)."""

V0_ID = "fedenv/ClientSelection-v0"
"""Release 0.1.0's environment (:func:`parallel_env_v0`)."""

V0_OPTIONS = {"reward_accuracy_split": "test", "val_fraction": 0.1, "latency_weight": 3.68e-4,
              "comm_weight": 1.20e-3, "engine": "unfused"}
"""The :class:`~fedenv.config.EnvConfig` fields under which the current environment plays what ``-v0`` played
in 0.1.0 (FedMarl's reward on the test split, 0.1.0's validation hold-out, reward weights and SGD step):
the episodes recorded under 0.1.0 replay with them (tests/test_env_versions.py). What is new since then
is additive: the infos also carry ``validation_accuracy``, ``download_mb`` and ``traffic_mb``."""


class OutdatedEnvWarning(UserWarning):
    """A superseded environment version was built (as Gymnasium warns for an outdated ``-vN``)."""


def parallel_env_v0(**overrides) -> ClientSelectionEnv:
    """``fedenv/ClientSelection-v0``: the environment with :data:`V0_OPTIONS` under ``overrides`` (fields of
    :class:`~fedenv.config.EnvConfig`; a field given here wins over the v0 option).

    Warns:
        OutdatedEnvWarning: always: v0's reward is scored on the test split, so a policy trained on it
            sees test labels; it names :data:`ENV_ID` and the options it applies.
    """
    warnings.warn(f"{V0_ID} is the environment of fedenv 0.1.0, kept to reproduce its results: its reward and "
                  f"observation use the test split's accuracy, so a learner trained on it sees test labels. It "
                  f"is {ENV_ID} with {', '.join(f'{k}={v!r}' for k, v in V0_OPTIONS.items())}. Use {ENV_ID} "
                  f"for new work.", OutdatedEnvWarning, stacklevel=2)
    env = ClientSelectionEnv(None, **{**V0_OPTIONS, **overrides})
    env.metadata = {**env.metadata, "name": "fedenv_client_selection_v0"}
    return env


def register_envs() -> None:
    """Register :data:`ENV_ID` and :data:`V0_ID` with PettingZoo (once; ``import fedenv`` calls it)."""
    for env_id, entry_point in ((ENV_ID, "fedenv.env:parallel_env"), (V0_ID, "fedenv.registration:parallel_env_v0")):
        if env_id not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", env_id, entry_point=entry_point)
