"""Trainer(overlap_learner=True): gradient steps in a learner thread beside the episodes (Ape-X-style split)."""

import dataclasses

import pytest
import torch

from agents.config import VDNConfig
from agents.trainer import Trainer, train_vdn
from agents.vdn import VDNLearner
from fedenv.distributed import RayOptions
from tests.helpers import tiny_config

ENV = tiny_config(num_rounds=3, local_epochs=1, partition="iid", val_fraction=0.5)
VDN = VDNConfig(learning_starts=2, batch_size=8, gradient_steps=2, n_step=1)


def weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in trainer.learner.q.state_dict().items()}


def same(a: dict, b: dict) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_overlap_runs_the_default_loops_gradient_steps_one_batch_later_with_the_buffer_of_the_batch_start(monkeypatch):
    updates = []  # (env step the update was due after, buffer size when it ran)
    trainer = Trainer(ENV, VDN, episodes=3, seed=4, overlap_learner=True)
    original = trainer._train_after

    def recording(step, episode):
        size = len(trainer.buffer)
        losses = original(step, episode)
        updates.extend([(step, size)] * len(losses))
        return losses

    monkeypatch.setattr(trainer, "_train_after", recording)
    summaries = []
    try:
        while trainer.episode < trainer.episodes:
            summaries += trainer.play_episodes()
    finally:
        trainer.close()
    # 3 rounds per episode; from step 2 on, 2 gradient steps after every step: steps 2..9 -> 16 updates,
    # the same count as the default loop
    assert [s for s, _ in updates] == [s for s in range(2, 10) for _ in range(2)]
    assert trainer.learner.gradient_steps == 16 and trainer.pending_train_steps == []
    # the steps of episode 0 (1-3) ran while episode 1 played, on episode 0's 3 transitions; those of
    # episode 1 (4-6) beside episode 2 on 6; episode 2's after it, on all 9
    assert [size for _, size in updates] == [3] * 4 + [6] * 6 + [9] * 6
    assert [len(s.td_losses) for s in summaries] == [0, 4, 12]


def test_overlap_is_deterministic_and_acts_with_the_weights_of_the_batch_start():
    runs = []
    for _ in range(2):
        trainer, _ = train_vdn(ENV, VDN, episodes=3, seed=1, progress=False, overlap_learner=True)
        runs.append(weights(trainer))
    assert same(*runs)
    default, _ = train_vdn(ENV, VDN, episodes=3, seed=1, progress=False)
    assert not same(runs[0], weights(default))


def test_overlap_acts_with_the_actor_copy_not_the_learners_network(monkeypatch):
    trainer = Trainer(ENV, VDN, episodes=2, seed=0, overlap_learner=True)
    networks = []
    original = VDNLearner.act
    monkeypatch.setattr(VDNLearner, "act", lambda self, obs, mask, eps, q=None, mixer=None, upload_probability=0.5,
                        demo_actions=None: networks.append(q) or original(self, obs, mask, eps, q, mixer,
                                                                          upload_probability, demo_actions))
    try:
        trainer.play_episodes()
    finally:
        trainer.close()
    assert networks and all(q is trainer._actor_q and q is not trainer.learner.q for q in networks)


def loaded(document: dict) -> dict:
    """``document`` as :func:`agents.checkpoint.load_checkpoint` returns it (configurations as objects)."""
    return {**document, "vdn_config": VDNConfig.from_dict(document["vdn_config"]),
            "env_config": type(ENV).from_dict(document["env_config"])}


def play_to_end(trainer: Trainer) -> dict[str, torch.Tensor]:
    try:
        while trainer.episode < trainer.episodes:
            trainer.play_episodes()
    finally:
        trainer.close()
    return weights(trainer)


@pytest.mark.parametrize("config", [VDN, dataclasses.replace(VDN, demonstrator="fastest", demonstration_weight=10.0,
                                                               demonstration_final_weight=0.0)],
                         ids=["plain", "fading-demonstrator"])
def test_a_run_resumed_with_gradient_steps_due_trains_the_weights_of_the_uninterrupted_one(config):
    straight = play_to_end(Trainer(ENV, config, episodes=4, seed=2, overlap_learner=True))
    interrupted = Trainer(ENV, config, episodes=4, seed=2, overlap_learner=True)
    try:
        interrupted.play_episodes()
        interrupted.play_episodes()
        document = loaded(interrupted.checkpoint())
    finally:
        interrupted.close()
    assert document["training"]["pending_train_steps"] == [4, 5, 6]
    assert document["training"]["pending_train_episodes"] == [1, 1, 1]  # the margin weight of episode 1 is due
    resumed = Trainer(ENV, config, episodes=4, seed=2, overlap_learner=True)
    resumed.restore(document)
    assert same(straight, play_to_end(resumed))


def test_a_checkpoint_with_gradient_steps_due_is_refused_by_a_default_trainer():
    trainer = Trainer(ENV, VDN, episodes=3, seed=0, overlap_learner=True)
    try:
        trainer.play_episodes()
        document = trainer.checkpoint()
    finally:
        trainer.close()
    assert document["training"]["pending_train_steps"] == [1, 2, 3]
    document = loaded(document)
    default = Trainer(ENV, VDN, episodes=3, seed=0)
    with pytest.raises(ValueError, match="overlap_learner"):
        default.restore(document)
    again = Trainer(ENV, VDN, episodes=3, seed=0, overlap_learner=True)
    again.restore(document)
    assert again.pending_train_steps == [1, 2, 3] and again.pending_train_episodes == [0, 0, 0]
    again.close()


def test_overlap_with_ray_actors_is_refused():
    with pytest.raises(ValueError, match=r"overlap_learner.*ray_options"):
        Trainer(ENV, VDN, episodes=1, ray_options=RayOptions("local", num_workers=1), overlap_learner=True)
