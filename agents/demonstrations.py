"""Learning from a demonstrator (DQfD, Hester et al., AAAI 2018): a fixed policy's joint actions label the
training states, exploring candidates play them, and a large-margin supervised term pulls each candidate's
greedy action towards the demonstrator's (``VDNConfig.demonstrator``).

The demonstrator is any registered fixed policy (:data:`fedenv.registry.POLICIES`) with its options, built as
the studies build a reference (:func:`fedenv.baselines.policy_from_spec`, with ``num_rounds`` where it takes it)
and driven as :func:`fedenv.evaluation.run_episode` drives a policy: reset with the episode's seed and given
the clients' device-profile estimates, asked for the round's actions on the observations and infos (without the test
split's accuracy), shown each step's infos. It acts in the training federation as configured (its
``env_overrides`` are not applied). It labels every state of the episode, the states the learner reached by
its own actions too (DAgger's labelling, Ross et al., AISTATS 2011; DQfD labels only the demonstrator's own
episodes), so a demonstrator that keeps state must update it from what was played (the infos' ``selected``
flags, as :class:`fedenv.baselines.StaleFastestPolicy` does), not from its own suggestions. Oort and the FedCM
bandits update their statistics only for the clients they chose themselves, so once the learner acts on its own
they label from a history that is theirs, not the episode's; the stateless policies (``fastest``, ``random``,
the schedules) and ``stale-fastest`` label from the episode's. On Ray (sync) a federation's device-profile
estimates are read from its actor right after the reset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from fedenv.baselines import policy_from_spec
from fedenv.baselines.base import Policy
from fedenv.config import EnvConfig


def make_demonstrator(spec: str, env_config: EnvConfig) -> Policy:
    """A new instance of the registered policy ``spec`` (``NAME`` or ``NAME:OPTION=VALUE,...``,
    :func:`fedenv.baselines.policy_from_spec`) for episodes of ``env_config`` (``num_rounds`` passed where the
    policy takes it; :meth:`~fedenv.baselines.base.Policy.configure` with its ``clients_per_round``).

    Raises:
        ValueError: a malformed spec, a name that is not registered, an option the policy does not take or a
            value it refuses; an oracle (``Policy.looks_ahead``), whose look-ahead a learner's episodes do not give.
    """
    policy = policy_from_spec(spec, num_rounds=env_config.num_rounds)
    if policy.looks_ahead:
        raise ValueError(f"policy {spec!r} is an oracle that reads each round's true round times, which a "
                         "learner's episodes do not give; choose a policy a server could run")
    policy.configure(env_config.clients_per_round)
    return policy


def demonstrated_actions(policy: Policy, agents: Sequence[str], observations: Mapping, infos: Mapping) -> np.ndarray:
    """The demonstrator's joint action ``(K,)`` int64 in ``agents`` order for the round of ``observations``
    and ``infos`` (keyed by agent, as a policy may read them: :func:`fedenv.env.policy_infos`): 1 for a
    candidate it selects, 0 otherwise."""
    chosen = policy.act(observations, infos)
    return np.array([int(chosen.get(agent, 0)) * int(observations[agent]["action_mask"][1]) for agent in agents],
                    dtype=np.int64)


def margin_loss(values: torch.Tensor, candidates: torch.Tensor, demo_actions: torch.Tensor,
                margin: float) -> torch.Tensor:
    """DQfD's large-margin supervised loss (Hester et al., AAAI 2018, Eq. 2) per agent,
    ``J_E = max_a [Q(o, a) + l(a_E, a)] - Q(o, a_E)`` with ``l(a_E, a) = margin`` for ``a != a_E`` and 0 for
    ``a = a_E``, averaged over the labelled candidates (0 when there are none). It is 0 where the
    demonstrator's action leads every other action by at least ``margin``.

    Args:
        values: ``(B, K, 2)`` per-agent Q-values. candidates: ``(B, K)`` 1.0 where the agent may upload.
        demo_actions: ``(B, K)`` int64, the demonstrator's actions, -1 where there is none. margin: >= 0,
            in the units of ``values``.

    Returns:
        A scalar tensor.
    """
    labelled = (candidates > 0) & (demo_actions >= 0)
    if not bool(labelled.any()):
        return values.sum() * 0.0
    expert = demo_actions.clamp(min=0)
    augmented = values + margin * (1.0 - F.one_hot(expert, values.shape[-1]).to(values.dtype))
    per_agent = augmented.max(dim=-1).values - values.gather(-1, expert.unsqueeze(-1)).squeeze(-1)
    return per_agent[labelled].mean()
