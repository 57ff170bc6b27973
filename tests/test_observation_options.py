"""The observation options (fedenv/observation.py): candidate context, K/T-normalised features and the server's
estimates, values worked by hand for a small constructed round, the env's estimates against the baselines' own
expected round times; all off by default."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedenv.baselines.base import expected_duration_s
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.rollout import profile_duration_s
from fedenv.latency import expected_round_s
from fedenv.observation import (
    CONTEXT_FEATURES,
    ESTIMATE_FEATURES,
    build_observations,
    feature_bounds,
    feature_names,
    layout_options,
)
from tests.helpers import tiny_config

H = 2
ROUND = dict(
    probing_loss=np.array([2.0, 1.0, 9.0, 1.0]),
    probe_latency_hist_s=np.array([[10.0, 1.0], [30.0, 1.0], [5.0, 1.0], [20.0, 1.0]]),
    upload_latency_hist_s=np.zeros((4, H)),
    model_size_mb=1.0,
    data_size=np.array([100, 300, 200, 200]),
    rounds_since_upload=np.array([0, 50, 150, 100]),
    round_index=30,
    num_rounds=60,
    is_candidate=np.array([True, True, False, True]),
    global_accuracy=0.5,
    num_classes=10,
    reference_latency_s=10.0,
)


def column(obs: np.ndarray, names: list[str], name: str) -> np.ndarray:
    return obs[:, names.index(name)]


def test_context_columns_by_hand():
    obs = build_observations(**ROUND, context=True)
    names = feature_names(H, context=True)
    assert obs.shape == (4, len(names)) == (4, 2 * H + 11)
    # losses of the candidates 0, 1, 3: 2, 1, 1 -> average ranks 3, 1.5, 1.5 of 3 -> (rank - 1) / 2
    np.testing.assert_allclose(column(obs, names, "probing_loss_quantile"), [1.0, 0.25, 0.0, 0.25])
    # newest probing latencies 10, 30, 20 -> ranks 1, 3, 2
    np.testing.assert_allclose(column(obs, names, "probe_latency_quantile"), [0.0, 1.0, 0.0, 0.5])
    # the slowest candidate's probe (30 s; client 2's 5 s is no candidate) over 10 s, for every client
    np.testing.assert_allclose(column(obs, names, "slowest_probe_latency"), [3.0] * 4)
    np.testing.assert_allclose(column(obs, names, "num_candidates_log"), [math.log10(4) / 3] * 4, rtol=1e-6)
    # the default columns are untouched
    np.testing.assert_array_equal(obs[:, :2 * H + 7], build_observations(**ROUND))


def test_a_single_candidate_sits_at_the_median():
    obs = build_observations(**{**ROUND, "is_candidate": np.array([False, True, False, False])}, context=True)
    names = feature_names(H, context=True)
    np.testing.assert_allclose(column(obs, names, "probing_loss_quantile"), [0.0, 0.5, 0.0, 0.0])
    np.testing.assert_allclose(column(obs, names, "slowest_probe_latency"), [3.0] * 4)


def test_normalised_columns_by_hand():
    names = feature_names(H, normalised=True)
    obs = build_observations(**ROUND, normalised=True)
    # sizes 100, 300, 200, 200 -> average ranks 1, 4, 2.5, 2.5 of 4 -> (rank - 1) / 3
    np.testing.assert_allclose(column(obs, names, "data_size_quantile"), [0.0, 1.0, 0.5, 0.5])
    np.testing.assert_allclose(column(obs, names, "rounds_since_last_upload_h100"), [0.0, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(column(obs, names, "round_index_h100"), [0.3] * 4)
    # the same round of a federation twice as long, with every client twice as large, reads the same
    longer = build_observations(**{**ROUND, "num_rounds": 120, "data_size": 2 * ROUND["data_size"]},
                                normalised=True)
    np.testing.assert_array_equal(obs, longer)
    plain = build_observations(**ROUND)
    default = feature_names(H)
    np.testing.assert_allclose(column(plain, default, "rounds_since_last_upload"), [0, 50 / 60, 1.0, 1.0],
                               rtol=1e-6)


def test_estimate_columns_by_hand():
    expected = np.array([40.0, 10.0, 5.0, 20.0])
    obs = build_observations(**ROUND, expected_round_s=expected)
    names = feature_names(H, estimates=True)
    assert obs.shape == (4, len(names)) == (4, 2 * H + 10)
    np.testing.assert_allclose(column(obs, names, "expected_round_latency"), [4.0, 1.0, 0.5, 2.0])
    # candidates 0, 1, 3 take 40, 10, 20 s -> ranks 3, 1, 2; client 2 is no candidate
    np.testing.assert_allclose(column(obs, names, "expected_round_quantile"), [1.0, 0.0, 0.0, 0.5])
    # rounds since the last upload of the candidates: 0, 50, 100 -> ranks 1, 2, 3
    np.testing.assert_allclose(column(obs, names, "rounds_since_last_upload_quantile"), [0.0, 0.5, 0.0, 1.0])
    np.testing.assert_array_equal(obs[:, :2 * H + 7], build_observations(**ROUND))
    both = build_observations(**ROUND, context=True, expected_round_s=expected)
    assert feature_names(H, context=True, estimates=True)[-3:] == list(ESTIMATE_FEATURES)
    np.testing.assert_array_equal(both[:, -3:], obs[:, -3:])


def test_the_expected_round_time_is_the_reports_then_the_profile_by_hand():
    # reported 2 s probe + 3 s upload; 2 s probe, no upload yet (the probe counts twice); nothing: the profile
    np.testing.assert_allclose(expected_round_s(np.array([2.0, 2.0, 0.0]), np.array([3.0, 0.0, 0.0]),
                                                np.array([9.0, 9.0, 7.0])), [5.0, 4.0, 7.0])


def test_the_envs_estimates_are_the_times_the_fixed_policies_rank_by():
    env = ClientSelectionEnv(tiny_config(num_clients=5, clients_per_round=3, num_rounds=4, probing=False,
                                         observation_estimates=True))
    observations, infos = env.reset(seed=2)
    column_index = env.feature_names.index("expected_round_latency")
    reported = []
    for played in ([1, 0, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 0, 0]):
        reported.append(sum(info["probe_latency_s"] > 0 for info in infos.values()))
        profile = profile_duration_s(env)
        for agent in env.possible_agents:
            reference = expected_duration_s(agent, infos[agent], profile) / env.simulator.reference_latency_s
            assert observations[agent]["observation"][column_index] == pytest.approx(reference, rel=1e-5)
        observations, _, _, _, infos = env.step(dict(zip(env.possible_agents, played)))
    assert reported[0] == 0 and 0 < reported[-1] < 5  # the profile estimates, then reports beside them


@pytest.mark.parametrize("context", [False, True])
@pytest.mark.parametrize("normalised", [False, True])
@pytest.mark.parametrize("estimates", [False, True])
def test_the_env_observes_the_chosen_layout_inside_its_box(context, normalised, estimates):
    env = ClientSelectionEnv(tiny_config(observation_context=context, observation_normalised=normalised,
                                         observation_estimates=estimates))
    assert env.feature_names == feature_names(**layout_options(env.config))
    assert env.feature_names == feature_names(env.config.history_length, context, normalised, estimates)
    low, high = feature_bounds(env.config.history_length, context, normalised, estimates)
    observations, _ = env.reset(seed=3)
    space = env.observation_space("client_0")["observation"]
    np.testing.assert_array_equal(space.high, high)
    for value in observations.values():
        assert value["observation"].shape == low.shape
        assert space.contains(value["observation"])
    assert set(CONTEXT_FEATURES) <= set(env.feature_names) if context else not set(CONTEXT_FEATURES) & set(
        env.feature_names)
