"""Distributed VDN training on a 2-CPU local Ray cluster: the sync mode is reproducible and with one actor
trains the local run's weights (also when a run is extended, validated or started from another run's
weights), a killed rollout actor is restarted and its episodes replayed, and train_agents.py trains,
validates, fine-tunes and checkpoints on Ray."""

import faulthandler
import os
import shutil
import signal
import threading

import numpy as np
import pytest
import torch

ray = pytest.importorskip("ray")

import train_agents  # noqa: E402
from agents.checkpoint import load_checkpoint  # noqa: E402
from agents.config import VDNConfig  # noqa: E402
from agents.ray_training import FederationWorker  # noqa: E402
from agents.rollout import play_rollouts, training_seed  # noqa: E402
from agents.trainer import CHECKPOINT_NAME, Trainer, train_vdn  # noqa: E402
from agents.validation import BEST_NAME  # noqa: E402
from agents.vdn import VDNLearner  # noqa: E402
from fedenv.distributed import RayOptions  # noqa: E402
from fedenv.vector import VectorClientSelectionEnv  # noqa: E402
from tests.helpers import tiny_config  # noqa: E402

ENV = tiny_config(num_rounds=4)
VDN = VDNConfig(learning_starts=4, batch_size=8, hidden=(8,), target_update_interval=5)
EPISODES = 4
SYNC = RayOptions("local", num_workers=2, sync=True)
ONE_WORKER = RayOptions("local", num_workers=1, sync=True)
HANG_LIMIT_S = 300
"""A test still running after this long is stuck (a Ray call that never returns): its stacks are dumped and
the test process ends, rather than waiting for ever."""


@pytest.fixture(autouse=True)
def no_hang():
    faulthandler.dump_traceback_later(HANG_LIMIT_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU local Ray cluster shared by this file's tests."""
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def reference(cluster):
    """The learner's Q-network weights after a sync run of EPISODES episodes, and its summaries."""
    trainer, summaries = train_vdn(ENV, VDN, EPISODES, seed=3, progress=False, ray_options=SYNC)
    return trainer.learner.q.state_dict(), summaries, trainer.steps


def assert_same_weights(state, reference_state):
    assert list(state) == list(reference_state)
    for name in state:
        assert torch.equal(state[name], reference_state[name]), name


def test_rollouts_replay_the_same_episode_from_the_weights_and_episode_index():
    vector = VectorClientSelectionEnv(ENV, 2)
    actor = VDNLearner(len(vector.envs[0].feature_names), VDN, "cpu", seed=0)
    first = play_rollouts(vector.envs, actor, [5, 2], schedule_episodes=10, seed=1)
    again = play_rollouts(vector.envs, actor, [2], schedule_episodes=10, seed=1)  # another federation, order, rng
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


def test_a_fresh_sync_actor_replays_the_joint_actions_to_the_same_federations():
    seeds = [training_seed(0, 0), training_seed(0, 1)]
    live = FederationWorker(ENV, 2)
    live.advance(seeds, [[], []])
    histories, rng = [[], []], np.random.default_rng(0)
    for _ in range(3):  # three rounds, one call each, as the learner plays them
        for history in histories:
            history.append(rng.integers(0, 2, ENV.num_clients))
        expected, _ = live.advance(seeds, [list(h) for h in histories])
    replayed, _ = FederationWorker(ENV, 2).advance(seeds, histories)  # a restarted actor gets the whole call
    assert sorted(replayed) == sorted(expected) == [0, 1]
    for j in (0, 1):
        (obs, rewards, terminations, truncations, infos), again = expected[j], replayed[j]
        for agent in obs:
            np.testing.assert_array_equal(again[0][agent]["observation"], obs[agent]["observation"])
        assert (again[1], again[2], again[3]) == (rewards, terminations, truncations)
        assert again[4][agent]["validation_accuracy"] == infos[agent]["validation_accuracy"]
        # NaN before the episode's last round on both (training actors score the test split once an episode)
        np.testing.assert_equal(again[4][agent]["test_accuracy"], infos[agent]["test_accuracy"])


def test_two_sync_runs_end_with_the_same_weights(reference):
    weights, summaries, steps = reference
    trainer, again = train_vdn(ENV, VDN, EPISODES, seed=3, progress=False, ray_options=SYNC)
    assert_same_weights(trainer.learner.q.state_dict(), weights)
    assert [s.team_return for s in again] == [s.team_return for s in summaries]
    assert steps == trainer.steps == EPISODES * ENV.num_rounds
    # the two actors' episodes are played side by side, round by round: episode 0's 4th round is the run's
    # 7th step, episode 1's the 8th (then 15 and 16 for episodes 2 and 3)
    assert [s.rounds_played for s in again] == [7, 8, 15, 16]
    assert any(s.td_losses for s in again)  # the learner trained (learning_starts = 4 rounds)


def test_a_killed_worker_is_restarted_and_its_episodes_replayed(reference):
    trainer = Trainer(ENV, VDN, EPISODES, seed=3, ray_options=SYNC)
    pids = trainer.source.worker_pids()
    summaries = trainer.play_episodes()  # iteration 1: episodes 0 and 1
    killer = threading.Timer(0.3, os.kill, (pids[1], signal.SIGKILL))
    killer.start()
    summaries += trainer.play_episodes()  # iteration 2: worker 1 dies while playing episode 3
    killer.join()
    new_pids = trainer.source.worker_pids()
    trainer.close()
    assert new_pids[0] == pids[0] and new_pids[1] != pids[1]
    assert trainer.episode == EPISODES
    assert_same_weights(trainer.learner.q.state_dict(), reference[0])
    assert [s.team_return for s in summaries] == [s.team_return for s in reference[1]]


def test_train_agents_on_ray_validates_writes_a_checkpoint_and_resumes(cluster, tmp_path):
    flags = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--device", "cpu",
             "--test-samples", "200", "--episodes", "2", "--vdn-learning-starts", "2", "--vdn-batch-size", "4",
             "--vdn-hidden", "8", "--checkpoint-interval", "1", "--eval-seeds", "--no-progress",
             "--eval-interval", "1", "--val-seeds", "500",
             "--ray-address", "local", "--num-workers", "2", "--sync", "--run-dir", str(tmp_path)]
    assert train_agents.main(flags) == 0
    document = load_checkpoint(tmp_path / "checkpoint.pt")
    assert document["episodes"] == 2 and document["env_steps"] == 4
    assert list(tmp_path.glob("events.out.tfevents.*"))
    assert load_checkpoint(tmp_path / BEST_NAME)["validation"]["seeds"] == [500]  # validated while training
    # the finished run resumes at its end: nothing left to play, the checkpoint is unchanged
    assert train_agents.main(["--resume", str(tmp_path), "--eval-seeds", "--no-progress", "--ray-address", "local",
                              "--num-workers", "2", "--sync"]) == 0
    assert load_checkpoint(tmp_path / "checkpoint.pt")["env_steps"] == 4


