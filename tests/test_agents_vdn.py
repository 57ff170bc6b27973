import dataclasses

import numpy as np
import pytest
import torch

from agents.config import VDNConfig
from agents.nstep import NStepWindow
from agents.replay import ReplayBuffer
from agents.vdn import VDNLearner, demonstration_weight, linear_epsilon

K, D = 3, 4


def step_arrays(rng, candidates=(1, 1, 0)):
    obs = rng.random((K, D), dtype=np.float32)
    mask = np.array([[1, c] for c in candidates], dtype=np.float32)
    return obs, mask


def one_transition_batch(terminated, truncated, reward=0.0, gamma=0.9):
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(10, K, D)
    obs, mask = step_arrays(rng)
    next_obs, next_mask = step_arrays(rng, candidates=(1, 0, 1))
    for transition in NStepWindow(1, gamma).push(obs, mask, np.array([1, 0, 0]), reward, next_obs, next_mask,
                                                 terminated, truncated):
        buffer.add(transition)
    return buffer.sample(1, np.random.default_rng(0), torch.device("cpu")), next_obs, next_mask


def test_c8_truncation_bootstraps_and_termination_does_not():
    learner = VDNLearner(D, VDNConfig(reward_scale=1.0), seed=0)
    batch, next_obs, next_mask = one_transition_batch(terminated=False, truncated=True)
    q_next = learner.target(torch.as_tensor(next_obs), torch.as_tensor(next_mask[:, 1])).detach().numpy()
    expected = 0.9 * sum(q_next[n].max() for n in range(K) if next_mask[n, 1])
    assert learner.td_target(batch).item() == pytest.approx(expected, rel=1e-6)
    assert expected != 0.0
    batch, _, _ = one_transition_batch(terminated=True, truncated=False)
    assert learner.td_target(batch).item() == 0.0
    batch, _, _ = one_transition_batch(terminated=True, truncated=False, reward=0.25)
    assert learner.td_target(batch).item() == 0.25


def test_double_q_takes_the_online_argmax_and_ignores_masked_actions():
    learner = VDNLearner(D, VDNConfig(reward_scale=1.0), seed=0)
    with torch.no_grad():
        for p in learner.target.parameters():
            p.add_(torch.randn_like(p))  # target differs from online
    batch, next_obs, next_mask = one_transition_batch(terminated=False, truncated=True)
    candidate = torch.as_tensor(next_mask[:, 1])
    online = learner.q(torch.as_tensor(next_obs), candidate).detach().numpy()
    target = learner.target(torch.as_tensor(next_obs), candidate).detach().numpy()
    expected = 0.9 * sum(target[n, online[n].argmax()] for n in range(K) if next_mask[n, 1])
    assert learner.td_target(batch).item() == pytest.approx(expected, rel=1e-6)


def test_epsilon_anneals_linearly_then_stays():
    config = VDNConfig(exploration_initial_eps=1.0, exploration_final_eps=0.1, exploration_fraction=0.5)
    assert linear_epsilon(0, 100, config) == 1.0
    assert linear_epsilon(25, 100, config) == pytest.approx(0.55)
    assert linear_epsilon(50, 100, config) == pytest.approx(0.1) == linear_epsilon(90, 100, config)


def test_the_margin_weight_stays_without_a_final_weight_and_anneals_with_epsilon_to_it():
    constant = VDNConfig(demonstrator="fastest", demonstration_weight=10.0, exploration_fraction=0.5)
    assert [demonstration_weight(s, 100, constant) for s in (0, 25, 50, 90)] == [10.0] * 4
    fading = dataclasses.replace(constant, demonstration_final_weight=2.0)
    # linear from 10 to 2 over the first 50 of 100 steps (epsilon's horizon), then 2
    assert demonstration_weight(0, 100, fading) == 10.0
    assert demonstration_weight(25, 100, fading) == pytest.approx(6.0)
    assert demonstration_weight(50, 100, fading) == pytest.approx(2.0) == demonstration_weight(90, 100, fading)


def test_epsilon_greedy_never_takes_masked_actions():
    learner = VDNLearner(D, VDNConfig(), seed=0)
    obs, mask = step_arrays(np.random.default_rng(0), candidates=(0, 0, 0))
    for epsilon in (0.0, 1.0):
        assert all((learner.act(obs, mask, epsilon) == 0).all() for _ in range(20))


def test_the_optimiser_gets_the_configured_learning_rate():
    learner = VDNLearner(D, VDNConfig(learning_rate=np.float64(2e-3)), seed=0)
    assert learner.optimizer.param_groups[0]["lr"] == 2e-3
    assert type(learner.optimizer.param_groups[0]["lr"]) is float


def test_learner_weights_are_those_of_manual_seed_and_leave_the_global_rng_alone():
    from agents.networks import QNetwork

    state = torch.get_rng_state()
    learner = VDNLearner(5, VDNConfig(hidden=(8,)), "cpu", seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(3)
    reference = QNetwork(5, (8,))
    for name, tensor in reference.state_dict().items():
        assert torch.equal(learner.q.state_dict()[name], tensor), name
