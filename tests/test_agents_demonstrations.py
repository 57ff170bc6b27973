"""Learning from a demonstrator (VDNConfig.demonstrator, agents/demonstrations.py): DQfD's margin loss worked
by hand; always exploring, the learner plays the demonstrator's episodes exactly (against the plain evaluation
loop), locally and in the rollouts Ray actors play; the replay buffer keeps the labels; the loss pulls the greedy
actions to the labels; bad values are refused."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from agents.config import DEMONSTRATION_OPTIONS, VDNConfig
from agents.demonstrations import margin_loss
from agents.replay import NO_DEMONSTRATION, Batch, ReplayBuffer
from agents.rollout import play_rollouts, training_seed
from agents.trainer import Trainer
from agents.vdn import VDNLearner
from fedenv.baselines import make_policy
from fedenv.env import ClientSelectionEnv, policy_infos
from fedenv.evaluation.rollout import profile_duration_s, run_episode
from fedenv.registry import POLICIES
from fedenv.vector import VectorClientSelectionEnv
from tests.helpers import tiny_config

ENV = tiny_config(num_clients=5, clients_per_round=5, num_rounds=5, probing=False)
ALWAYS_EXPLORE = VDNConfig(exploration_initial_eps=1.0, exploration_final_eps=1.0, learning_starts=10_000,
                           hidden=(8,), demonstrator="stale-fastest")


def test_the_margin_loss_is_dqfds_worked_by_hand():
    values = torch.tensor([[[1.0, 0.5], [0.0, 2.0], [3.0, 0.0], [0.0, 0.0]]])  # (B=1, K=4, 2)
    candidates = torch.tensor([[1.0, 1.0, 0.0, 1.0]])
    labels = torch.tensor([[1, 1, 1, NO_DEMONSTRATION]])
    # agent 0: max(1.0 + 0.8, 0.5) - 0.5 = 1.3; agent 1: max(0.0 + 0.8, 2.0) - 2.0 = 0 (leads by >= the margin);
    # agent 2 is no candidate and agent 3 has no label: left out of the mean
    assert float(margin_loss(values, candidates, labels, 0.8)) == pytest.approx((1.3 + 0.0) / 2)
    # labels of 0: agent 0: max(1.0, 0.5 + 0.8) - 1.0 = 0.3; agent 1: max(0.0, 2.0 + 0.8) - 0.0 = 2.8;
    # agent 3: max(0.0, 0.0 + 0.8) - 0.0 = 0.8
    assert float(margin_loss(values, candidates, torch.zeros(1, 4, dtype=torch.int64), 0.8)) == pytest.approx(
        (0.3 + 2.8 + 0.8) / 3)
    assert float(margin_loss(values, candidates, torch.full((1, 4), NO_DEMONSTRATION), 0.8)) == 0.0


def test_always_exploring_the_learner_plays_the_demonstrators_episode():
    trainer = Trainer(ENV, ALWAYS_EXPLORE, episodes=2, seed=3)
    try:
        summaries = trainer.play_episodes() + trainer.play_episodes()
        buffer = trainer.buffer
        stored = slice(0, len(buffer))
        candidates = buffer.mask[stored, :, 1] > 0
        assert len(buffer) == 2 * ENV.num_rounds
        # every transition is labelled, and the action played is the label (the demonstrator's)
        assert (buffer.demo_actions[stored] >= 0).all()
        assert np.array_equal(buffer.actions[stored][candidates], buffer.demo_actions[stored][candidates])
    finally:
        trainer.close()
    env = ClientSelectionEnv(ENV)
    for episode, summary in enumerate(summaries):
        policy = make_policy("stale-fastest", num_rounds=ENV.num_rounds)
        record = run_episode(env, policy, training_seed(3, episode))
        assert summary.team_return == pytest.approx(record.team_return, abs=1e-9)
        assert summary.total_upload_mb == pytest.approx(record.total_upload_mb)


def test_on_the_learners_own_states_the_labels_are_the_demonstrators_given_what_was_played():
    # greedy (epsilon 0) with untrained weights: the learner's own actions, which stale-fastest never chose;
    # the reference loop replays them and asks a fresh stale-fastest, shown each step, for every round's label
    # (8 rounds, seed 2: the untrained network uploads 3 of the 5 clients from round 2 on, so staleness varies)
    longer = dataclasses.replace(ENV, num_rounds=8)
    config = dataclasses.replace(ALWAYS_EXPLORE, exploration_initial_eps=0.0, exploration_final_eps=0.0)
    trainer = Trainer(longer, config, episodes=1, seed=2)
    try:
        trainer.play_episodes()
        played, labels = (trainer.buffer.actions[: longer.num_rounds],
                          trainer.buffer.demo_actions[: longer.num_rounds])
    finally:
        trainer.close()
    env = ClientSelectionEnv(longer)
    policy = make_policy("stale-fastest", num_rounds=longer.num_rounds)
    observations, infos = env.reset(seed=training_seed(2, 0))
    policy.reset(training_seed(2, 0))
    policy.register_clients(profile_duration_s(env), longer.probing)
    for action, label in zip(played, labels):
        chosen = policy.act(observations, policy_infos(infos))
        assert [chosen.get(agent, 0) for agent in env.possible_agents] == list(label)
        observations, _, _, _, infos = env.step(dict(zip(env.possible_agents, map(int, action))))
        policy.observe(policy_infos(infos))
    assert not np.array_equal(played, labels)  # the learner did not play the labels


def test_ray_actors_rollouts_play_the_demonstrators_episode():
    vector = VectorClientSelectionEnv(ENV, 1)
    actor = VDNLearner(len(vector.envs[0].feature_names), ALWAYS_EXPLORE, "cpu", seed=0)
    [rollout] = play_rollouts(vector.envs, actor, [0], schedule_episodes=2, seed=5)
    record = run_episode(ClientSelectionEnv(ENV), make_policy("stale-fastest", num_rounds=ENV.num_rounds),
                         training_seed(5, 0))
    assert rollout.summary.team_return == pytest.approx(record.team_return, abs=1e-9)
    assert all(t.demo_actions is not None for step in rollout.steps for t in step)


def test_without_a_demonstrator_transitions_carry_no_labels():
    config = dataclasses.replace(ALWAYS_EXPLORE, demonstrator="")
    trainer = Trainer(ENV, config, episodes=1, seed=0)
    try:
        trainer.play_episodes()
        assert (trainer.buffer.demo_actions[: len(trainer.buffer)] == NO_DEMONSTRATION).all()
    finally:
        trainer.close()


def test_a_buffer_saved_before_labels_loads_with_none():
    buffer = ReplayBuffer(4, 2, 3)
    buffer.size, buffer.demo_actions[:] = 2, 1
    state = buffer.state_dict()
    del state["demo_actions"]
    fresh = ReplayBuffer(4, 2, 3)
    fresh.demo_actions[:] = 1
    fresh.load_state_dict(state)
    assert (fresh.demo_actions[:2] == NO_DEMONSTRATION).all()
    del state["obs"]  # any other array missing is an error, not a default
    with pytest.raises(KeyError, match="obs"):
        fresh.load_state_dict(state)


def batch(demo_actions: torch.Tensor) -> Batch:
    g = torch.Generator().manual_seed(0)
    b, k, d = demo_actions.shape[0], demo_actions.shape[1], 3
    mask = torch.ones(b, k, 2)
    return Batch(obs=torch.rand(b, k, d, generator=g), mask=mask, actions=torch.zeros(b, k, dtype=torch.int64),
                 reward=torch.zeros(b), next_obs=torch.rand(b, k, d, generator=g), next_mask=mask,
                 discount=torch.ones(b), terminated=torch.ones(b), demo_actions=demo_actions)


@pytest.mark.parametrize("weight, imitates", [(1.0, True), (0.0, False)])
def test_the_margin_term_pulls_the_greedy_actions_to_the_labels(weight, imitates):
    # labels of 1 on states whose played action 0 earns 0 (terminal): TD alone has no reason to prefer 1
    labels = torch.ones(16, 2, dtype=torch.int64)
    learner = VDNLearner(3, VDNConfig(hidden=(16,), demonstrator="stale-fastest", demonstration_weight=weight,
                                      learning_rate=1e-2), seed=0)
    data = batch(labels)
    for _ in range(300):
        learner.update(data)
    with torch.no_grad():
        values = learner.q(data.obs, data.mask[..., 1])
    assert bool((values.argmax(-1) == labels).all()) is imitates


def test_a_margin_weight_of_zero_takes_the_step_of_a_learner_without_a_demonstrator():
    data = batch(torch.ones(16, 2, dtype=torch.int64))
    with_labels = VDNLearner(3, VDNConfig(hidden=(16,), demonstrator="stale-fastest", demonstration_weight=10.0),
                             seed=0)
    plain = VDNLearner(3, VDNConfig(hidden=(16,)), seed=0)
    zero, reference = with_labels.update(data, margin_weight=0.0), plain.update(data)
    assert zero.loss == zero.td_loss == reference.loss == reference.td_loss and reference.margin_loss == 0.0
    assert zero.margin_loss > 0  # reported apart, though it weighs nothing
    assert all(torch.equal(a, b) for a, b in zip(with_labels.q.parameters(), plain.q.parameters()))


def test_the_loss_is_the_td_term_plus_the_default_weight_times_the_margin_term_each_reported_apart():
    data = batch(torch.ones(16, 2, dtype=torch.int64))
    weighted = VDNLearner(3, VDNConfig(hidden=(16,), demonstrator="stale-fastest", demonstration_weight=10.0),
                          seed=0)
    fresh = VDNLearner(3, VDNConfig(hidden=(16,)), seed=0)
    with torch.no_grad():
        margin = float(margin_loss(fresh.q(data.obs, data.mask[..., 1]), data.mask[..., 1], data.demo_actions, 0.8))
    assert margin > 0
    losses, plain = weighted.update(data), fresh.update(data)
    assert losses.td_loss == pytest.approx(plain.td_loss, rel=1e-6)
    assert losses.margin_loss == pytest.approx(margin, rel=1e-6)
    assert losses.loss == pytest.approx(plain.loss + 10.0 * margin, rel=1e-5)


@pytest.mark.parametrize("overlap_learner, weights, steps", [
    # 4 gradient steps after each round once the replay buffer holds a transition: 3-step returns, so from the
    # first episode's third round on (3 rounds x 4), then after all 5 rounds, at the episode's weight
    (False, [10.0, 5.0, 0.0, 0.0], [12, 20, 20, 20]),
    # the overlapped learner runs a batch's steps while the next one plays, reported with that next one (the last
    # batch's after it, with it): none with episode 0, then episode 0's at 10, 1's at 5, 2's and 3's at 0; all 5
    # rounds' steps each, for the buffer holds the whole batch when they run
    (True, [None, 10.0, 5.0, 0.0], [0, 20, 20, 40]),
])
def test_episodes_carry_their_td_and_margin_terms_and_weight_to_tensorboard(tmp_path, monkeypatch, overlap_learner,
                                                                           weights, steps):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from agents.callbacks import TensorBoardCallback
    from agents.trainer import learn

    # 4 episodes x 5 rounds, weight 10 fading to 0 over the first half: 10, 5, 0, 0 (worked in the test below)
    config = dataclasses.replace(ALWAYS_EXPLORE, learning_starts=1, demonstration_weight=10.0,
                                 demonstration_final_weight=0.0, exploration_fraction=0.5)
    trainer = Trainer(ENV, config, episodes=4, seed=0, overlap_learner=overlap_learner)
    returned, update = [], trainer.learner.update
    monkeypatch.setattr(trainer.learner, "update", lambda data, margin_weight=None: returned.append(
        update(data, margin_weight)) or returned[-1])
    summaries = learn(trainer, [TensorBoardCallback(tmp_path)])
    assert [s.demonstration_weight for s in summaries] == weights
    assert [(len(s.td_losses), len(s.margin_losses)) for s in summaries] == [(n, n) for n in steps]
    # each term as the learner returned it, in order: the TD term alone, not the minimised total
    assert [loss for s in summaries for loss in s.td_losses] == [u.td_loss for u in returned]
    assert [loss for s in summaries for loss in s.margin_losses] == [u.margin_loss for u in returned]
    assert [u.td_loss for u in returned] != [u.loss for u in returned]  # the labels are not all met at weight 10
    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()

    def logged(tag):
        return [(event.step, event.value) for event in accumulator.Scalars(tag)]

    assert logged("charts/demonstration_weight") == [(s.rounds_played, s.demonstration_weight) for s in summaries
                                                      if s.demonstration_weight is not None]
    for tag, values in (("losses/td_loss", "td_losses"), ("losses/margin_loss", "margin_losses")):
        assert logged(tag) == [(s.rounds_played, pytest.approx(np.mean(getattr(s, values)), rel=1e-6))
                               for s in summaries if getattr(s, values)]


def test_without_a_demonstrator_no_margin_term_or_weight_is_carried():
    from agents.trainer import learn

    plain = Trainer(ENV, dataclasses.replace(ALWAYS_EXPLORE, demonstrator="", learning_starts=1), episodes=1, seed=0)
    (summary,) = learn(plain)
    assert summary.td_losses and not summary.margin_losses and summary.demonstration_weight is None


@pytest.mark.parametrize("num_envs, overlap_learner, schedule_episodes, expected", [
    # 4 episodes x 5 rounds: the weight goes from 10 to 0 over the first 10 schedule steps (half the run), read at
    # the trained step's episode x 5 rounds: 10 in episode 0, 5 in episode 1, 0 after; the same with two
    # federations side by side (episodes 0 and 1 in one batch) and with the learner one batch behind
    (1, False, None, {(0, 10.0), (1, 5.0), (2, 0.0), (3, 0.0)}),
    (2, False, None, {(0, 10.0), (1, 5.0), (2, 0.0), (3, 0.0)}),
    (1, True, None, {(0, 10.0), (1, 5.0), (2, 0.0), (3, 0.0)}),
    # a run extended from a 2-episode schedule (--resume --episodes 4): the weight keeps the first horizon, as
    # epsilon does: 5 steps, so 0 from episode 1 on
    (1, False, 2, {(0, 10.0), (1, 0.0), (2, 0.0), (3, 0.0)}),
])
def test_the_trainer_fades_the_margin_weight_by_the_trained_steps_episode(monkeypatch, num_envs, overlap_learner,
                                                                         schedule_episodes, expected):
    config = dataclasses.replace(ALWAYS_EXPLORE, learning_starts=1, demonstration_weight=10.0,
                                 demonstration_final_weight=0.0, exploration_fraction=0.5)
    trainer = Trainer(ENV, config, episodes=4, seed=0, num_envs=num_envs, overlap_learner=overlap_learner,
                      schedule_episodes=schedule_episodes)
    passed, training = [], []
    train_after, update = trainer._train_after, trainer.learner.update

    def recording_train_after(step, episode):
        training.append(episode)
        return train_after(step, episode)

    monkeypatch.setattr(trainer, "_train_after", recording_train_after)
    monkeypatch.setattr(trainer.learner, "update", lambda data, margin_weight=None: passed.append(
        (training[-1], margin_weight)) or update(data, margin_weight))
    try:
        while trainer.episode < 4:
            trainer.play_episodes()
    finally:
        trainer.close()
    assert set(passed) == expected


def test_a_demonstrator_that_does_not_fit_the_federation_is_refused_before_training():
    with pytest.raises(ValueError, match=r"vdn demonstrator='stale-fastest': stale-fastest .*num_rounds=2"):
        Trainer(tiny_config(num_rounds=2), ALWAYS_EXPLORE, episodes=1)


def test_a_demonstrator_with_options_labels_and_plays_as_that_policy_does():
    with_k2 = dataclasses.replace(ALWAYS_EXPLORE, demonstrator="stale-fastest:k=2,last_rounds=1")
    trainer = Trainer(ENV, with_k2, episodes=1, seed=4)
    try:
        [summary] = trainer.play_episodes()
        uploads = trainer.buffer.actions[: ENV.num_rounds].sum(1)
    finally:
        trainer.close()
    # 5 candidates: 2 upload in each of the first 4 rounds, then all but the slowest in the last round
    assert uploads.tolist() == [2, 2, 2, 2, 4]
    reference = make_policy("stale-fastest", k=2, last_rounds=1, num_rounds=ENV.num_rounds)
    record = run_episode(ClientSelectionEnv(ENV), reference, training_seed(4, 0))
    assert summary.team_return == pytest.approx(record.team_return, abs=1e-9)


def test_bad_demonstration_settings_are_refused_naming_the_value():
    with pytest.raises(ValueError, match=r"vdn demonstrator='nobody' is not known; allowed: .*stale-fastest"):
        VDNConfig(demonstrator="nobody").validate()
    # option values are checked against the federation's rounds when training starts, not before
    assert VDNConfig(demonstrator="stale-fastest:last_rounds=25").validate().demonstrator
    with pytest.raises(ValueError, match=r"vdn demonstrator='stale-fastest:last_rounds=25': stale-fastest .*"
                                         r"last_rounds=25, .*num_rounds=5"):
        Trainer(ENV, dataclasses.replace(ALWAYS_EXPLORE, demonstrator="stale-fastest:last_rounds=25"), episodes=1)
    with pytest.raises(ValueError, match=r"vdn demonstrator='fastest:k=2': policy 'fastest' takes no option 'k'"):
        VDNConfig(demonstrator="fastest:k=2").validate()
    with pytest.raises(ValueError, match=r"policy 'stale-fastest:k': option 'k' is not OPTION=VALUE"):
        VDNConfig(demonstrator="stale-fastest:k").validate()
    with pytest.raises(ValueError, match=r"exploration_uploads=\(1, 3\): with a demonstrator .* set one of them"):
        VDNConfig(demonstrator="fastest", exploration_uploads=(1, 3)).validate()
    assert "demonstration_weight" in DEMONSTRATION_OPTIONS and "demonstrator" not in DEMONSTRATION_OPTIONS
    for name in DEMONSTRATION_OPTIONS:
        for bad in (-0.1, math.inf, math.nan):
            with pytest.raises(ValueError, match=rf"vdn {name}={bad!r} must be finite and >= 0"):
                VDNConfig(demonstrator="stale-fastest", **{name: bad}).validate()
        # without a demonstrator a setting of it would do nothing: refused, naming it and its default
        default = getattr(VDNConfig(), name)
        with pytest.raises(ValueError, match=rf"vdn {name}=2.0 is read only with a demonstrator, and vdn "
                                             rf"demonstrator is empty: .* at its default {default!r}"):
            VDNConfig(**{name: 2.0}).validate()
        assert VDNConfig(demonstrator="stale-fastest", **{name: 2.0}).validate()
    # the message gives the flag that undoes a config file's setting: the word none for an unset default
    with pytest.raises(ValueError, match=r"\(on the command line: --vdn-demonstration-final-weight none\)$"):
        VDNConfig(demonstration_final_weight=0.0).validate()
        # a file written before this refusal, where such a setting did nothing, loads with the default
        assert VDNConfig.from_dict({name: 2.0}).validate() == VDNConfig()
        assert getattr(VDNConfig.from_dict({name: 2.0, "demonstrator": "fastest"}), name) == 2.0


@pytest.mark.parametrize("name", list(POLICIES))
def test_every_registered_policy_can_demonstrate_except_an_oracle(name):
    config = dataclasses.replace(ALWAYS_EXPLORE, demonstrator=name)
    if make_policy(name).looks_ahead:  # it reads the round's true times, which a learner's episodes do not give
        with pytest.raises(ValueError, match=rf"vdn demonstrator='{name}': policy '{name}' is an oracle"):
            Trainer(ENV, config, episodes=1, seed=0)
        return
    trainer = Trainer(ENV, config, episodes=1, seed=0)
    try:
        trainer.play_episodes()
        stored = trainer.buffer.demo_actions[: len(trainer.buffer)]
        assert ((stored == 0) | (stored == 1)).all()
        assert np.array_equal(trainer.buffer.actions[: len(trainer.buffer)], stored)
    finally:
        trainer.close()
