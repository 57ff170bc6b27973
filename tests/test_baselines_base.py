"""The helpers every baseline shares, worked by hand."""

import numpy as np
import pytest

from fedenv.baselines import Policy, candidates, check_select_fraction, predicted_duration_s, select_count


def test_candidates_are_the_agents_whose_mask_allows_uploading():
    observations = {"a": {"action_mask": np.array([1, 1])}, "b": {"action_mask": np.array([1, 0])},
                    "c": {"action_mask": np.array([1, 1])}}
    assert candidates(observations) == ["a", "c"]


@pytest.mark.parametrize("num_candidates, fraction, expected", [(0, 0.6, 0), (1, 0.1, 1), (5, 0.6, 3), (10, 0.25, 2),
                                                                (10, 1.0, 10)])
def test_select_count_rounds_the_fraction_and_keeps_at_least_one(num_candidates, fraction, expected):
    assert select_count(num_candidates, fraction) == expected


def test_predicted_duration_is_probe_plus_upload_and_probe_twice_before_the_first_upload():
    assert predicted_duration_s({"probe_latency_s": 2.0, "upload_latency_s": 5.0}) == 7.0
    assert predicted_duration_s({"probe_latency_s": 2.0, "upload_latency_s": 0.0}) == 4.0


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.01])
def test_select_fraction_outside_zero_one_is_refused(fraction):
    with pytest.raises(ValueError, match=rf"select_fraction={fraction} must be in \(0, 1\]"):
        check_select_fraction(fraction)
    assert check_select_fraction(1.0) == 1.0


def test_a_policy_without_act_cannot_be_built():
    class NoAct(Policy):
        name = "no-act"

    with pytest.raises(TypeError, match="act"):
        NoAct()
