"""Guided exploration (VDNConfig.exploration_uploads): an exploring candidate uploads with the probability
of the open-loop schedule 'k random, all last L', worked by hand, in local training and in the rollouts Ray
actors play; the default stays a fair coin; bad values are refused."""

import dataclasses

import numpy as np
import pytest

from agents.config import VDNConfig
from agents.rollout import exploration_upload_probability, play_rollouts
from agents.trainer import Trainer
from agents.vdn import VDNLearner
from fedenv.vector import VectorClientSelectionEnv
from tests.helpers import tiny_config

ENV = tiny_config(num_rounds=4)
ALWAYS_EXPLORE = VDNConfig(exploration_initial_eps=1.0, exploration_final_eps=1.0, learning_starts=10_000,
                           hidden=(8,))


@dataclasses.dataclass
class Round:  # what exploration_upload_probability reads of a RunningEpisode
    rounds: int
    mask: np.ndarray
    env: object


def test_the_upload_probability_is_the_schedules_worked_by_hand():
    env = type("Env", (), {"config": tiny_config(num_rounds=10)})()
    four_of_five = np.array([[1, 1]] * 4 + [[1, 0]], dtype=np.float32)  # 4 candidates of 5 clients
    guided = VDNConfig(exploration_uploads=(1, 3))
    assert exploration_upload_probability(Round(0, four_of_five, env), VDNConfig()) == 0.5  # the default coin
    assert exploration_upload_probability(Round(0, four_of_five, env), guided) == 0.25  # 1 of 4 candidates
    assert exploration_upload_probability(Round(6, four_of_five, env), guided) == 0.25  # round 7 of 10
    assert exploration_upload_probability(Round(7, four_of_five, env), guided) == 1.0  # rounds 8-10: all
    assert exploration_upload_probability(Round(9, four_of_five, env), guided) == 1.0
    assert exploration_upload_probability(Round(0, four_of_five, env), VDNConfig(exploration_uploads=(6, 0))) == 1.0
    none = np.array([[1, 0]] * 5, dtype=np.float32)
    assert exploration_upload_probability(Round(0, none, env), guided) == 0.0


def test_exploring_agents_upload_with_the_given_probability():
    learner = VDNLearner(3, VDNConfig(hidden=(8,)), seed=0)
    obs, mask = np.zeros((20_000, 3), np.float32), np.ones((20_000, 2), np.float32)
    assert learner.act(obs, mask, 1.0, upload_probability=0.1).mean() == pytest.approx(0.1, abs=0.01)
    assert learner.act(obs, mask, 1.0, upload_probability=1.0).all()
    assert not learner.act(obs, mask, 1.0, upload_probability=0.0).any()


@pytest.mark.parametrize("uploads, participation", [((0, 1), 0.25), ((0, 0), 0.0), ((5, 0), 1.0), ((0, 2), 0.5)])
def test_local_training_explores_by_the_schedule(uploads, participation):
    # every candidate is drawn each round (tiny_config) and always explores: with k = 0 no one uploads before
    # the last L of the 4 rounds and everyone in them; with k >= candidates everyone always uploads
    trainer = Trainer(ENV, dataclasses.replace(ALWAYS_EXPLORE, exploration_uploads=uploads), episodes=2, seed=0)
    try:
        summaries = trainer.play_episodes() + trainer.play_episodes()
    finally:
        trainer.close()
    assert [s.participation_rate for s in summaries] == [participation] * 2


def test_ray_actors_rollouts_explore_by_the_schedule():
    vector = VectorClientSelectionEnv(ENV, 1)
    actor = VDNLearner(len(vector.envs[0].feature_names),
                       dataclasses.replace(ALWAYS_EXPLORE, exploration_uploads=(0, 1)), "cpu", seed=0)
    [rollout] = play_rollouts(vector.envs, actor, [0], schedule_episodes=2, seed=0)
    assert rollout.summary.participation_rate == 0.25


def test_bad_exploration_uploads_are_refused_naming_the_value():
    for bad in ((1,), (1, 2, 3), (-1, 2)):
        with pytest.raises(ValueError, match=r"exploration_uploads=.*K L >= 0"):
            VDNConfig(exploration_uploads=bad).validate()


def test_more_late_rounds_than_the_episode_has_are_refused():
    with pytest.raises(ValueError, match=r"exploration_uploads=\(1, 5\): L .* at most num_rounds=4"):
        Trainer(ENV, VDNConfig(exploration_uploads=(1, 5)), episodes=1, seed=0)


def test_the_option_reads_back_from_its_json():
    config = VDNConfig(exploration_uploads=(1, 3))
    assert config.to_dict()["exploration_uploads"] == [1, 3]
    assert VDNConfig.from_dict(config.to_dict()) == config
