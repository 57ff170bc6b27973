"""Every learner variant (mixer, observation options, no probing) trains through train_agents.py, is
named by its variant, round-trips through its checkpoint and is evaluated by evaluate.py."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

import evaluate
import train_agents
from agents.checkpoint import load_checkpoint, save_checkpoint
from agents.config import VDNConfig
from agents.mixers import MIXERS, acts_jointly
from agents.networks import Q_NETWORKS
from agents.policy import GreedyPolicy, variant_name
from agents.trainer import Trainer
from fedenv.config import EnvConfig
from tests.helpers import tiny_config
from tests.test_train_agents_runs import TINY_FLAGS

OBSERVATION_OPTIONS = tuple(f.name for f in dataclasses.fields(EnvConfig) if f.name.startswith("observation_"))
VARIANTS = ([["--vdn-mixer", name] for name in MIXERS if name != "vdn"]
            + [["--vdn-q-network", name] for name in Q_NETWORKS if name != "mlp"]
            + [["--" + option.replace("_", "-")] for option in OBSERVATION_OPTIONS] + [["--no-probing"]]
            + [["--vdn-demonstrator", "fastest"],
               ["--vdn-demonstrator", "fastest", "--vdn-demonstration-final-weight", "0"]])


def test_every_lever_is_off_by_default():
    assert VDNConfig().mixer == "vdn" and VDNConfig().q_network == "mlp"
    assert not any(getattr(EnvConfig(), option) for option in OBSERVATION_OPTIONS)
    assert EnvConfig().probing
    assert variant_name(VDNConfig(), EnvConfig()) == "vdn"


def test_the_variant_names_each_lever_that_is_on():
    name = variant_name(VDNConfig(mixer="qmix"), EnvConfig(observation_context=True, probing=False))
    assert name == "qmix+context+no-probing"
    assert variant_name(VDNConfig(q_network="deepsets"), EnvConfig(probing=False)) == "vdn+deepsets+no-probing"
    # a constant and a fading demonstration weight are two learners, two names
    constant = VDNConfig(demonstrator="fastest", demonstration_weight=10.0)
    assert variant_name(constant, EnvConfig()) == "vdn+demonstrated"
    faded = dataclasses.replace(constant, demonstration_final_weight=0.0)
    assert variant_name(faded, EnvConfig(probing=False)) == "vdn+demonstrated+faded+no-probing"


@pytest.mark.parametrize("flags", VARIANTS, ids=lambda flags: "".join(flags).strip("-"))
def test_a_variant_trains_checkpoints_and_evaluates(flags, tmp_path, capsys):
    run = tmp_path / "run"
    assert train_agents.main(["--episodes", "2", "--run-dir", str(run), *TINY_FLAGS, *flags]) == 0
    document = load_checkpoint(run / "checkpoint.pt")
    policy = GreedyPolicy.from_checkpoint(run / "checkpoint.pt")
    assert policy.variant == variant_name(document["vdn_config"], document["env_config"]) != "vdn"
    assert ("mixer_state" in document) is (document["vdn_config"].mixer != "vdn")
    trainer = Trainer(document["env_config"], document["vdn_config"], episodes=2)
    trainer.restore(document)  # the whole training state reads back
    obs, candidate = torch.rand(5, len(document["feature_names"])), torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0])
    torch.testing.assert_close(trainer.learner.q(obs, candidate), policy.q(obs, candidate), rtol=0, atol=0)
    assert (policy.mixer is not None) is acts_jointly(trainer.learner.mixer)
    if policy.mixer is not None:  # the evaluated policy acts with the trained mixer
        for key, value in trainer.learner.mixer.state_dict().items():
            assert torch.equal(policy.mixer.state_dict()[key], value)
    capsys.readouterr()
    out = tmp_path / "eval"
    assert evaluate.main(["--checkpoint", str(run / "checkpoint.pt"), "--policies", "fedavg,vdn", "--seeds", "3",
                          "--no-progress", "--out", str(out)]) == 0
    assert f"vdn: learner variant {policy.variant} (1 checkpoint)" in capsys.readouterr().out
    summary = {row["policy"]: row for row in json.loads((out / "results.json").read_text())["summary"]}
    assert bool(summary["vdn"]["probing"]) is ("--no-probing" not in flags)


def test_checkpoints_of_different_variants_are_not_pooled(tmp_path, capsys):
    paths = []
    for name in MIXERS:
        trainer = Trainer(tiny_config(), VDNConfig(mixer=name), episodes=1)
        paths.append(str(tmp_path / f"{name}.pt"))
        save_checkpoint(paths[-1], trainer.checkpoint())
    with pytest.raises(SystemExit):
        evaluate.main(["--checkpoint", *paths, "--no-progress", "--out", str(tmp_path / "out")])
    assert "hold different learner variants" in capsys.readouterr().err


@pytest.mark.parametrize("name", [n for n in MIXERS if n != "vdn"])
def test_fine_tuning_takes_the_mixer_and_starts_a_fresh_exploration_schedule(name):
    config = VDNConfig(mixer=name, exploration_initial_eps=0.3)
    source = Trainer(tiny_config(), config, episodes=1, seed=1)
    with torch.no_grad():
        for p in source.learner.mixer.parameters():
            p.add_(1.0)
    document = {**source.policy_payload(), "vdn_config": config}
    tuned = Trainer(tiny_config(num_rounds=3), config, episodes=4, seed=2)
    tuned.initialise_from(document)
    for key, value in source.learner.mixer.state_dict().items():
        assert torch.equal(tuned.learner.mixer.state_dict()[key], value)
        assert torch.equal(tuned.learner.target_mixer.state_dict()[key], value)
    assert tuned.episode == 0 and tuned.steps == 0  # the schedule starts again, at exploration_initial_eps
