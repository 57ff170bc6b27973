"""Stable-Baselines3 glue (optional extra ``pip install -e ".[sb3]"``; SB3 and SuperSuit are imported only
when a function here is called).

:func:`sb3_vec_env` turns the environment into an SB3 ``VecEnv`` whose sub-environments are the agents
(one shared policy for all clients, FedMarl's parameter sharing), over SuperSuit's
``pettingzoo_env_to_vec_env_v1`` and ``concat_vec_envs_v1``. It closes three gaps of the plain SuperSuit
wrapper: ``PPO(seed=...)`` works (the vector env has ``seed``; the next reset uses it), a time-limit end
is reported as ``done`` with ``infos[i]["TimeLimit.truncated"] = True`` (SB3 then bootstraps from
``infos[i]["terminal_observation"]``), and episode statistics come from ``VecMonitor``
(``rollout/ep_rew_mean`` is the mean team return).

Masked agents: SB3's algorithms do not apply action masks. A non-candidate's action is ignored by the
environment (it counts as 0) but its transition still enters the rollout with the team reward, as noise.
The flat observation keeps the mask as its last two entries (``mask="append"``, the default) so the
policy can learn to ignore those steps, and the vector env offers ``action_masks()`` so that
``sb3_contrib.MaskablePPO`` samples only allowed actions. :class:`SB3Policy` runs a trained model as a
:class:`~fedenv.baselines.Policy`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from fedenv.baselines.base import Policy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.fileio import atomic_write_text
from fedenv.integrations.flat import FlatObservation, flatten_observations


def sb3_vec_env(config: EnvConfig, num_envs: int = 1, mask: str = "append"):
    """A ready Stable-Baselines3 ``VecEnv`` over ``num_envs`` copies of the environment.

    Args:
        config: the environment's configuration.
        num_envs: independent federations; the VecEnv has ``num_envs * num_clients`` sub-environments.
        mask: ``append`` (flat observation ends with the action mask; ``action_masks()`` available for
            MaskablePPO) or ``drop``.

    Returns:
        ``VecMonitor(...)`` of the vector env (module docstring).
    """
    import supersuit
    from stable_baselines3.common.vec_env import VecMonitor

    flat = FlatObservation(ClientSelectionEnv(config), mask)
    vec = supersuit.concat_vec_envs_v1(supersuit.pettingzoo_env_to_vec_env_v1(flat), num_envs, base_class="gymnasium")
    return VecMonitor(_sb3_vec_env_class()(vec, mask))


def _sb3_vec_env_class():
    from stable_baselines3.common.vec_env import VecEnv

    class GymnasiumToSB3VecEnv(VecEnv):
        """SB3 ``VecEnv`` over a gymnasium-style vector env of agents (see the module docstring)."""

        def __init__(self, venv, mask: str):
            self.venv = venv
            self.mask = mask
            super().__init__(venv.num_envs, venv.observation_space, venv.action_space)
            self._last_obs = None
            self._actions = None

        def reset(self):
            seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
            observations, infos = self.venv.reset(seed=seed)
            self._reset_seeds()
            self.reset_infos = list(infos)
            self._last_obs = observations
            return observations

        def step_async(self, actions):
            self._actions = actions

        def step_wait(self):
            observations, rewards, terminations, truncations, infos = self.venv.step(self._actions)
            dones = np.logical_or(terminations, truncations)
            infos = [dict(info) for info in infos]
            for i, info in enumerate(infos):
                if dones[i]:
                    info["TimeLimit.truncated"] = bool(truncations[i] and not terminations[i])
            self._last_obs = observations
            return observations, np.asarray(rewards, dtype=np.float32), dones, infos

        def action_masks(self) -> np.ndarray:
            """``(num_envs, 2)`` bool masks of the current observations (needs ``mask="append"``)."""
            if self.mask != "append":
                raise ValueError("action_masks() needs the mask in the observation: build with mask='append'")
            return self._last_obs[:, -2:] > 0.5

        def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
            if method_name == "action_masks":
                masks = self.action_masks()
                return [masks[i] for i in self._get_indices(indices)]
            raise AttributeError(f"sub-environments have no method {method_name!r} here")

        def close(self):
            self.venv.close()

        def get_attr(self, attr_name, indices=None):
            return [getattr(self, attr_name, None) for _ in self._get_indices(indices)]

        def set_attr(self, attr_name, value, indices=None):
            setattr(self, attr_name, value)

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False for _ in self._get_indices(indices)]

    return GymnasiumToSB3VecEnv


SB3_ALGORITHMS = ("PPO", "DQN", "A2C", "MaskablePPO")


def _sb3_class(algorithm: str):
    if algorithm not in SB3_ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} is not known; allowed: {', '.join(SB3_ALGORITHMS)}")
    if algorithm == "MaskablePPO":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    import stable_baselines3

    return getattr(stable_baselines3, algorithm)


class SB3Policy(Policy):
    """A trained Stable-Baselines3 model as a :class:`~fedenv.baselines.Policy` (deterministic actions;
    MaskablePPO gets the action masks). Save with :meth:`save`, load with :meth:`load`."""

    def __init__(self, model, algorithm: str, mask: str, env_config: EnvConfig, name: str | None = None):
        self.model, self.algorithm, self.mask, self.env_config = model, algorithm, mask, env_config
        self.name = name or f"sb3-{algorithm.lower()}"

    def act(self, observations, infos):
        agents = list(observations)
        flat = flatten_observations(observations, self.mask)
        batch = np.stack([flat[a] for a in agents])
        masks = np.stack([observations[a]["action_mask"] for a in agents]).astype(bool)
        kwargs = {"action_masks": masks} if self.algorithm == "MaskablePPO" else {}
        actions, _ = self.model.predict(batch, deterministic=True, **kwargs)
        return {a: int(x) for a, x, m in zip(agents, actions, masks[:, 1]) if m}

    def save(self, directory) -> None:
        """Write ``model.zip`` and ``policy.json`` (algorithm, mask mode, env config) into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save(directory / "model.zip")
        atomic_write_text(directory / "policy.json", json.dumps({
            "algorithm": self.algorithm, "mask": self.mask, "name": self.name, "env_config": self.env_config.to_dict(),
        }, indent=2))

    @classmethod
    def load(cls, directory) -> SB3Policy:
        """Inverse of :meth:`save`.

        Raises:
            FileNotFoundError: no ``policy.json`` in ``directory``. ValueError: an unknown algorithm.
        """
        directory = Path(directory)
        if not (directory / "policy.json").is_file():
            raise FileNotFoundError(f"no SB3 policy in {directory} (expected policy.json and model.zip)")
        meta = json.loads((directory / "policy.json").read_text())
        model = _sb3_class(meta["algorithm"]).load(directory / "model.zip", device="cpu")
        return cls(model, meta["algorithm"], meta["mask"], EnvConfig.from_dict(meta["env_config"]), meta["name"])
