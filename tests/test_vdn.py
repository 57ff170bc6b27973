import numpy as np
import pytest
import torch

from agents.replay import ReplayBuffer
from agents.trainer import train_vdn
from agents.vdn import VDNConfig, VDNLearner, linear_epsilon
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.baselines import FedAvgPolicy
from fedenv.evaluation import run_episode

K, D = 3, 4


def step_arrays(rng, candidates=(1, 1, 0)):
    obs = rng.random((K, D), dtype=np.float32)
    mask = np.array([[1, c] for c in candidates], dtype=np.float32)
    return obs, mask


def one_transition_batch(terminated, truncated, reward=0.0, gamma=0.9):
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(10, K, D, n_step=1, gamma=gamma)
    obs, mask = step_arrays(rng)
    next_obs, next_mask = step_arrays(rng, candidates=(1, 0, 1))
    buffer.add(obs, mask, np.array([1, 0, 0]), reward, next_obs, next_mask, terminated, truncated)
    return buffer.sample(1, np.random.default_rng(0), torch.device("cpu")), next_obs, next_mask


def test_c8_truncation_bootstraps_and_termination_does_not():
    learner = VDNLearner(D, VDNConfig(reward_scale=1.0), seed=0)
    batch, next_obs, next_mask = one_transition_batch(terminated=False, truncated=True)
    q_next = learner.target(torch.as_tensor(next_obs)).detach().numpy()
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
    online = learner.q(torch.as_tensor(next_obs)).detach().numpy()
    target = learner.target(torch.as_tensor(next_obs)).detach().numpy()
    expected = 0.9 * sum(target[n, online[n].argmax()] for n in range(K) if next_mask[n, 1])
    assert learner.td_target(batch).item() == pytest.approx(expected, rel=1e-6)


def test_n_step_returns_by_hand():
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(10, K, D, n_step=2, gamma=0.5)
    for t, reward in enumerate([1.0, 2.0, 3.0]):
        obs, mask = step_arrays(rng)
        buffer.add(obs, mask, np.zeros(K, dtype=int), reward, obs, mask, False, truncated=(t == 2))
    assert len(buffer) == 3
    assert buffer.reward[:3].tolist() == [1.0 + 0.5 * 2.0, 2.0 + 0.5 * 3.0, 3.0]
    assert buffer.discount[:3].tolist() == [0.25, 0.25, 0.5]


def test_epsilon_anneals_linearly_then_stays():
    config = VDNConfig(epsilon_start=1.0, epsilon_end=0.1, epsilon_fraction=0.5)
    assert linear_epsilon(0, 100, config) == 1.0
    assert linear_epsilon(25, 100, config) == pytest.approx(0.55)
    assert linear_epsilon(50, 100, config) == pytest.approx(0.1) == linear_epsilon(90, 100, config)


def test_epsilon_greedy_never_takes_masked_actions():
    learner = VDNLearner(D, VDNConfig(), seed=0)
    obs, mask = step_arrays(np.random.default_rng(0), candidates=(0, 0, 0))
    for epsilon in (0.0, 1.0):
        assert all((learner.act(obs, mask, epsilon) == 0).all() for _ in range(20))


TINY = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=5, local_epochs=1, batch_size=64,
                 partition="iid", val_fraction=0.9)


def test_c9_target_network_updates_every_7_gradient_steps(monkeypatch):
    changes, snapshots = [], []
    original = VDNLearner.update

    def recording_update(self, batch):
        before = [p.clone() for p in self.target.parameters()]
        loss = original(self, batch)
        changes.append(any(not torch.equal(a, b) for a, b in zip(before, self.target.parameters())))
        snapshots.append(self.gradient_steps)
        return loss

    monkeypatch.setattr(VDNLearner, "update", recording_update)
    config = VDNConfig(target_update_interval=7, train_interval=2, gradient_steps=1, learning_starts=2, batch_size=4,
                       n_step=1)
    train_vdn(TINY, config, episodes=6, progress=False)
    assert len(changes) == 15  # 30 env steps, training every 2
    assert [step for step, changed in zip(snapshots, changes) if changed] == [7, 14]


@pytest.mark.slow
def test_vdn_learns_to_stop_a_client_100x_slower(write_trace):
    fast = {"train_ms_per_sample": 0.1, "upload_kbps": [100_000.0], "download_kbps": [100_000.0]}
    slow = {"train_ms_per_sample": 10.0, "upload_kbps": [1_000.0], "download_kbps": [1_000.0]}
    clients = [dict(fast, client=0, device="fast"), dict(fast, client=1, device="fast"),
               dict(slow, client=2, device="slow")]
    trace = write_trace(clients, macs=784 * 200 + 200 * 10)  # reference model = the MLP
    # the slow client adds ~6.4 s per round (x 0.1 = 0.64 reward); a fast client's accuracy gain is worth more
    # than its ~0.06 s, so the best policy stops the slow client and keeps the fast ones
    env_config = EnvConfig(**{**TINY.to_dict(), "trace": trace, "accuracy_weight": 5.0, "latency_weight": 0.1,
                              "comm_weight": 0.0})
    vdn = VDNConfig(learning_starts=50, gradient_steps=2, epsilon_fraction=0.6, target_update_interval=50)
    trainer, _ = train_vdn(env_config, vdn, episodes=100, seed=0, progress=False)
    env = ClientSelectionEnv(env_config)
    policy = trainer.greedy_policy()
    slow_selected, fast_selected, rounds = 0, 0, 0
    for seed in range(1000, 1005):
        observations, infos = env.reset(seed=seed)
        slow_agent = env.possible_agents[env.simulator.replay.devices.index("slow")]
        while env.agents:
            actions = policy.act(observations, infos)
            slow_selected += actions.get(slow_agent, 0)
            fast_selected += sum(v for a, v in actions.items() if a != slow_agent)
            rounds += 1
            observations, _, _, _, infos = env.step(actions)
    assert slow_selected == 0
    assert fast_selected >= 0.8 * 2 * rounds  # the fast clients keep uploading: not "stop everyone"
    assert run_episode(env, policy, 1005).team_return > run_episode(env, FedAvgPolicy(), 1005).team_return
