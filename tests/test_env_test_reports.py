"""report_test_accuracy: the test split scored once per episode changes nothing but the infos' test accuracy
before the last step."""

import math

import numpy as np
import pytest

from fedenv.env import TEST_ACCURACY_REPORTS, ClientSelectionEnv
from tests.helpers import tiny_config


def play(env: ClientSelectionEnv, seed: int) -> list[tuple]:
    """(rewards, infos) of reset and every step of one episode, every candidate selected."""
    observations, infos = env.reset(seed=seed)
    steps = [({}, infos, observations)]
    while env.agents:
        observations, rewards, _, _, infos = env.step({a: 1 for a in env.agents})
        steps.append((rewards, infos, observations))
    return steps


def test_episode_end_reports_nan_before_the_last_step_and_the_every_round_value_on_it():
    config = tiny_config(num_rounds=3)
    every = play(ClientSelectionEnv(config), 7)
    once = play(ClientSelectionEnv(config, report_test_accuracy="episode_end"), 7)
    assert len(every) == len(once) == 4
    for (r_every, i_every, o_every), (r_once, i_once, o_once) in zip(every, once):
        assert r_every == r_once
        for agent in i_every:
            np.testing.assert_array_equal(o_every[agent]["observation"], o_once[agent]["observation"])
            rest = {k: v for k, v in i_every[agent].items() if k != "test_accuracy"}
            assert rest == {k: v for k, v in i_once[agent].items() if k != "test_accuracy"}
    for _, infos, _ in once[:-1]:
        assert all(math.isnan(info["test_accuracy"]) for info in infos.values())
    last_every, last_once = every[-1][1], once[-1][1]
    assert all(last_once[a]["test_accuracy"] == last_every[a]["test_accuracy"] for a in last_every)
    assert 0.0 <= last_once["client_0"]["test_accuracy"] <= 1.0


def test_episode_end_scores_the_test_split_once_per_episode(monkeypatch):
    config = tiny_config(num_rounds=3)
    env = ClientSelectionEnv(config, report_test_accuracy="episode_end")
    env.reset(seed=1)
    federation = type(env.simulator.federation)
    splits, original = [], federation.evaluate

    def counting(self, split="test", chunk=4096):
        splits.append(split)
        return original(self, split, chunk)

    monkeypatch.setattr(federation, "evaluate", counting)
    play(env, 2)
    assert splits.count("test") == 1 and splits.count("validation") == 4  # reset + 3 rounds


def test_a_test_split_reward_scores_it_every_round_whatever_the_reports():
    config = tiny_config(num_rounds=2, reward_accuracy_split="test")
    every = play(ClientSelectionEnv(config), 3)
    once = play(ClientSelectionEnv(config, report_test_accuracy="episode_end"), 3)
    assert [r for r, _, _ in every] == [r for r, _, _ in once]


def test_an_unknown_report_setting_is_refused_naming_the_allowed_ones():
    with pytest.raises(ValueError, match="report_test_accuracy='sometimes' is not known; allowed: "
                                         + ", ".join(TEST_ACCURACY_REPORTS)):
        ClientSelectionEnv(tiny_config(), report_test_accuracy="sometimes")
