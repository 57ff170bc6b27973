"""Stable-Baselines3 glue (optional extra ``pip install -e ".[sb3]"``; SB3 is imported only when a function
here is called).

:func:`sb3_vec_env` turns the environment into an SB3 ``VecEnv`` whose sub-environments are the agents
(one shared policy for all clients, FedMarl's parameter sharing) of ``num_envs`` federations stepped
together by :class:`~fedenv.vector.VectorClientSelectionEnv`. ``PPO(seed=...)`` works (the vector env
has ``seed``; the next reset expands it into one seed per federation with
:func:`~fedenv.vector.federation_seeds`; without a seed every federation draws its own). A finished
federation is reset at once, as SB3's ``DummyVecEnv`` does: the step's infos stay those of the round
just played (``done``, ``infos[i]["TimeLimit.truncated"]`` for a time-limit end, so that SB3 bootstraps
from ``infos[i]["terminal_observation"]``), and the new episode's reset infos go to
``venv.reset_infos[i]``. Episode statistics come from ``VecMonitor`` (``rollout/ep_rew_mean`` is the
mean team return). The infos SB3, ``VecMonitor`` and callbacks see hold no test accuracy (it is for
reports only, docs/design.md section 3); each finished episode's final test accuracy is kept in
``venv.get_attr("episode_reports")[0]`` (per federation, one dict per episode; scored once per episode).

Masked agents: SB3's algorithms do not apply action masks. A non-candidate's action is ignored by the
environment (it counts as 0) but its transition still enters the rollout with the team reward, as noise.
The flat observation keeps the mask as its last two entries (``mask="append"``, the default) so the
policy can learn to ignore those steps, and the vector env offers ``action_masks()`` so that
``sb3_contrib.MaskablePPO`` samples only allowed actions. :class:`SB3Policy` runs a trained model as a
:class:`~fedenv.baselines.Policy`; :func:`sb3_progress_callback` prints training progress."""

from __future__ import annotations

import functools
import json
import pickle
from pathlib import Path

import numpy as np

from fedenv.baselines.base import Policy
from fedenv.config import EnvConfig
from fedenv.fileio import atomic_write, atomic_write_json
from fedenv.integrations.flat import flatten_observations
from fedenv.names import check_known
from fedenv.vector import VectorClientSelectionEnv


def sb3_vec_env(config: EnvConfig, num_envs: int = 1, mask: str = "append"):
    """A ready Stable-Baselines3 ``VecEnv`` over ``num_envs`` federations of one configuration.

    Args:
        config: the environment's configuration.
        num_envs: independent federations (different seeds); the VecEnv has ``num_envs * num_clients``
            sub-environments, federation k's agents in rows ``k * num_clients`` to ``(k + 1) * num_clients - 1``.
        mask: ``append`` (flat observation ends with the action mask; ``action_masks()`` available for
            MaskablePPO) or ``drop``.

    Returns:
        ``VecMonitor(...)`` of the vector env (module docstring).

    Raises:
        ValueError: an unknown ``mask``, ``num_envs < 1`` or an invalid configuration.
    """
    from stable_baselines3.common.vec_env import VecMonitor

    from fedenv.integrations.sb3_vec_env import FederationsVecEnv

    return VecMonitor(FederationsVecEnv(VectorClientSelectionEnv(config, num_envs, "episode_end"), mask))


def sb3_progress_callback(episodes: int, every: int = 5):
    """An SB3 callback printing one line every ``every`` finished episodes of the first federation of a
    :func:`sb3_vec_env` (its first sub-environment's ``VecMonitor`` episodes): the episode count out of
    ``episodes``, that episode's team return (training episodes: the policy explores) and its final test
    accuracy (read from the vec env's ``episode_reports``, never from the infos the learner sees). SB3's own
    ``verbose=1`` prints tables per rollout; this is one line per few episodes.

    Pass it as ``model.learn(total_timesteps, callback=sb3_progress_callback(episodes))``.

    Raises:
        ValueError: ``every`` or ``episodes`` below 1.
    """
    from stable_baselines3.common.callbacks import BaseCallback

    if every < 1 or episodes < 1:
        raise ValueError(f"every={every} and episodes={episodes} must be >= 1")

    class EpisodeProgress(BaseCallback):
        def __init__(self):
            super().__init__()
            self.finished = 0

        def _on_step(self) -> bool:
            info = self.locals["infos"][0]
            if "episode" in info:
                self.finished += 1
                if self.finished % every == 0 or self.finished == episodes:
                    report = self.training_env.get_attr("episode_reports", [0])[0][0][-1]
                    print(f"sb3: episode {self.finished}/{episodes}, team return {info['episode']['r']:.3f}, "
                          f"test accuracy {report['test_accuracy']:.3f} (training, exploring)", flush=True)
            return True

    return EpisodeProgress()


