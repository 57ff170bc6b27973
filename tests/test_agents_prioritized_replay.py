"""Proportional prioritised replay (agents/replay.py, Schaul et al. 2016): probabilities, importance
weights, priorities from TD errors, checkpoints, and the trainer's use of it (off by default)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.config import VDNConfig
from agents.nstep import Transition
from agents.replay import PrioritizedReplayBuffer, ReplayBuffer
from agents.trainer import Trainer
from agents.vdn import VDNLearner
from tests.helpers import tiny_config


def transition(value: float) -> Transition:
    obs = np.full((2, 3), value, dtype=np.float32)
    return Transition(obs=obs, mask=np.ones((2, 2), np.float32), actions=np.array([1, 0]), reward=value,
                      next_obs=obs, next_mask=np.ones((2, 2), np.float32), discount=1.0, terminated=False)


def filled(alpha=1.0, beta=1.0) -> PrioritizedReplayBuffer:
    buffer = PrioritizedReplayBuffer(8, 2, 3, alpha=alpha, beta=beta, eps=1e-9)
    for value in (0.0, 1.0, 2.0):
        buffer.add(transition(value))
    buffer.update_priorities(np.array([0, 1, 2]), np.array([1.0, -2.0, 3.0]))  # |delta| -> 1, 2, 3
    return buffer


def test_sampling_probabilities_and_weights_by_hand():
    buffer = filled()
    batch = buffer.sample(60_000, np.random.default_rng(0), torch.device("cpu"))
    # alpha = 1: P = 1/6, 2/6, 3/6; the reward identifies the slot
    frequency = np.bincount(batch.reward.numpy().astype(int), minlength=3) / 60_000
    np.testing.assert_allclose(frequency, [1 / 6, 2 / 6, 3 / 6], atol=0.01)
    # beta = 1: w_i = (N P_i)^-1 / (N P_min)^-1 = P_min / P_i = 1, 1/2, 1/3
    expected = np.array([1.0, 0.5, 1 / 3])[batch.index]
    np.testing.assert_allclose(batch.weight.numpy(), expected, rtol=1e-6)
    assert np.array_equal(batch.index, batch.reward.numpy().astype(int))


def test_alpha_zero_is_uniform_with_unit_weights():
    batch = filled(alpha=0.0).sample(30_000, np.random.default_rng(1), torch.device("cpu"))
    np.testing.assert_allclose(np.bincount(batch.index, minlength=3) / 30_000, [1 / 3] * 3, atol=0.01)
    np.testing.assert_allclose(batch.weight.numpy(), 1.0)


def test_a_new_transition_enters_with_the_largest_priority_so_far():
    buffer = filled()
    buffer.update_priorities(np.array([2]), np.array([0.5]))
    buffer.add(transition(3.0))
    np.testing.assert_allclose(buffer.priority[:4], [1.0, 2.0, 0.5, 3.0])


def test_priorities_round_trip_through_the_state():
    buffer = filled()
    copy = PrioritizedReplayBuffer(8, 2, 3, alpha=1.0, beta=1.0, eps=1e-9)
    copy.load_state_dict(buffer.state_dict())
    np.testing.assert_array_equal(copy.priority, buffer.priority)
    assert copy.max_priority == buffer.max_priority == pytest.approx(3.0)


def test_unit_weights_give_the_plain_loss_and_the_errors_are_kept():
    batch = filled(beta=0.0).sample(4, np.random.default_rng(2), torch.device("cpu"))
    assert torch.all(batch.weight == 1.0)
    weighted, plain = VDNLearner(3, VDNConfig(hidden=(8,)), seed=3), VDNLearner(3, VDNConfig(hidden=(8,)), seed=3)
    expected_errors = (weighted.q_tot(batch) - weighted.td_target(batch)).detach().numpy()
    loss = weighted.update(batch)
    batch.weight = None
    assert loss == pytest.approx(plain.update(batch), rel=1e-6)
    np.testing.assert_allclose(weighted.last_td_errors, expected_errors, rtol=1e-6)


def test_the_trainer_uses_the_buffer_its_config_asks_for():
    assert type(Trainer(tiny_config(), VDNConfig(), episodes=1).buffer) is ReplayBuffer
    config = VDNConfig(prioritized_replay=True, learning_starts=1, batch_size=4, hidden=(8,))
    trainer = Trainer(tiny_config(), config, episodes=1)
    assert isinstance(trainer.buffer, PrioritizedReplayBuffer)
    trainer.play_episodes()
    assert trainer.learner.gradient_steps > 0
    assert not np.all(trainer.buffer.priority[: len(trainer.buffer)] == 1.0)  # replayed: |delta| + eps


@pytest.mark.parametrize("field,value", [("prioritized_replay_alpha", 1.5), ("prioritized_replay_beta", -0.1),
                                         ("prioritized_replay_eps", 0.0)])
def test_bad_prioritized_replay_settings_are_refused(field, value):
    with pytest.raises(ValueError, match=f"vdn {field}={value!r}"):
        VDNConfig(**{field: value}).validate()
