"""The learned VDN policy as a :class:`fedenv.baselines.Policy` (greedy: no exploration)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from agents.checkpoint import load_checkpoint
from agents.config import VDNConfig
from agents.mixers import MIXERS, acts_jointly, greedy_actions
from agents.networks import build_q_network
from agents.vdn import q_network_columns
from fedenv.baselines import Policy
from fedenv.config import EnvConfig
from fedenv.models.seeding import SeededDraws


def variant_name(vdn_config: VDNConfig, env_config: EnvConfig) -> str:
    """The learner variant a checkpoint holds, for tables: its mixer (``vdn``: plain VDN), then each
    lever that is on, joined by ``+``: its Q-network where not ``mlp`` (``deepsets``), ``context``
    (``observation_context``), ``normalised`` (``observation_normalised``), ``estimates``
    (``observation_estimates``), ``demonstrated`` (a ``demonstrator``), ``faded`` (its margin weight annealed,
    ``demonstration_final_weight``), ``inputs=N`` (its Q-network reads N features, ``input_features``),
    ``no-probing`` (``probing=False``), e.g. ``qmix+context+no-probing`` or ``vdn+deepsets+no-probing``."""
    demonstrated = bool(vdn_config.demonstrator)
    levers = [(vdn_config.q_network, vdn_config.q_network != "mlp"), ("context", env_config.observation_context),
              ("normalised", env_config.observation_normalised), ("estimates", env_config.observation_estimates),
              ("demonstrated", demonstrated),
              ("faded", demonstrated and vdn_config.demonstration_final_weight is not None),
              (f"inputs={len(vdn_config.input_features)}", bool(vdn_config.input_features)),
              ("no-probing", not env_config.probing)]
    return "+".join([vdn_config.mixer, *(name for name, on in levers if on)])


def acting_networks(vdn_config: VDNConfig, feature_names: Sequence[str], q_state: dict,
                    mixer_state: dict | None) -> tuple[torch.nn.Module, torch.nn.Module | None]:
    """CPU copies of what acting greedily needs, for observations of layout ``feature_names`` ``(d,)``: the
    Q-network with weights ``q_state`` (reading the columns of ``vdn_config.input_features``), and the mixer with
    ``mixer_state`` where its greedy joint action is not each agent's argmax (``straggler``; otherwise None).
    Building them draws from no global generator.

    Raises:
        ValueError: the mixer acts jointly and ``mixer_state`` is None (a checkpoint without its mixer), or an
            input feature that is not in ``feature_names``.
    """
    obs_dim = len(feature_names)
    columns = q_network_columns(vdn_config, obs_dim, feature_names)
    with SeededDraws(0):  # the initial weights are overwritten below
        q = build_q_network(vdn_config.q_network, obs_dim, vdn_config.hidden, columns)
        mixer = MIXERS[vdn_config.mixer](obs_dim, vdn_config.mixing_embed_dim)
    q.load_state_dict({k: v.cpu() for k, v in q_state.items()})
    if not acts_jointly(mixer):
        return q, None
    if mixer_state is None:
        raise ValueError(f"the {vdn_config.mixer!r} mixer chooses the joint action, but no mixer weights were given "
                         f"(a checkpoint without mixer_state)")
    mixer.load_state_dict({k: v.cpu() for k, v in mixer_state.items()})
    return q, mixer.eval()


class GreedyPolicy(Policy):
    """Each candidate takes ``argmax_a Q(o_n, a)`` of the shared Q-network (:mod:`agents.networks`), or,
    with a mixer that acts jointly (``straggler``), the candidates take the mixer's greedy joint action
    (:func:`agents.mixers.greedy_actions`).

    It plays in the probing mode it was trained in (``probes = env_config.probing``): an agent trained
    with ``--no-probing`` observes what each candidate reported when it last took part, and is charged
    no probing epoch in evaluation either.

    Args:
        q: the trained Q-network (``(obs (K, d), candidate (K,)) -> (K, 2)``).
        feature_names: observation layout it was trained on.
        env_config: the environment it was trained in (evaluate.py rebuilds it from here).
        variant: the learner variant (:func:`variant_name`), printed by evaluate.py.
        mixer: the mixer where it chooses the joint action (:func:`acting_networks`), else None.
    """

    name = "vdn"

    def __init__(self, q: torch.nn.Module, feature_names: list[str], env_config: EnvConfig, variant: str = "vdn",
                 mixer: torch.nn.Module | None = None):
        self.probes = bool(env_config.probing)
        self.variant = variant
        self.q = q.eval()
        self.mixer = mixer
        self.feature_names = list(feature_names)
        self.env_config = env_config

    @classmethod
    def from_checkpoint(cls, path) -> GreedyPolicy:
        """Load from a checkpoint written by ``train_agents.py``.

        Raises:
            FileNotFoundError, ValueError: see :func:`~agents.checkpoint.load_checkpoint` and
                :func:`acting_networks`.
        """
        document = load_checkpoint(path)
        q, mixer = acting_networks(document["vdn_config"], document["feature_names"], document["q_state"],
                                   document.get("mixer_state"))
        return cls(q, document["feature_names"], document["env_config"],
                   variant_name(document["vdn_config"], document["env_config"]), mixer)

    def check_layout(self, feature_names: list[str]) -> None:
        """Raise ``ValueError`` if an env's observation layout differs from the training layout."""
        if list(feature_names) != self.feature_names:
            raise ValueError(
                f"observation layout differs from the checkpoint's: env {feature_names} vs {self.feature_names}"
            )

    def act(self, observations: dict, infos: dict) -> dict[str, int]:
        """``agent -> argmax_a Q(o_agent, a)`` (or the mixer's joint argmax) for the candidates
        (``action_mask[1] == 1``); others are left out (action 0). ``observations``: ``agent ->
        {"observation": (d,), "action_mask": (2,)}``; ``infos`` unused."""
        agents = list(observations)
        obs = torch.as_tensor(np.stack([observations[a]["observation"] for a in agents]))
        mask = torch.as_tensor(np.stack([observations[a]["action_mask"] for a in agents]))
        with torch.no_grad():
            best = greedy_actions(self.q(obs, mask[:, 1]), mask, obs, self.mixer).numpy()
        return {agent: int(b) for agent, b, allowed in zip(agents, best, mask[:, 1]) if allowed}
