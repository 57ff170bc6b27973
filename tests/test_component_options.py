"""Typed component options (fedenv.options): a rule with one option and a partitioner with one option,
each one class and one registration call in this file, are usable from evaluate.py's flags, --help and
config files, with no edit of fedenv/config.py; their options are checked, serialised and refused by name."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pytest

import evaluate
from fedenv.aggregation import AggregationRule
from fedenv.aggregation.fedavg import fedavg_weights
from fedenv.cli import parse_with_config_file
from fedenv.config import EnvConfig
from fedenv.options import option
from fedenv.registry import AGGREGATION_RULES, PARTITIONERS

TINY = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--device", "cpu",
        "--test-samples", "100", "--seeds", "5", "--no-progress"]
SEEN: dict[str, list] = {"shrink": [], "offset": []}


@dataclass(frozen=True)
class ShrinkOptions:
    factor: float = option(1.0, "multiplier of every FedAvg weight", low=0.0, high=1.0, low_open=True)


class Shrink(AggregationRule):
    """FedAvg with its weights multiplied by ``factor``."""

    Options = ShrinkOptions

    def __init__(self, data_sizes, config):
        super().__init__(data_sizes, config)
        self.factor = config.component_options("aggregation").factor
        SEEN["shrink"].append(self.factor)

    def weights(self, uploads):
        return np.arange(len(uploads.clients)), self.factor * fedavg_weights(uploads.data_sizes)


@dataclass(frozen=True)
class StridedOptions:
    offset: int = option(0, "first pool sample dealt out", low=0)


class Strided:
    """Client k gets pool samples offset + k, offset + k + K, ..."""

    Options = StridedOptions

    def __call__(self, labels, owners, num_clients, rng, config):
        offset = config.component_options("partition").offset
        SEEN["offset"].append(offset)
        return [np.arange(offset + k, len(labels), num_clients) for k in range(num_clients)]


@pytest.fixture
def toy_components():
    AGGREGATION_RULES.register("toy-shrink", Shrink)
    PARTITIONERS.register("toy-strided", Strided())
    for seen in SEEN.values():
        seen.clear()
    yield
    AGGREGATION_RULES.unregister("toy-shrink")
    PARTITIONERS.unregister("toy-strided")


def test_the_options_are_flags_with_their_help_and_range(toy_components):
    text = " ".join(evaluate.build_parser().format_help().split())
    assert "aggregation rule toy-shrink options: used wherever aggregation toy-shrink runs" in text
    assert "--toy-shrink-factor TOY_SHRINK_FACTOR multiplier of every FedAvg weight; in (0, 1] (default: 1.0)" in text
    assert "--toy-strided-offset TOY_STRIDED_OFFSET first pool sample dealt out; >= 0 (default: 0)" in text


def test_evaluate_runs_the_components_with_the_options_given(toy_components, tmp_path, capsys):
    assert evaluate.main(["--policies", "select-all", "--aggregation", "toy-shrink", "--toy-shrink-factor", "0.5",
                          "--partition", "toy-strided", "--toy-strided-offset", "2", *TINY,
                          "--out", str(tmp_path)]) == 0
    assert SEEN["shrink"] and set(SEEN["shrink"]) == {0.5}
    assert SEEN["offset"] and set(SEEN["offset"]) == {2}
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["env_config"]["aggregation_options"] == {"toy-shrink": {"factor": 0.5}}
    assert document["env_config"]["partition_options"] == {"toy-strided": {"offset": 2}}
    assert "note:" not in capsys.readouterr().out  # select-all runs the rule given


def test_a_config_file_key_sets_an_option(toy_components, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("aggregation: toy-shrink\ntoy_shrink_factor: 0.25\n")
    args = parse_with_config_file(evaluate.build_parser(), ["--config", str(path)])
    assert (args.aggregation, args.toy_shrink_factor) == ("toy-shrink", 0.25)


@pytest.mark.parametrize(("flags", "message"), [
    (["--aggregation", "toy-shrink", "--toy-shrink-factor", "0"],
     r"aggregation rule 'toy-shrink' option factor=0.0 must be in \(0, 1\]"),
    (["--partition", "toy-strided", "--toy-strided-offset", "-1"],
     r"partitioner 'toy-strided' option offset=-1 must be >= 0"),
])
def test_bad_options_are_usage_errors_naming_the_value(toy_components, flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["--policies", "select-all", *flags, *TINY, "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_options_survive_json_and_unknown_ones_are_refused(toy_components):
    config = EnvConfig(aggregation="toy-shrink", aggregation_options={"toy-shrink": {"factor": 0.75}}).validate()
    again = EnvConfig.from_json(config.to_json())
    assert again == config and again.component_options("aggregation") == ShrinkOptions(0.75)
    assert EnvConfig(aggregation="toy-shrink").component_options("aggregation") == ShrinkOptions(1.0)
    with pytest.raises(ValueError, match=r"aggregation rule 'toy-shrink' takes no option 'scale'; it takes: factor"):
        EnvConfig(aggregation="toy-shrink", aggregation_options={"toy-shrink": {"scale": 2.0}}).validate()
    with pytest.raises(ValueError, match="aggregation_options names 'toy-grow', which is not a known aggregation rule"):
        EnvConfig(aggregation_options={"toy-grow": {}}).validate()
    with pytest.raises(ValueError, match="aggregation_options=3 must be a mapping"):
        EnvConfig(aggregation_options=3)


def test_options_given_for_a_rule_no_policy_runs_are_stated(toy_components, tmp_path, capsys):
    assert evaluate.main(["--policies", "fedavg", "--toy-shrink-factor", "0.5", *TINY, "--out", str(tmp_path)]) == 0
    assert "note: options given for aggregation rule 'toy-shrink', which no policy runs: {'factor': 0.5}" in \
        capsys.readouterr().out
    assert SEEN["shrink"] == []


def test_config_files_of_earlier_releases_set_the_options_their_flat_keys_became(tmp_path):
    from fedenv.cli import env_config_from_args

    path = tmp_path / "old.yaml"
    path.write_text("partition: xclass\nxclass_samples: 300\ndominant_fraction: 0.6\nfedpdp_unnormalised: true\n"
                    "fedca_score: acc\n")
    args = parse_with_config_file(evaluate.build_parser(), ["--config", str(path)])
    assert (args.xclass_samples, args.fedmarl_dominant_fraction) == (300, 0.6)
    assert args.fedpdp_unnormalised is True and args.fedca_unnormalised is True and args.fedca_score == "acc"
    config = env_config_from_args(args)
    assert config.component_options("partition").samples == 300
    assert config.partition_options["fedmarl"] == {"dominant_fraction": 0.6}
    assert config.aggregation_options == {"fedpdp": {"unnormalised": True},
                                          "fedca": {"score": "acc", "unnormalised": True}}


def test_resume_refuses_component_option_flags(tmp_path, capsys):
    import train_agents

    with pytest.raises(SystemExit) as exit_info:
        train_agents.main(["--resume", str(tmp_path), "--dirichlet-alpha", "0.3", "--fedca-score", "acc"])
    assert exit_info.value.code == 2
    assert "drop --dirichlet-alpha, --fedca-score" in capsys.readouterr().err


def test_train_agents_refuses_options_of_a_component_it_does_not_run(tmp_path, capsys):
    import train_agents

    with pytest.raises(SystemExit) as exit_info:
        train_agents.main(["--fedca-score", "acc", "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert exit_info.value.code == 2
    assert ("--fedca-score: options of aggregation rule 'fedca', but aggregation='fedavg'; give --aggregation fedca"
            in capsys.readouterr().err)
    assert not (tmp_path / "run").exists()
