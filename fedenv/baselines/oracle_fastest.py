"""An oracle diagnostic: ``stale-fastest`` ranking the candidates by the round times they will take."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from fedenv.baselines.stale_fastest import StaleFastestPolicy


class OracleFastestPolicy(StaleFastestPolicy):
    """:class:`~fedenv.baselines.StaleFastestPolicy`'s rule with "fastest" and "slowest" read from the round times
    the candidates will take this round (:meth:`fedenv.simulator.FederationSimulator.candidate_round_s`,
    given before each decision through :meth:`~fedenv.baselines.base.Policy.look_ahead`) instead of the server's
    estimates from past reports and device profiles.

    No server knows these times before the round, so this is not a policy to compare with: it measures what exact
    round times, in place of the estimates, give the rule, a privileged-information diagnostic ("oracle") of the kind
    studies of client selection report beside their heuristics. It bounds no policy: ranking greedily by this round's
    times can do worse over an episode than ranking by the estimates. ``compared = False``: ``evaluate.py --policies
    all`` leaves it out; it cannot label a learner's demonstrations (:mod:`agents.demonstrations`), whose
    episodes give no look-ahead.

    Raises:
        ValueError: the options :class:`~fedenv.baselines.StaleFastestPolicy` refuses; from :meth:`act`,
            a round whose look-ahead was not given (a runner other than :func:`fedenv.evaluation.run_episode`).
    """

    looks_ahead: ClassVar[bool] = True

    def __init__(self, k: int = 1, last_rounds: int = 3, drop: int = 1, num_rounds: int = 20,
                 name: str = "oracle-fastest"):
        super().__init__(k=k, last_rounds=last_rounds, drop=drop, num_rounds=num_rounds, name=name)

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self.round_s: dict[str, float] | None = None  # a look-ahead never acted on does not reach the next episode

    def look_ahead(self, round_s: Mapping[str, float]) -> None:
        self.round_s = dict(round_s)

    def durations_s(self, chosen, infos):
        """``{agent: seconds}``, the time each of the candidates ``chosen`` will take this round, from the look-ahead
        given for it (consumed: each serves one round)."""
        round_s, self.round_s = self.round_s, None
        missing = [agent for agent in chosen if round_s is None or agent not in round_s]
        if missing:
            raise ValueError(f"{self.name} was not given this round's look-ahead for {missing[:3]}: run it through "
                             "fedenv.evaluation.run_episode, or call "
                             "look_ahead(fedenv.evaluation.candidate_round_s(env)) before each act")
        return {agent: round_s[agent] for agent in chosen}
