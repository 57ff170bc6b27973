"""The learned VDN policy as a :class:`fedenv.baselines.Policy` (greedy: no exploration)."""

from __future__ import annotations

import numpy as np
import torch

from agents.checkpoint import load_checkpoint
from agents.config import VDNConfig
from agents.networks import build_q_network
from fedenv.baselines import Policy
from fedenv.config import EnvConfig


def variant_name(vdn_config: VDNConfig, env_config: EnvConfig) -> str:
    """The learner variant a checkpoint holds, for tables: its mixer (``vdn``: plain VDN), then each
    lever that is on, joined by ``+``: its Q-network where not ``mlp`` (``deepsets``), ``context``
    (``observation_context``), ``normalised`` (``observation_normalised``), ``no-probing``
    (``probing=False``), e.g. ``qmix+context+no-probing`` or ``vdn+deepsets+no-probing``."""
    levers = [(vdn_config.q_network, vdn_config.q_network != "mlp"), ("context", env_config.observation_context),
              ("normalised", env_config.observation_normalised), ("no-probing", not env_config.probing)]
    return "+".join([vdn_config.mixer, *(name for name, on in levers if on)])


class GreedyPolicy(Policy):
    """Each candidate takes ``argmax_a Q(o_n, a)`` of the shared Q-network (:mod:`agents.networks`).

    It plays in the probing mode it was trained in (``probes = env_config.probing``): an agent trained
    with ``--no-probing`` observes what each candidate reported when it last took part, and is charged
    no probing epoch in evaluation either.

    Args:
        q: the trained Q-network (``(obs (K, d), candidate (K,)) -> (K, 2)``).
        feature_names: observation layout it was trained on.
        env_config: the environment it was trained in (evaluate.py rebuilds it from here).
        variant: the learner variant (:func:`variant_name`), printed by evaluate.py.
    """

    name = "vdn"

    def __init__(self, q: torch.nn.Module, feature_names: list[str], env_config: EnvConfig, variant: str = "vdn"):
        self.probes = bool(env_config.probing)
        self.variant = variant
        self.q = q.eval()
        self.feature_names = list(feature_names)
        self.env_config = env_config

    @classmethod
    def from_checkpoint(cls, path) -> GreedyPolicy:
        """Load from a checkpoint written by ``train_agents.py``.

        Raises:
            FileNotFoundError, ValueError: see :func:`~agents.checkpoint.load_checkpoint`.
        """
        document = load_checkpoint(path)
        config = document["vdn_config"]
        q = build_q_network(config.q_network, len(document["feature_names"]), config.hidden)
        q.load_state_dict(document["q_state"])
        return cls(q, document["feature_names"], document["env_config"],
                   variant_name(document["vdn_config"], document["env_config"]))

    def check_layout(self, feature_names: list[str]) -> None:
        """Raise ``ValueError`` if an env's observation layout differs from the training layout."""
        if list(feature_names) != self.feature_names:
            raise ValueError(
                f"observation layout differs from the checkpoint's: env {feature_names} vs {self.feature_names}"
            )

    def act(self, observations: dict, infos: dict) -> dict[str, int]:
        """``agent -> argmax_a Q(o_agent, a)`` for the candidates (``action_mask[1] == 1``); others are left out
        (action 0). ``observations``: ``agent -> {"observation": (d,), "action_mask": (2,)}``; ``infos`` unused."""
        agents = list(observations)
        obs = np.stack([observations[a]["observation"] for a in agents])
        mask = np.stack([observations[a]["action_mask"] for a in agents])
        with torch.no_grad():
            q = self.q(torch.as_tensor(obs), torch.as_tensor(mask[:, 1])).numpy()
        best = np.where(mask > 0, q, -np.inf).argmax(axis=1)
        return {agent: int(b) for agent, b, allowed in zip(agents, best, mask[:, 1]) if allowed}
