"""Random selection: seeded per episode, each candidate with probability p."""

import numpy as np
import pytest

from fedenv.baselines import RandomPolicy


def test_each_candidate_uploads_with_probability_p_and_a_seed_replays_the_draws():
    observations = {f"client_{i}": {"action_mask": np.array([1, int(i % 4 != 0)])} for i in range(400)}
    policy = RandomPolicy(p=0.25)
    policy.reset(3)
    first = policy.act(observations, {})
    assert set(first) == {a for a, o in observations.items() if o["action_mask"][1]}  # only the 300 candidates
    assert np.mean(list(first.values())) == pytest.approx(0.25, abs=0.07)  # 300 draws: 3 standard deviations
    policy.reset(3)
    assert policy.act(observations, {}) == first


def test_a_probability_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match=r"probability must be in \[0, 1\], got 1.5"):
        RandomPolicy(p=1.5)
