import time

import numpy as np
import pytest
import torch

from agents.checkpoint import load_checkpoint
from agents.config import VDNConfig
from agents.policy import GreedyPolicy
from agents.trainer import CHECKPOINT_NAME, Trainer, train_vdn, training_seed
from agents.validation import BEST_NAME, check_validation_seeds
from agents.vdn import VDNLearner
from fedenv.baselines import FedAvgPolicy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import run_episode

TINY = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=5, local_epochs=1, batch_size=64,
                 partition="iid", val_fraction=0.9)
# no learning and no exploration: the actions depend on the observations only
NO_LEARNING = {"learning_starts": 10**6, "exploration_initial_eps": 0.0, "exploration_final_eps": 0.0}


def replay_rows(trainer) -> np.ndarray:
    """Every stored transition as one row (observations, masks, actions, n-step reward, discount, done),
    rows sorted: the buffer's contents as a multiset."""
    b, n = trainer.buffer, len(trainer.buffer)
    columns = [b.obs[:n].reshape(n, -1), b.mask[:n].reshape(n, -1), b.actions[:n], b.reward[:n, None],
               b.discount[:n, None], b.next_obs[:n].reshape(n, -1), b.next_mask[:n].reshape(n, -1),
               b.terminated[:n, None]]
    rows = np.concatenate([c.astype(np.float64) for c in columns], axis=1)
    return rows[np.lexsort(np.round(rows, 4).T[::-1])]


def test_several_federations_store_the_same_n_step_transitions_as_one(monkeypatch):
    env = EnvConfig(**{**TINY.to_dict(), "num_rounds": 4})
    config = VDNConfig(n_step=3, **NO_LEARNING)
    seeds, original = [], ClientSelectionEnv.reset_process

    def recording_reset(self, seed=None):
        seeds.append(seed)
        return original(self, seed)

    monkeypatch.setattr(ClientSelectionEnv, "reset_process", recording_reset)
    contents = {}
    for num_envs in (1, 2, 3):
        seeds.clear()
        trainer, summaries = train_vdn(env, config, episodes=4, progress=False, num_envs=num_envs)
        assert sorted(seeds) == [training_seed(0, e) for e in range(4)], num_envs
        assert len(summaries) == 4 and trainer.steps == 16
        contents[num_envs] = replay_rows(trainer)
    assert len(contents[1]) == 16  # 4 rounds per episode, every window flushed at the end
    for num_envs in (2, 3):
        np.testing.assert_allclose(contents[num_envs], contents[1], rtol=0, atol=1e-6, err_msg=str(num_envs))


def test_epsilon_reaches_its_final_value_when_every_episode_ends_early():
    # any model beats accuracy 0.001 after one round: every episode terminates after 1 of its 5 rounds
    env = EnvConfig(**{**TINY.to_dict(), "target_accuracy": 0.001})
    config = VDNConfig(learning_starts=10**6, exploration_initial_eps=1.0, exploration_final_eps=0.05,
                       exploration_fraction=0.5)
    trainer, summaries = train_vdn(env, config, episodes=4, progress=False)
    assert trainer.steps == 4
    # episode e plays schedule step 5 e of 20; the schedule ends at step 0.5 * 20 = 10
    assert [s.epsilon for s in summaries] == pytest.approx([1.0, 1.0 - 0.95 * 5 / 10, 0.05, 0.05])


@pytest.mark.parametrize("num_envs", [1, 2])
def test_full_length_episodes_anneal_epsilon_over_the_rounds_played(num_envs):
    config = VDNConfig(learning_starts=10**6, exploration_initial_eps=1.0, exploration_final_eps=0.05,
                       exploration_fraction=1.0)
    _, summaries = train_vdn(TINY, config, episodes=2, progress=False, num_envs=num_envs)
    # the last round (4) of episode e is step 5 e + 4 of 10 rounds in all
    assert [s.epsilon for s in summaries] == pytest.approx([1.0 - 0.95 * 4 / 10, 1.0 - 0.95 * 9 / 10])


def test_c9_target_network_updates_every_7_gradient_steps(monkeypatch):
    changes, snapshots = [], []
    original = VDNLearner.update

    def recording_update(self, batch, margin_weight=None):
        before = [p.clone() for p in self.target.parameters()]
        loss = original(self, batch, margin_weight)
        changes.append(any(not torch.equal(a, b) for a, b in zip(before, self.target.parameters())))
        snapshots.append(self.gradient_steps)
        return loss

    monkeypatch.setattr(VDNLearner, "update", recording_update)
    config = VDNConfig(target_update_interval=7, train_freq=2, gradient_steps=1, learning_starts=2, batch_size=4,
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
    vdn = VDNConfig(learning_starts=50, gradient_steps=2, exploration_fraction=0.6, target_update_interval=50)
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


SHORT = EnvConfig(**{**TINY.to_dict(), "num_rounds": 2})
LEARNING = VDNConfig(learning_starts=2, batch_size=8, hidden=(16,), exploration_fraction=1.0)


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k].cpu(), b[k].cpu()) for k in a)


