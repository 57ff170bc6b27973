"""A baseline is a method (policy, aggregation rule with its options, local-training settings), resolved
once per policy: a setting given that the method replaces is stated, and results.json records what each
policy ran."""

import json

import pytest

import evaluate
from fedenv.baselines import make_policy
from fedenv.config import EnvConfig
from fedenv.evaluation.compare import describe_overrides, method_overrides, policy_config

TINY = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--device", "cpu",
        "--test-samples", "100", "--seeds", "5", "--no-progress"]


def test_a_method_replacing_a_given_rule_says_so_and_records_it(tmp_path, capsys):
    assert evaluate.main(["--policies", "fedavg,select-all", "--aggregation", "fedadp", *TINY,
                          "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("note: fedavg runs aggregation='fedavg' (its method), not the aggregation='fedadp' given; "
            "policy select-all runs the rule given") in out
    assert "note: select-all" not in out
    methods = json.loads((tmp_path / "results.json").read_text())["methods"]
    assert methods["fedavg"] == {"ran": {"aggregation": "fedavg", "probing": False},
                                 "overridden": {"aggregation": {"given": "fedadp", "used": "fedavg"}}}
    assert methods["select-all"] == {"ran": {"probing": False}, "overridden": {}}  # FedAdp under select-all


def test_defaults_replaced_by_a_method_are_not_reported_but_recorded(tmp_path, capsys):
    assert evaluate.main(["--policies", "fedadp", *TINY, "--out", str(tmp_path)]) == 0
    assert "note:" not in capsys.readouterr().out
    methods = json.loads((tmp_path / "results.json").read_text())["methods"]
    assert methods["fedadp"] == {"ran": {"aggregation": "fedadp", "lr_decay": 0.995, "probing": False},
                                 "overridden": {}}


def test_local_training_settings_given_are_reported_when_replaced():
    given = EnvConfig(fedprox_mu=0.5, lr_decay=0.9)
    assert method_overrides(given, make_policy("fedprox")) == {"fedprox_mu": {"given": 0.5, "used": 0.1}}
    assert method_overrides(given, make_policy("fedavg")) == {}
    overridden = method_overrides(given, make_policy("fedadp"))
    assert overridden == {"lr_decay": {"given": 0.9, "used": 0.995}}
    assert describe_overrides("fedadp", overridden) == \
        "fedadp runs lr_decay=0.995 (its method), not the lr_decay=0.9 given"


def test_a_method_runs_its_rule_with_the_options_given_for_that_rule():
    given = EnvConfig(aggregation="trimmed-mean", aggregation_options={"trimmed-mean": {"beta": 0.3},
                                                                       "fedca": {"score": "acc"}})
    fedca = policy_config(given, make_policy("fedca")).validate()
    assert fedca.aggregation == "fedca" and fedca.component_options("aggregation").score == "acc"


@pytest.mark.parametrize("name", ["select-all", "random"])
def test_a_policy_without_a_rule_keeps_the_rule_and_options_given(name):
    trimmed = EnvConfig(aggregation="trimmed-mean", aggregation_options={"trimmed-mean": {"beta": 0.3}})
    assert policy_config(trimmed, make_policy(name)).component_options("aggregation").beta == 0.3
    assert method_overrides(trimmed, make_policy(name)) == {}
