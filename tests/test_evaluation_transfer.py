"""Transfer reporting and pooled checkpoints: which EnvConfig fields differ, and when checkpoints mix."""

import pytest

from fedenv.config import EnvConfig
from fedenv.evaluation import config_differences, describe_transfer, shared_training_config


def test_only_the_differing_fields_are_reported_and_harmless_ones_are_not():
    trained = EnvConfig(num_clients=10, clients_per_round=10, device="cpu")
    evaluated = EnvConfig(num_clients=40, clients_per_round=10, device="cuda")
    differences = config_differences(trained, evaluated)
    assert differences == {"trained_on": {"num_clients": 10}, "evaluated_on": {"num_clients": 40}}
    assert describe_transfer(differences) == "trained on num_clients=10; evaluated on num_clients=40"
    assert config_differences(trained, trained) == {"trained_on": {}, "evaluated_on": {}}
    assert "trained in" in describe_transfer(config_differences(trained, trained))


def test_checkpoints_of_one_environment_pool_and_others_are_refused():
    a, b = EnvConfig(device="cpu"), EnvConfig(device="cuda", data_root="/data")
    assert shared_training_config([a, b], ["a.pt", "b.pt"]) is a
    with pytest.raises(ValueError, match=r"a.pt and c.pt .*num_rounds=20 vs 5"):
        shared_training_config([a, b, EnvConfig(num_rounds=5)], ["a.pt", "b.pt", "c.pt"])
