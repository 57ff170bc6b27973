"""Distributed VDN training on a 2-CPU local Ray cluster: the sync mode is reproducible, a killed rollout
actor is restarted and its episodes replayed, and train_agents.py trains and checkpoints on Ray."""

import os
import signal
import threading

import numpy as np
import pytest
import torch

ray = pytest.importorskip("ray")

import train_agents  # noqa: E402
from agents.checkpoint import load_checkpoint  # noqa: E402
from agents.config import VDNConfig  # noqa: E402
from agents.ray_training import RayTrainer, train_vdn_on_ray  # noqa: E402
from agents.rollout import play_rollouts  # noqa: E402
from agents.vdn import VDNLearner  # noqa: E402
from fedenv.distributed import RayOptions  # noqa: E402
from fedenv.vector import VectorClientSelectionEnv  # noqa: E402
from tests.helpers import tiny_config  # noqa: E402

ENV = tiny_config(num_rounds=4)
VDN = VDNConfig(learning_starts=4, batch_size=8, hidden=(8,), target_update_interval=5)
EPISODES = 4
SYNC = RayOptions("local", num_workers=2, sync=True)


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU local Ray cluster shared by this file's tests."""
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def reference(cluster):
    """The learner's Q-network weights after a sync run of EPISODES episodes, and its summaries."""
    trainer, summaries = train_vdn_on_ray(ENV, VDN, EPISODES, seed=3, progress=False, options=SYNC)
    return trainer.learner.q.state_dict(), summaries, trainer.steps


def assert_same_weights(state, reference_state):
    assert list(state) == list(reference_state)
    for name in state:
        assert torch.equal(state[name], reference_state[name]), name


def test_rollouts_replay_the_same_episode_from_the_weights_and_episode_index():
    vector = VectorClientSelectionEnv(ENV, 2)
    actor = VDNLearner(len(vector.envs[0].feature_names), VDN, "cpu", seed=0)
    first = play_rollouts(vector, actor, [5, 2], planned_episodes=10, seed=1)
    again = play_rollouts(vector, actor, [2], planned_episodes=10, seed=1)  # another federation, order, rng state
    assert [r.episode for r in first] == [5, 2]
    assert len(first[1].steps) == ENV.num_rounds
    # trained beside another federation, a client's batched SGD sums in another order: equal to float tolerance
    for mine, theirs in zip(first[1].steps, again[0].steps):
        for a, b in zip(mine, theirs):
            np.testing.assert_array_equal(a.actions, b.actions)
            np.testing.assert_allclose(a.obs, b.obs, rtol=1e-5, atol=1e-6)
            assert a.reward == pytest.approx(b.reward, rel=1e-5, abs=1e-7)
    # n = 3 windows over 4 rounds: one transition after steps 3 and 4, the last two flushed at the end
    assert [len(transitions) for transitions in first[1].steps] == [0, 0, 1, 3]
    # epsilon of episode e is the run's schedule at step e * num_rounds + round (last round: 3)
    schedule = [1.0 + min(1.0, (e * 4 + 3) / (0.5 * 40)) * (VDN.exploration_final_eps - 1.0) for e in (5, 2)]
    assert [r.summary.epsilon for r in first] == pytest.approx(schedule)


def test_two_sync_runs_end_with_the_same_weights(reference):
    weights, summaries, steps = reference
    trainer, again = train_vdn_on_ray(ENV, VDN, EPISODES, seed=3, progress=False, options=SYNC)
    assert_same_weights(trainer.learner.q.state_dict(), weights)
    assert [s.team_return for s in again] == [s.team_return for s in summaries]
    assert steps == trainer.steps == EPISODES * ENV.num_rounds
    assert [s.rounds_played for s in again] == [4, 8, 12, 16]
    assert any(s.td_losses for s in again)  # the learner trained (learning_starts = 4 rounds)


def test_a_killed_worker_is_restarted_and_its_episodes_replayed(reference):
    trainer = RayTrainer(ENV, VDN, EPISODES, seed=3, options=SYNC)
    pids = trainer.worker_pids()
    summaries = trainer.play_episodes()  # iteration 1: episodes 0 and 1
    killer = threading.Timer(0.3, os.kill, (pids[1], signal.SIGKILL))
    killer.start()
    summaries += trainer.play_episodes()  # iteration 2: worker 1 dies while playing episode 3
    killer.join()
    new_pids = trainer.worker_pids()
    trainer.close()
    assert new_pids[0] == pids[0] and new_pids[1] != pids[1]
    assert trainer.episode == EPISODES
    assert_same_weights(trainer.learner.q.state_dict(), reference[0])
    assert [s.team_return for s in summaries] == [s.team_return for s in reference[1]]


def test_train_agents_on_ray_writes_a_checkpoint_and_resumes(cluster, tmp_path):
    flags = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--device", "cpu",
             "--test-samples", "200", "--episodes", "2", "--vdn-learning-starts", "2", "--vdn-batch-size", "4",
             "--vdn-hidden", "8", "--checkpoint-interval", "1", "--eval-seeds", "--no-progress",
             "--ray-address", "local", "--num-workers", "2", "--sync", "--run-dir", str(tmp_path)]
    assert train_agents.main(flags) == 0
    document = load_checkpoint(tmp_path / "checkpoint.pt")
    assert document["episodes"] == 2 and document["env_steps"] == 4
    assert list(tmp_path.glob("events.out.tfevents.*"))
    # the finished run resumes at its end: nothing left to play, the checkpoint is unchanged
    assert train_agents.main(["--resume", str(tmp_path), "--eval-seeds", "--no-progress", "--ray-address", "local",
                              "--num-workers", "2", "--sync"]) == 0
    assert load_checkpoint(tmp_path / "checkpoint.pt")["env_steps"] == 4


def test_the_trainer_starts_the_cluster_of_its_options_and_each_actor_runs_one_torch_thread(cluster, monkeypatch):
    from agents import ray_training

    asked = []
    monkeypatch.setattr(ray_training, "start_ray", lambda options: asked.append(options) or 2)
    options = RayOptions("ray://head:10001", num_workers=1)
    trainer = RayTrainer(ENV, VDN, EPISODES, seed=3, options=options)
    try:
        # with --num-workers given too, the trainer joins the cluster --ray-address names (not Ray's default)
        assert asked == [options]
        assert ray.get([worker.torch_threads.remote() for worker in trainer.workers]) == [1]
    finally:
        trainer.close()