def test_the_trainer_starts_the_cluster_of_its_options_and_each_actor_runs_one_torch_thread(cluster, monkeypatch):
    from agents import ray_training

    asked = []
    monkeypatch.setattr(ray_training, "start_ray", lambda options: asked.append(options) or 2)
    options = RayOptions("ray://head:10001", num_workers=1)
    trainer = Trainer(ENV, VDN, EPISODES, seed=3, ray_options=options)
    try:
        # with --num-workers given too, the trainer joins the cluster --ray-address names (not Ray's default)
        assert asked == [options]
        assert ray.get([worker.torch_threads.remote() for worker in trainer.source.workers]) == [1]
    finally:
        trainer.close()


def summary_rows(summaries) -> list[tuple]:
    return [(s.team_return, s.final_accuracy, s.epsilon, s.td_losses, s.rounds_played) for s in summaries]


def test_sync_on_one_actor_trains_the_local_weights_also_when_a_run_is_extended(cluster, tmp_path):
    # a 2-episode run extended to 3: locally, on Ray, and the local checkpoint extended on Ray
    first, short = train_vdn(ENV, VDN, 2, seed=1, run_dir=tmp_path / "local", progress=False)
    shutil.copytree(tmp_path / "local", tmp_path / "local_then_ray")
    on_ray, short_on_ray = train_vdn(ENV, VDN, 2, seed=1, run_dir=tmp_path / "ray", progress=False,
                                     ray_options=ONE_WORKER)
    assert_same_weights(on_ray.learner.q.state_dict(), first.learner.q.state_dict())
    assert summary_rows(short_on_ray) == summary_rows(short)
    assert any(s.td_losses for s in short)  # it learned: gradient steps from round 4 on
    untrained = VDNLearner(len(first.env.feature_names), VDN, "cpu", seed=1).q.state_dict()
    assert not all(torch.equal(first.learner.q.state_dict()[k], untrained[k]) for k in untrained)

    extended = {}
    for name, options in (("local", None), ("ray", ONE_WORKER), ("local_then_ray", ONE_WORKER)):
        trainer, more = train_vdn(ENV, VDN, 3, seed=1, run_dir=tmp_path / name, progress=False, resume=True,
                                  ray_options=options)
        assert trainer.episode == 3 and trainer.schedule_episodes == 2  # the horizon of the first plan
        extended[name] = (trainer.learner.q.state_dict(), summary_rows(more),
                          load_checkpoint(tmp_path / name / CHECKPOINT_NAME)["training"])
    reference_weights, reference_rows, reference_training = extended["local"]
    for name in ("ray", "local_then_ray"):
        weights, rows, training = extended[name]
        assert_same_weights(weights, reference_weights)
        assert rows == reference_rows, name
        # the next exploration draws and replay samples too: a further extension would agree as well
        assert training["learner"]["rng"] == reference_training["learner"]["rng"], name
        assert training["sample_rng"] == reference_training["sample_rng"], name
        assert_same_weights(training["learner"]["target"], reference_training["learner"]["target"])


