"""FedCM's bandits (Kim et al., arXiv 2012.03270, Algorithms 2-3): updates and indices worked by hand."""

import math

import numpy as np
import pytest

from fedenv.baselines import FedCMTS, FedCMUCB


def test_ucb_update_and_index_by_hand():
    policy = FedCMUCB(select_fraction=0.5)
    policy.reset(0)
    policy.arms["client_0"] = [0.0, 1.0]
    policy.update("client_0", 1.0)
    assert policy.arms["client_0"] == [0.5, 2.0]
    policy.round = 3
    assert policy.index("client_0") == pytest.approx(0.5 + math.sqrt(2 * math.log(3) / 2))


def test_thompson_sampling_update_by_hand():
    policy = FedCMTS()
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
    policy = FedCMUCB(select_fraction=0.5)
    policy.reset(0)
    policy.round = 1  # act() makes it round 2: index mu + sqrt(2 ln 2 / a)
    policy.arms = {"a": [0.0, 1.0], "b": [1.0, 1.0], "c": [0.5, 4.0], "d": [0.9, 1.0]}
    observations = {agent: observation(agent != "d") for agent in "abcd"}  # d is not a candidate
    # indices: a 1.177, b 2.177, c 0.5 + 0.589 = 1.089; m = round(0.5 * 3) = 2 -> b and a
    assert policy.act(observations, {}) == {"b": 1, "a": 1}
    policy.observe({"a": {"selected": True, "kept": False}, "b": {"selected": True, "kept": True},
                    "c": {"selected": False, "kept": False}, "d": {"selected": False, "kept": False}})
    assert policy.arms["a"] == [0.0, 2.0] and policy.arms["b"] == [1.0, 2.0] and policy.arms["c"] == [0.5, 4.0]


@pytest.mark.parametrize("policy", [FedCMUCB, FedCMTS])
def test_a_select_fraction_outside_zero_one_is_refused(policy):
    with pytest.raises(ValueError, match=r"select_fraction=1.5 must be in \(0, 1\]"):
        policy(select_fraction=1.5)
