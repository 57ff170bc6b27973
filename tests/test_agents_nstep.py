import numpy as np
import pytest

from agents.nstep import NStepWindow
from agents.replay import ReplayBuffer

K, D = 3, 4


def arrays(value):
    return np.full((K, D), value, dtype=np.float32), np.ones((K, 2), dtype=np.float32)


def push(window, t, reward, terminated=False, truncated=False):
    """Step ``t``: observation filled with ``t``, next observation with ``t + 1``."""
    obs, mask = arrays(t)
    next_obs, next_mask = arrays(t + 1)
    return window.push(obs, mask, np.zeros(K, dtype=np.int64), reward, next_obs, next_mask, terminated, truncated)


def test_n_step_returns_by_hand():
    window, buffer = NStepWindow(n_step=2, gamma=0.5), ReplayBuffer(10, K, D)
    for t, reward in enumerate([1.0, 2.0, 3.0]):
        for transition in push(window, t, reward, truncated=(t == 2)):
            buffer.add(transition)
    assert len(buffer) == 3 and len(window) == 0
    assert buffer.reward[:3].tolist() == [1.0 + 0.5 * 2.0, 2.0 + 0.5 * 3.0, 3.0]
    assert buffer.discount[:3].tolist() == [0.25, 0.25, 0.5]
    assert buffer.obs[:3, 0, 0].tolist() == [0.0, 1.0, 2.0]
    assert buffer.next_obs[:3, 0, 0].tolist() == [2.0, 3.0, 3.0]  # t + n, then the episode's last observation
    assert buffer.terminated[:3].tolist() == [0.0, 0.0, 0.0]  # truncation bootstraps


def test_termination_flushes_the_short_windows_without_bootstrap():
    window = NStepWindow(n_step=3, gamma=1.0)
    assert push(window, 0, 1.0) == [] and push(window, 1, 2.0) == []
    done = push(window, 2, 4.0, terminated=True)
    assert [t.reward for t in done] == [7.0, 6.0, 4.0]
    assert [t.discount for t in done] == [1.0, 1.0, 1.0]
    assert all(t.terminated and t.next_obs[0, 0] == 3.0 for t in done)


def test_two_interleaved_episodes_in_their_own_windows_do_not_mix():
    """Steps of two federations alternate (as in lockstep play); each window only sees its own."""
    first, second = NStepWindow(3, 1.0), NStepWindow(3, 1.0)
    out_first, out_second = [], []
    for t in range(4):
        if t < 2:  # the first episode is truncated after 2 steps, the second after 4
            out_first += push(first, t, 1.0, truncated=(t == 1))
        out_second += push(second, 10 + t, 100.0, truncated=(t == 3))
    assert sorted(t.reward for t in out_first) == [1.0, 2.0]
    assert sorted(t.reward for t in out_second) == [100.0, 200.0, 300.0, 300.0]
    assert {t.next_obs[0, 0] for t in out_first} == {2.0}
    assert {t.next_obs[0, 0] for t in out_second} == {13.0, 14.0}


def test_bad_window_and_capacity_are_rejected():
    with pytest.raises(ValueError, match="n_step=0"):
        NStepWindow(0, 0.9)
    with pytest.raises(ValueError, match=r"gamma=1\.5"):
        NStepWindow(1, 1.5)
    with pytest.raises(ValueError, match="capacity=0"):
        ReplayBuffer(0, K, D)


def test_replay_ring_overwrites_the_oldest_and_state_round_trips():
    window, buffer = NStepWindow(1, 1.0), ReplayBuffer(2, K, D)
    for t in range(3):
        for transition in push(window, t, float(t), truncated=(t == 2)):
            buffer.add(transition)
    assert len(buffer) == 2 and sorted(buffer.reward.tolist()) == [1.0, 2.0]
    copy = ReplayBuffer(2, K, D)
    copy.load_state_dict(buffer.state_dict())
    assert (copy.size, copy.position) == (buffer.size, buffer.position)
    assert np.array_equal(copy.obs, buffer.obs) and np.array_equal(copy.reward, buffer.reward)