def test_sync_on_one_actor_learns_from_a_demonstrator_as_a_local_run(cluster):
    # the demonstrator labels the actors' federations with their own device-profile estimates
    config = VDNConfig(learning_starts=4, batch_size=8, hidden=(8,), demonstrator="fastest")
    local, local_rows = train_vdn(ENV, config, 2, seed=2, progress=False)
    on_ray, ray_rows = train_vdn(ENV, config, 2, seed=2, progress=False, ray_options=ONE_WORKER)
    assert_same_weights(on_ray.learner.q.state_dict(), local.learner.q.state_dict())
    assert summary_rows(ray_rows) == summary_rows(local_rows)
    labels = on_ray.buffer.demo_actions[: len(on_ray.buffer)]
    assert np.array_equal(labels, local.buffer.demo_actions[: len(local.buffer)]) and (labels >= 0).all()


def test_sync_on_one_actor_validates_and_fine_tunes_as_a_local_run(cluster, tmp_path):
    runs = {}
    for name, options in (("local", None), ("ray", ONE_WORKER)):
        run_dir = tmp_path / name
        trainer, _ = train_vdn(ENV, VDN, 2, seed=2, run_dir=run_dir, progress=False, eval_interval=1, val_seeds=[500],
                               num_envs=2, ray_options=options)  # the actor's two federations side by side
        best = load_checkpoint(run_dir / BEST_NAME)
        tuned, _ = train_vdn(ENV, VDN, 1, seed=4, progress=False, init_from=run_dir / CHECKPOINT_NAME,
                             ray_options=options)
        runs[name] = (trainer.best_eval_return, best, tuned.learner.q.state_dict())
    (local_best_return, local_best, local_tuned), (ray_best_return, ray_best, ray_tuned) = runs["local"], runs["ray"]
    assert ray_best_return == local_best_return is not None
    assert ray_best["validation"] == local_best["validation"]
    assert ray_best["episodes"] == local_best["episodes"]
    assert_same_weights(ray_best["q_state"], local_best["q_state"])
    # fine-tuned from the checkpoint's weights on Ray as locally (a fresh seed-4 network would differ)
    assert_same_weights(ray_tuned, local_tuned)


def test_train_agents_on_one_ray_actor_fine_tunes_to_the_local_weights(cluster, tmp_path):
    flags = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--device", "cpu",
             "--test-samples", "200", "--vdn-learning-starts", "2", "--vdn-batch-size", "4", "--vdn-hidden", "8",
             "--eval-seeds", "--no-progress", "--seed", "1"]
    assert train_agents.main(flags + ["--episodes", "1", "--run-dir", str(tmp_path / "source")]) == 0
    start = ["--episodes", "2", "--init-from", str(tmp_path / "source" / CHECKPOINT_NAME)]
    assert train_agents.main(flags + start + ["--run-dir", str(tmp_path / "local")]) == 0
    assert train_agents.main(flags + start + ["--run-dir", str(tmp_path / "ray"), "--ray-address", "local",
                                              "--num-workers", "1", "--sync"]) == 0
    local, remote = (load_checkpoint(tmp_path / name / CHECKPOINT_NAME) for name in ("local", "ray"))
    assert remote["episodes"] == local["episodes"] == 2
    assert_same_weights(remote["q_state"], local["q_state"])


def test_an_asynchronous_run_extends_with_the_exploration_horizon_of_its_first_plan(cluster, tmp_path):
    # the failing case: a 2-episode run extended to 3 on one asynchronous actor
    vdn = VDNConfig(learning_starts=4, batch_size=8, hidden=(8,), exploration_fraction=1.0)
    options = RayOptions("local", num_workers=1)
    train_vdn(ENV, vdn, 2, seed=1, run_dir=tmp_path, progress=False, ray_options=options)
    trainer, more = train_vdn(ENV, vdn, 3, seed=1, run_dir=tmp_path, progress=False, resume=True,
                              ray_options=options)
    assert trainer.episode == 3 and len(more) == 1
    # episode 2's last round is schedule step 2 * 4 + 3 = 11 of 2 * 4: annealed (over 3 episodes: 11 of 12,
    # epsilon 1 - 11/12 * 0.95 = 0.129)
    assert more[0].epsilon == pytest.approx(vdn.exploration_final_eps)
    assert load_checkpoint(tmp_path / CHECKPOINT_NAME)["training"]["schedule_episodes"] == 2