SB3_ALGORITHMS = ("PPO", "DQN", "A2C", "MaskablePPO")


def _sb3_class(algorithm: str):
    check_known(algorithm, SB3_ALGORITHMS, "algorithm")
    if algorithm == "MaskablePPO":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    import stable_baselines3

    return getattr(stable_baselines3, algorithm)


OBS_NORMALIZATION_NAME = "vecnormalize.pkl"
"""The file beside ``model.zip`` holding the observation statistics of a model trained under SB3's
``VecNormalize`` (SB3's own pickle of the wrapper, ``VecNormalize.save``)."""


class SB3Policy(Policy):
    """A trained Stable-Baselines3 model as a :class:`~fedenv.baselines.Policy` (deterministic actions;
    MaskablePPO gets the action masks). Save with :meth:`save`, load with :meth:`load`.

    A model trained under ``VecNormalize`` acts on normalised observations: the policy normalises each
    flat observation with the wrapper's statistics (``obs_normalizer``, by default the model's own
    ``get_vec_normalize_env()``), saves them beside the model and applies them again on load
    (DLR-RM/stable-baselines3 #870), so that a loaded policy decides as the trained one did."""

    probes = True  # learned on probing observations: runs with the probing epoch

    def __init__(self, model, algorithm: str, mask: str, env_config: EnvConfig, name: str | None = None,
                 obs_normalizer=None):
        self.model, self.algorithm, self.mask, self.env_config = model, algorithm, mask, env_config
        self.name = name or f"sb3-{algorithm.lower()}"
        self.obs_normalizer = obs_normalizer if obs_normalizer is not None else model.get_vec_normalize_env()

    def act(self, observations, infos):
        agents = list(observations)
        flat = flatten_observations(observations, self.mask)
        batch = np.stack([flat[a] for a in agents])
        if self.obs_normalizer is not None:
            batch = self.obs_normalizer.normalize_obs(batch)
        masks = np.stack([observations[a]["action_mask"] for a in agents]).astype(bool)
        kwargs = {"action_masks": masks} if self.algorithm == "MaskablePPO" else {}
        actions, _ = self.model.predict(batch, deterministic=True, **kwargs)
        return {a: int(x) for a, x, m in zip(agents, actions, masks[:, 1]) if m}

    def save(self, directory) -> None:
        """Write ``model.zip``, ``policy.json`` (algorithm, mask mode, env config, the statistics file) and,
        with an ``obs_normalizer``, its statistics (:data:`OBS_NORMALIZATION_NAME`) into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save(directory / "model.zip")
        normalization = None
        if self.obs_normalizer is not None:
            normalization = OBS_NORMALIZATION_NAME
            atomic_write(directory / normalization, functools.partial(pickle.dump, self.obs_normalizer))
        atomic_write_json(directory / "policy.json", {
            "algorithm": self.algorithm, "mask": self.mask, "name": self.name, "env_config": self.env_config.to_dict(),
            "obs_normalization": normalization,
        })

    @classmethod
    def load(cls, directory) -> SB3Policy:
        """Inverse of :meth:`save`.

        Raises:
            FileNotFoundError: no ``policy.json`` in ``directory``, or no statistics file where ``policy.json``
                names one. ValueError: an unknown algorithm.
        """
        directory = Path(directory)
        if not (directory / "policy.json").is_file():
            raise FileNotFoundError(f"no SB3 policy in {directory} (expected policy.json and model.zip)")
        meta = json.loads((directory / "policy.json").read_text())
        model = _sb3_class(meta["algorithm"]).load(directory / "model.zip", device="cpu")
        normalizer = None
        if meta.get("obs_normalization"):
            path = directory / meta["obs_normalization"]
            if not path.is_file():
                raise FileNotFoundError(f"{directory / 'policy.json'} names VecNormalize statistics {path}, which "
                                        f"is missing: the model acts on normalised observations")
            with open(path, "rb") as handle:  # SB3's own format (VecNormalize.load without a venv)
                normalizer = pickle.load(handle)
            normalizer.training = False
        return cls(model, meta["algorithm"], meta["mask"], EnvConfig.from_dict(meta["env_config"]), meta["name"],
                   normalizer)
