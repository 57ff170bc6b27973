"""benchmarks/reward_noise.py: the step standard deviation and the sampling-noise split, by hand."""

import math

import pytest

from benchmarks import reward_noise


def test_step_std_by_hand():
    # steps 0.4, 0.1, -0.1, 0.2: all of them have mean 0.15 and std sqrt(0.0325); the last two 0.05 and 0.15
    accuracy = [0.1, 0.5, 0.6, 0.5, 0.7]
    assert reward_noise.step_std(accuracy) == pytest.approx(math.sqrt(0.0325))
    assert reward_noise.step_std(accuracy, settle=2) == pytest.approx(0.15)
    with pytest.raises(ValueError, match=r"settle=4 must be in \[0, 4\)"):
        reward_noise.step_std(accuracy, settle=4)


def test_sampling_std_splits_the_gap_variance_by_split_size():
    # validation steps 0.1, 0.3, 0.1; test steps 0.1, 0.1, 0.1: gaps 0, 0.2, 0 have variance 0.08 / 9;
    # with 100 validation and 300 test samples c = (0.08 / 9) / (1/100 + 1/300) = 2/3
    noise = reward_noise.sampling_std([0.0, 0.1, 0.4, 0.5], [0.0, 0.1, 0.2, 0.3], 100, 300)
    assert noise["validation"] == pytest.approx(math.sqrt(2 / 3 / 100))
    assert noise["test"] == pytest.approx(math.sqrt(2 / 3 / 300))
