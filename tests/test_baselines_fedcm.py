"""FedCM's bandits (Kim et al., arXiv 2012.03270, Algorithms 2-3): updates and indices worked by hand."""

import math

import numpy as np
import pytest

from fedenv.baselines import FedCMTSPolicy, FedCMUCBPolicy, make_policy
from fedenv.config import EnvConfig


def test_ucb_update_and_index_by_hand():
    policy = FedCMUCBPolicy(select_fraction=0.5)
    policy.reset(0)
    policy.arms["client_0"] = [0.0, 1.0]
    policy.update("client_0", 1.0)
    assert policy.arms["client_0"] == [0.5, 2.0]
    policy.round = 3
    assert policy.index("client_0") == pytest.approx(0.5 + math.sqrt(2 * math.log(3) / 2))


def test_thompson_sampling_update_by_hand():
    policy = FedCMTSPolicy()
    policy.reset(0)
    policy.arm("client_1")
    policy.update("client_1", 1.0)
    policy.update("client_1", 0.0)
    policy.update("client_1", 1.0)
    assert policy.arms["client_1"] == [3.0, 2.0]
    draws = [policy.index("client_1") for _ in range(4000)]
    assert np.mean(draws) == pytest.approx(3 / 5, abs=0.02)  # Beta(3, 2) mean


def observation(candidate: bool) -> dict:
    return {"observation": np.zeros(3, dtype=np.float32), "action_mask": np.array([1, int(candidate)], dtype=np.int8)}


def test_ucb_selects_the_highest_indices_and_rewards_the_kept_uploads():
    policy = FedCMUCBPolicy(select_fraction=0.5)
    policy.reset(0)
    policy.round = 1  # act() makes it round 2: index mu + sqrt(2 ln 2 / a)
    policy.arms = {"a": [0.0, 1.0], "b": [1.0, 1.0], "c": [0.5, 4.0], "d": [0.9, 1.0]}
    observations = {agent: observation(agent != "d") for agent in "abcd"}  # d is not a candidate
    # indices: a 1.177, b 2.177, c 0.5 + 0.589 = 1.089; m = round(0.5 * 3) = 2 -> b and a
    assert policy.act(observations, {}) == {"b": 1, "a": 1}
    policy.observe({"a": {"selected": True, "kept": False}, "b": {"selected": True, "kept": True},
                    "c": {"selected": False, "kept": False}, "d": {"selected": False, "kept": False}})
    assert policy.arms["a"] == [0.0, 2.0] and policy.arms["b"] == [1.0, 2.0] and policy.arms["c"] == [0.5, 4.0]


@pytest.mark.parametrize("policy", [FedCMUCBPolicy, FedCMTSPolicy])
def test_a_select_fraction_outside_zero_one_is_refused(policy):
    with pytest.raises(ValueError, match=r"select_fraction=1.5 must be in \(0, 1\]"):
        policy(select_fraction=1.5)


def tied_ucb(seed: int) -> tuple[FedCMUCBPolicy, dict]:
    """A UCB policy at round 1 (index mu + sqrt(2 ln 1 / a) = mu) whose ten arms are all equal."""
    policy = FedCMUCBPolicy(select_fraction=0.3)
    policy.reset(seed)
    policy.arms = {f"client_{i}": [0.5, 1.0] for i in range(10)}
    return policy, {f"client_{i}": observation(True) for i in range(10)}


def picked(policy, observations) -> frozenset:
    return frozenset(policy.act(observations, {}))


def test_equal_indices_are_broken_at_random_from_the_episode_seed():
    picks = {seed: picked(*tied_ucb(seed)) for seed in range(60)}
    assert all(len(p) == 3 for p in picks.values())  # m = round(0.3 * 10)
    assert len(set(picks.values())) > 1  # different seeds, different sets
    assert all(picked(*tied_ucb(seed)) == picks[seed] for seed in (0, 1, 2))  # same seed, same set
    assert set().union(*picks.values()) == {f"client_{i}" for i in range(10)}  # nobody is left out by its id


def test_thompson_sampling_ties_are_broken_at_random_too():
    picks = set()
    for seed in range(40):
        policy = FedCMTSPolicy(select_fraction=0.3)
        policy.reset(seed)
        policy.index = lambda agent: 0.5  # every posterior draw equal
        picks.add(picked(policy, {f"client_{i}": observation(True) for i in range(10)}))
    assert len(picks) > 1 and set().union(*picks) == {f"client_{i}" for i in range(10)}


def test_fedcm_chooses_from_every_online_client_without_probing_and_warns_when_restricted():
    from fedenv.evaluation import policy_config

    base = EnvConfig(num_clients=6, clients_per_round=3, num_rounds=2, device="cpu")
    for name in ("fedcm-ucb", "fedcm-ts"):
        assert policy_config(base, make_policy(name), probing=False).clients_per_round == 6
        with pytest.warns(UserWarning, match="chooses among the env's 3 random candidates of 6 clients"):
            assert policy_config(base, make_policy(name), probing=True).clients_per_round == 3
    assert policy_config(base, make_policy("fedavg"), probing=False).clients_per_round == 3  # FedAvg samples


def test_without_probing_fedcm_uploads_select_fraction_of_clients_per_round_however_large_its_pool(write_trace):
    from fedenv.evaluation import evaluate_policies
    from fedenv.registry import POLICIES

    trace = write_trace([{"client": i, "device": "d", "train_ms_per_sample": 1.0, "upload_kbps": [1000.0],
                          "download_kbps": [1000.0]} for i in range(8)])  # always online
    base = EnvConfig(num_clients=8, clients_per_round=4, num_rounds=2, device="cpu", train_samples=1600,
                     test_samples=100, trace=trace)
    widened = [name for name in POLICIES if make_policy(name).selects_from_all_online]
    assert widened
    policies = [make_policy(name, select_fraction=0.5) for name in widened]
    records = evaluate_policies(base, policies, [0], progress=False, probing=False)
    for name in widened:
        (record,) = records[name]
        assert record.num_selected == [2, 2]  # round(0.5 * 4) of the 8 online clients it ranks, not 0.5 * 8
        size_mb = 32 * (784 * 200 + 200 + 200 * 10 + 10) / 8 / 1e6  # the default MLP on 28x28 inputs, float32
        assert record.upload_mb == pytest.approx([2 * size_mb] * 2)
