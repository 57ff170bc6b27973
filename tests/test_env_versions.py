"""The PettingZoo ids: ``fedenv/ClientSelection-v1`` is the current environment; release 0.1.0's ``-v0`` still
builds, with a warning naming v1 and the options it applies, and replays an episode recorded under 0.1.0."""

from __future__ import annotations

import numpy as np
import pettingzoo
import pytest

import fedenv
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.registration import ENV_ID, V0_ID, V0_OPTIONS, OutdatedEnvWarning

SMALL = {"num_clients": 5, "clients_per_round": 4, "num_rounds": 3, "device": "cpu", "test_samples": 300}


def test_the_current_id_is_v1_builds_the_default_environment_and_is_what_an_unversioned_id_finds(recwarn):
    assert fedenv.ENV_ID == ENV_ID == "fedenv/ClientSelection-v1"
    for env_id in (ENV_ID, "fedenv/ClientSelection"):
        env = pettingzoo.make("parallel", env_id, **SMALL)
        assert isinstance(env, ClientSelectionEnv)
        assert env.config == EnvConfig(**SMALL).validate()
        assert env.config.reward_accuracy_split == "validation"
        assert env.metadata["name"] == "fedenv_client_selection_v1"
    assert not [w for w in recwarn if issubclass(w.category, OutdatedEnvWarning)]


def test_v0_warns_naming_v1_and_every_option_it_applies_and_a_given_field_wins():
    with pytest.warns(OutdatedEnvWarning, match="fedenv/ClientSelection-v1") as caught:
        env = pettingzoo.make("parallel", V0_ID, **SMALL, comm_weight=0.0)
    message = str(caught[0].message)
    for name, value in V0_OPTIONS.items():
        assert f"{name}={value!r}" in message
    assert "test split" in message
    expected = EnvConfig(**SMALL, reward_accuracy_split="test", val_fraction=0.1, latency_weight=3.68e-4,
                         comm_weight=0.0, engine="unfused").validate()
    assert env.config == expected
    assert env.metadata["name"] == "fedenv_client_selection_v0"


# Recorded under 0.1.0's environment at commit e7e39ce (the fedavg case of tests/fixtures/pinned_episodes.json
# before the reward moved to the validation split): seed 7, every candidate uploads every round.
V0_TEST_ACCURACY = [0.09333333333333334, 0.44333333333333336, 0.6033333333333334, 0.6733333333333333]
V0_WALL_CLOCK_S = [0.0, 6.436273306166707, 8.328249703521463, 16.83450261115589]
V0_REWARD = [0.07150006700453566, 0.09108680759683828, 0.05976622718702169]
V0_UPLOAD_MB = [2.54416, 2.54416, 2.54416]


def test_v0_replays_an_episode_recorded_under_release_0_1_0():
    with pytest.warns(OutdatedEnvWarning):
        env = pettingzoo.make("parallel", V0_ID, **SMALL, aggregation="fedavg")
    observations, infos = env.reset(seed=7)
    accuracy, wall_clock_s, rewards, upload_mb = [infos["client_0"]["test_accuracy"]], [0.0], [], []
    while env.agents:
        observations, reward, _, _, infos = env.step({a: int(o["action_mask"][1]) for a, o in observations.items()})
        accuracy.append(infos["client_0"]["test_accuracy"])
        wall_clock_s.append(infos["client_0"]["wall_clock_s"])
        rewards.append(reward["client_0"])
        upload_mb.append(infos["client_0"]["upload_mb"])
    for ours, recorded in ((accuracy, V0_TEST_ACCURACY), (wall_clock_s, V0_WALL_CLOCK_S), (rewards, V0_REWARD),
                           (upload_mb, V0_UPLOAD_MB)):
        np.testing.assert_allclose(ours, recorded, rtol=1e-6, atol=1e-9)
    # the current environment plays another episode from the same seed and actions: the version is bumped
    current = pettingzoo.make("parallel", ENV_ID, **SMALL, aggregation="fedavg")
    observations, _ = current.reset(seed=7)
    _, reward, _, _, _ = current.step({a: int(o["action_mask"][1]) for a, o in observations.items()})
    assert reward["client_0"] != pytest.approx(V0_REWARD[0], rel=1e-3)
