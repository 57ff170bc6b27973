import argparse
import dataclasses
import json
import math

import numpy as np
import pytest

import train_agents
from agents.config import VDNConfig
from fedenv.cli import add_dataclass_arguments, dataclass_from_args
from fedenv.config import EnvConfig
from fedenv.fileio import json_text
from tests.helpers import strict_json_loads

# the hyperparameters of stable_baselines3.dqn.DQN that VDNConfig shares (same meaning, same name)
SB3_DQN_NAMES = ("learning_rate", "buffer_size", "learning_starts", "batch_size", "gamma", "train_freq",
                 "gradient_steps", "target_update_interval", "exploration_fraction", "exploration_initial_eps",
                 "exploration_final_eps", "max_grad_norm")

# a VDN configuration as written by train_agents.py before the rename (config.json, checkpoint.pt)
OLD_NAMES = {"hidden": [32], "lr": 1e-3, "gamma": 0.9, "n_step": 2, "batch_size": 16, "buffer_size": 1000,
             "learning_starts": 10, "train_interval": 2, "gradient_steps": 1, "target_update_interval": 50,
             "epsilon_start": 0.9, "epsilon_end": 0.1, "epsilon_fraction": 0.3, "max_grad_norm": 5.0,
             "double_q": False, "reward_scale": 2.0}
NEW_NAMES = VDNConfig(hidden=(32,), learning_rate=1e-3, gamma=0.9, n_step=2, batch_size=16, buffer_size=1000,
                      learning_starts=10, train_freq=2, gradient_steps=1, target_update_interval=50,
                      exploration_initial_eps=0.9, exploration_final_eps=0.1, exploration_fraction=0.3,
                      max_grad_norm=5.0, double_q=False, reward_scale=2.0)


def test_fields_use_the_sb3_names_and_every_field_has_help():
    fields = {f.name: f for f in dataclasses.fields(VDNConfig)}
    assert set(SB3_DQN_NAMES) <= set(fields)
    assert set(fields) - set(SB3_DQN_NAMES) == {"n_step", "double_q", "hidden", "reward_scale", "mixer", "q_network",
                                                "mixing_embed_dim", "prioritized_replay", "prioritized_replay_alpha",
                                                "prioritized_replay_beta", "prioritized_replay_eps",
                                                "exploration_uploads", "demonstrator", "demonstration_margin",
                                                "demonstration_weight", "demonstration_final_weight", "input_features"}
    for name, f in fields.items():
        assert len(f.metadata.get("help", "")) > 20, name
    assert "n_steps" in fields["n_step"].metadata["help"]  # says why it is not SB3's n_steps


def test_an_infinite_gradient_norm_reads_back_from_standard_json():
    config = VDNConfig(max_grad_norm=math.inf).validate()  # no clipping
    saved = strict_json_loads(json_text(config.to_dict()))
    assert saved["max_grad_norm"] is None and VDNConfig.from_dict(saved) == config


def test_old_names_are_read_as_the_new_ones():
    assert VDNConfig.from_dict(OLD_NAMES) == NEW_NAMES
    assert VDNConfig.from_dict(NEW_NAMES.to_dict()) == NEW_NAMES
    with pytest.raises(ValueError, match="'learning_rate' is given twice"):
        VDNConfig.from_dict({"lr": 1e-3, "learning_rate": 1e-3})
    with pytest.raises(ValueError, match=r"unknown VDNConfig fields \['momentum'\]"):
        VDNConfig.from_dict({"momentum": 0.9})


def test_a_run_folder_written_before_the_rename_still_resumes(tmp_path):
    env = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=2)
    (tmp_path / "config.json").write_text(json.dumps({"episodes": 4, "seed": 1, "env": env.to_dict(),
                                                      "vdn": OLD_NAMES}))
    assert train_agents.read_run_config(tmp_path) == (env, NEW_NAMES, 4, 1)


def test_flags_follow_the_field_names():
    args = train_agents.build_parser().parse_args(["--vdn-learning-rate", "0.002", "--vdn-train-freq", "3",
                                                   "--vdn-exploration-final-eps", "0.2", "--vdn-hidden", "8", "8"])
    config = dataclass_from_args(VDNConfig, args, prefix="vdn-")
    assert (config.learning_rate, config.train_freq, config.exploration_final_eps) == (0.002, 3, 0.2)
    assert config.hidden == (8, 8)


def test_numpy_values_become_plain_python_types():
    config = VDNConfig(learning_rate=np.float64(1e-3), batch_size=np.int64(16), double_q=np.bool_(False),
                       hidden=[np.int32(8), 4], gamma=np.array(0.5), max_grad_norm=3)
    assert config == VDNConfig(learning_rate=1e-3, batch_size=16, double_q=False, hidden=(8, 4), gamma=0.5,
                               max_grad_norm=3.0)
    values = config.to_dict()
    assert [type(values[k]) for k in ("learning_rate", "batch_size", "double_q", "gamma", "max_grad_norm")] == [
        float, int, bool, float, float]
    assert [type(h) for h in values["hidden"]] == [int, int]
    assert type(dataclasses.replace(config, train_freq=np.int16(2)).train_freq) is int


@pytest.mark.parametrize("name, value", [("batch_size", 16.0), ("learning_rate", "1e-3"), ("double_q", 1),
                                         ("n_step", True), ("hidden", 64), ("hidden", (64, 1.5)),
                                         ("gamma", None)])
def test_wrong_types_raise_value_error_naming_the_field(name, value):
    with pytest.raises(ValueError, match=f"vdn {name}="):
        VDNConfig(**{name: value})


@pytest.mark.parametrize("name, value, allowed", [("n_step", 0, ">= 1"), ("gamma", 1.5, r"in \[0, 1\]"),
                                                  ("exploration_fraction", -0.1, r"in \[0, 1\]"),
                                                  ("learning_rate", 0.0, "> 0"), ("hidden", (), "positive"),
                                                  ("learning_starts", -1, ">= 0")])
def test_validate_names_the_field_and_what_is_allowed(name, value, allowed):
    with pytest.raises(ValueError, match=f"vdn {name}=.*{allowed}"):
        VDNConfig(**{name: value}).validate()


def test_input_features_are_distinct_names_and_read_from_the_command_line():
    with pytest.raises(ValueError, match=r"input_features=.*must be distinct, non-empty feature names"):
        VDNConfig(input_features=("round_fraction", "round_fraction")).validate()
    with pytest.raises(ValueError, match="must be a sequence of strings"):
        VDNConfig(input_features="round_fraction")
    parser = argparse.ArgumentParser()
    add_dataclass_arguments(parser, VDNConfig, prefix="vdn-")
    args = parser.parse_args(["--vdn-input-features", "round_fraction", "data_size"])
    config = dataclass_from_args(VDNConfig, args, prefix="vdn-")
    assert config.input_features == ("round_fraction", "data_size")
    assert VDNConfig.from_dict(config.to_dict()) == config