def test_an_extended_run_ends_as_a_straight_run_with_the_first_horizon(tmp_path):
    first, _ = train_vdn(SHORT, LEARNING, episodes=20, run_dir=tmp_path, progress=False)
    extended, summaries = train_vdn(SHORT, LEARNING, episodes=30, run_dir=tmp_path, progress=False, resume=True)
    straight, straight_summaries = train_vdn(SHORT, LEARNING, episodes=30, schedule_episodes=20, progress=False)
    assert (extended.episode, extended.steps, len(summaries)) == (30, 60, 10)
    assert same_weights(extended.learner.q.state_dict(), straight.learner.q.state_dict())
    assert [s.epsilon for s in summaries] == [s.epsilon for s in straight_summaries[20:]]
    # the horizon stays 20 episodes x 2 rounds = 40 steps: epsilon is final from episode 20 on; a plain
    # 30-episode run would anneal over 60 steps: its last round of episode 20 (step 41) has 1 - 0.95 * 41/60
    assert [s.epsilon for s in summaries] == pytest.approx([0.05] * 10)
    assert first.schedule_episodes == extended.schedule_episodes == 20
    with pytest.raises(ValueError, match="extended, not shortened"):
        train_vdn(SHORT, LEARNING, episodes=25, run_dir=tmp_path, progress=False, resume=True)
    with pytest.raises(ValueError, match="anneals over 20 episodes, not seed 0 over 30"):
        train_vdn(SHORT, LEARNING, episodes=30, run_dir=tmp_path, progress=False, resume=True, schedule_episodes=30)


def scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    """Every TensorBoard scalar of ``run_dir`` as ``tag -> [(step, value)]``, as TensorBoard shows them
    (events purged by a resumed run left out)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}


def test_evaluation_while_training_changes_no_weight_and_keeps_the_best(tmp_path):
    plain, _ = train_vdn(SHORT, LEARNING, episodes=4, progress=False)
    evaluated, _ = train_vdn(SHORT, LEARNING, episodes=4, progress=False, run_dir=tmp_path, eval_interval=1,
                             val_seeds=[500, 501])
    assert same_weights(plain.learner.q.state_dict(), evaluated.learner.q.state_dict())
    logged = scalars(tmp_path)
    assert [step for step, _ in logged["eval/team_return"]] == [2, 4, 6, 8]  # after every episode, in FL rounds
    best = load_checkpoint(tmp_path / BEST_NAME)
    returns = [value for _, value in logged["eval/team_return"]]
    assert best["validation"]["team_return"] == pytest.approx(max(returns))
    assert best["env_steps"] == 2 * (1 + returns.index(max(returns)))
    # best.pt holds the policy that scored it: replaying the validation seeds gives the same mean
    env = ClientSelectionEnv(SHORT)
    replayed = np.mean([run_episode(env, GreedyPolicy.from_checkpoint(tmp_path / BEST_NAME), s).team_return
                        for s in (500, 501)])
    assert replayed == pytest.approx(best["validation"]["team_return"], rel=1e-6)


@pytest.mark.parametrize("seeds", [[], [10_000], [-1]])
def test_validation_seeds_must_be_given_and_apart_from_training(seeds):
    with pytest.raises(ValueError, match="validation seeds"):
        check_validation_seeds(seeds)


def test_validation_seeds_must_differ_from_the_test_seeds():
    with pytest.raises(ValueError, match=r"validation seeds \[1000\] are also test seeds"):
        check_validation_seeds([500, 1000], test_seeds=[1000, 1001])


class Killed(Exception):
    """Stands for SIGKILL: the run stops between two checkpoints without writing another."""


def test_a_killed_and_resumed_run_writes_every_artefact_as_an_uninterrupted_run(tmp_path, monkeypatch):
    options = {"episodes": 7, "checkpoint_interval": 2, "eval_interval": 3, "progress": False}
    whole, _ = train_vdn(SHORT, LEARNING, run_dir=tmp_path / "whole", **options)
    original = Trainer.play_episodes

    def dies_before_episode_6(self):
        if self.episode == 5:  # checkpoint at 4, episode 5 logged after it, validation at 3
            raise Killed
        return original(self)

    monkeypatch.setattr(Trainer, "play_episodes", dies_before_episode_6)
    with pytest.raises(Killed):
        train_vdn(SHORT, LEARNING, run_dir=tmp_path / "killed", **options)
    assert load_checkpoint(tmp_path / "killed" / CHECKPOINT_NAME)["episodes"] == 4
    assert [step for step, _ in scalars(tmp_path / "killed")["charts/episodic_return"]] == [2, 4, 6, 8, 10]
    monkeypatch.setattr(Trainer, "play_episodes", original)
    time.sleep(1.1)  # event files are ordered by their names, which start with the second they were opened
    resumed, summaries = train_vdn(SHORT, LEARNING, run_dir=tmp_path / "killed", resume=True, **options)
    assert len(summaries) == 3 and same_weights(whole.learner.q.state_dict(), resumed.learner.q.state_dict())
    expected, got = scalars(tmp_path / "whole"), scalars(tmp_path / "killed")
    assert expected.keys() == got.keys() and {"eval/team_return", "charts/SPS"} <= set(expected)
    for tag in expected:
        assert [s for s, _ in got[tag]] == [s for s, _ in expected[tag]], tag  # nothing duplicated or missing
        if tag != "charts/SPS":  # a measured rate
            assert [v for _, v in got[tag]] == [v for _, v in expected[tag]], tag
    for name in (CHECKPOINT_NAME, BEST_NAME):
        a, b = load_checkpoint(tmp_path / "whole" / name), load_checkpoint(tmp_path / "killed" / name)
        assert same_weights(a["q_state"], b["q_state"]) and a["env_steps"] == b["env_steps"], name
    assert load_checkpoint(tmp_path / "killed" / CHECKPOINT_NAME)["training"]["best_eval_return"] == \
        whole.best_eval_return


def test_fine_tuning_starts_from_the_weights_of_another_run(tmp_path):
    source, _ = train_vdn(SHORT, LEARNING, episodes=3, run_dir=tmp_path, progress=False)
    other_setting = EnvConfig(**{**SHORT.to_dict(), "num_rounds": 3, "latency_weight": 0.5})
    frozen = VDNConfig(**{**LEARNING.to_dict(), "learning_starts": 10**6})  # nothing learned: the weights stay
    tuned, _ = train_vdn(other_setting, frozen, episodes=1, progress=False, init_from=tmp_path / CHECKPOINT_NAME)
    assert same_weights(tuned.learner.q.state_dict(), source.learner.q.state_dict())
    assert same_weights(tuned.learner.target.state_dict(), source.learner.q.state_dict())
    assert tuned.learner.gradient_steps == 0 and len(tuned.buffer) == 3  # a fresh buffer: its own 3 rounds only


def test_fine_tuning_names_a_layout_or_width_that_differs(tmp_path):
    train_vdn(SHORT, LEARNING, episodes=1, run_dir=tmp_path, progress=False)
    longer_history = EnvConfig(**{**SHORT.to_dict(), "history_length": SHORT.history_length + 1})
    h = SHORT.history_length
    with pytest.raises(ValueError, match=rf"only in the checkpoint \[\], only in the env \['probe_latency_hist_{h}', "
                                         rf"'upload_latency_hist_{h}'\]"):
        train_vdn(longer_history, LEARNING, episodes=1, progress=False, init_from=tmp_path / CHECKPOINT_NAME)
    wider = VDNConfig(**{**LEARNING.to_dict(), "hidden": (32,)})
    with pytest.raises(ValueError, match=r"hidden widths \(16,\), this run \(32,\)"):
        train_vdn(SHORT, wider, episodes=1, progress=False, init_from=tmp_path / CHECKPOINT_NAME)


def test_a_q_network_on_selected_features_trains_saves_and_acts_on_those_features_only(tmp_path):
    features = ("round_fraction", "data_size")
    config = VDNConfig(**{**LEARNING.to_dict(), "input_features": features})
    trainer, _ = train_vdn(SHORT, config, episodes=3, run_dir=tmp_path, progress=False)
    names = list(trainer.env.feature_names)
    first_layer = trainer.learner.q.state_dict()["network.net.0.weight"]
    assert first_layer.shape == (16, len(features))
    policy = GreedyPolicy.from_checkpoint(tmp_path / CHECKPOINT_NAME)
    assert policy.variant.split("+")[1] == "inputs=2"
    obs = {f"client_{i}": {"observation": np.random.default_rng(i).random(len(names)).astype(np.float32),
                           "action_mask": np.array([1, 1], dtype=np.int8)} for i in range(3)}
    # the same action whatever the features it does not read; the learner's own values decide it
    kept = [names.index(f) for f in features]
    for agent, o in obs.items():
        scrambled = {a: dict(v) for a, v in obs.items()}
        other = np.full(len(names), 7.0, dtype=np.float32)
        other[kept] = o["observation"][kept]
        scrambled[agent]["observation"] = other
        values = trainer.learner.q(torch.as_tensor(o["observation"])[None, None], torch.ones(1, 1))[0, 0]
        assert policy.act(scrambled, {})[agent] == policy.act(obs, {})[agent] == int(values.argmax())
    with pytest.raises(ValueError, match=r"reads the features \['round_fraction', 'data_size'\], this run's all"):
        train_vdn(SHORT, LEARNING, episodes=1, progress=False, init_from=tmp_path / CHECKPOINT_NAME)
    unknown = VDNConfig(**{**LEARNING.to_dict(), "input_features": ("round_index",)})
    with pytest.raises(ValueError, match=r"\['round_index'\] are not features of the observation"):
        train_vdn(SHORT, unknown, episodes=1, progress=False)
