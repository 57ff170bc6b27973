"""The stale-fastest heuristic on hand-made infos: the fastest of the least recently selected half, then every
candidate but the slowest in the last rounds; staleness counts what was played (the infos' selected flags)."""

import numpy as np
import pytest

from fedenv.baselines import StaleFastestPolicy, make_policy

# expected round time (s): probe + upload latency, the latest reports
DURATIONS = {"a": 4.0, "b": 1.0, "c": 3.0, "d": 2.0, "e": 0.5}


def infos(played=()):
    return {agent: {"probe_latency_s": seconds / 2, "upload_latency_s": seconds / 2, "selected": agent in played}
            for agent, seconds in DURATIONS.items()}


def observations(non_candidates=("e",)):
    return {agent: {"action_mask": np.array([1, int(agent not in non_candidates)])} for agent in DURATIONS}


def selected(actions):
    return sorted(agent for agent, action in actions.items() if action)


def play_round(policy, played=None):
    """The policy's actions for one round, then the step's infos with ``played`` (default: its own choice)
    selected, as the env reports them."""
    actions = policy.act(observations(), infos())
    policy.observe(infos(selected(actions) if played is None else played))
    return actions


def test_the_fastest_of_the_stalest_half_then_all_but_the_slowest_in_the_last_rounds():
    policy = StaleFastestPolicy(k=1, last_rounds=2, drop=1, num_rounds=5)
    policy.reset(0)
    rounds = [play_round(policy) for _ in range(5)]
    assert all(set(actions) == {"a", "b", "c", "d"} for actions in rounds)  # candidates only; e is faster but not one
    # round 1: none selected yet, so the stalest half by speed is b (1 s) and d (2 s): b
    # round 2: a, c, d never selected, b in round 1; the stalest half (2 of 4), ties by speed: d, c -> d
    # round 3: a and c never selected: c (3 s) is faster than a (4 s)
    # rounds 4 and 5 (the last 2): every candidate but the slowest, a
    assert [selected(actions) for actions in rounds] == [["b"], ["d"], ["c"], ["b", "c", "d"], ["b", "c", "d"]]
    policy.reset(1)  # a new episode forgets the selections
    assert selected(policy.act(observations(), infos())) == ["b"]


def test_k_uploads_per_round_from_a_pool_of_at_least_k_and_drop_never_empties_a_last_round():
    policy = StaleFastestPolicy(k=3, last_rounds=1, drop=9, num_rounds=2)
    policy.reset(0)
    # 4 candidates: the pool is max(k, 4 // 2) = 3 stalest (all tied), by speed b, d, c
    assert selected(play_round(policy)) == ["b", "c", "d"]
    assert selected(play_round(policy)) == ["b"]  # the last round keeps the fastest one


def test_staleness_counts_what_was_played_not_what_the_policy_chose():
    policy = StaleFastestPolicy(k=1, last_rounds=0, drop=1, num_rounds=5)
    policy.reset(0)
    # round 1 it chooses b, but d and c are played (another policy acted: agents.demonstrations)
    assert selected(play_round(policy, played=["c", "d"])) == ["b"]
    # round 2: a and b were never played, the stalest half (2 of 4): b (1 s) before a (4 s)
    assert selected(play_round(policy, played=["b"])) == ["b"]
    # round 3: only a was never played; the stalest half is a and then c or d (round 1), by speed d: d
    assert selected(play_round(policy)) == ["d"]


def test_bad_options_are_refused_by_name_and_the_registry_builds_the_defaults():
    for options, bad in (({"k": 0}, "k=0"), ({"drop": -1}, "drop=-1"), ({"last_rounds": 6, "num_rounds": 5},
                                                                         "last_rounds=6")):
        with pytest.raises(ValueError, match=bad):
            StaleFastestPolicy(**options)
    policy = make_policy("stale-fastest", num_rounds=10)
    assert (policy.k, policy.last_rounds, policy.drop, policy.num_rounds, policy.probes, policy.compared) == (
        1, 3, 1, 10, False, False)
