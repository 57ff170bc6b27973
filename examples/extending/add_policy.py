"""Add a selection policy (one small class) and compare it with FedAvg on two seeds (docs: "Extending").

    python examples/extending/add_policy.py

A policy is a :class:`fedenv.baselines.Policy`: ``act(observations, infos)`` returns the agents that
upload (1); ``observe(infos)`` gets the round's feedback (bandits learn from it); ``env_overrides`` names
the EnvConfig fields the policy needs; ``probes = False`` (the default of fixed policies) runs it without
the probing epoch, deciding on what each candidate reported when it last took part.
"""

from fedenv import EnvConfig
from fedenv.baselines import FedAvgPolicy, Policy, candidates
from fedenv.evaluation import compare


class LowestLoss(Policy):
    """Half of the candidates, those with the lowest reported loss."""

    name = "lowest-loss"
    env_overrides = {"aggregation": "fedavg"}          # EnvConfig fields the policy needs

    def act(self, observations, infos):                 # infos[agent]["probe_loss"], ["probe_latency_s"], ...
        ranked = sorted(candidates(observations), key=lambda a: infos[a]["probe_loss"])
        return {agent: 1 for agent in ranked[: len(ranked) // 2]}

    def observe(self, infos):                           # optional: feedback after each round (bandits)
        pass


compare(EnvConfig(num_rounds=3, test_samples=300), [FedAvgPolicy(), LowestLoss()], seeds=[1000, 1001])
