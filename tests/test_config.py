import dataclasses
import json
import math

import pytest

from fedenv import config as config_module
from fedenv.config import EnvConfig
from tests.helpers import strict_json_loads

GROUPS = {"federation and data", "local training", "aggregation", "traces", "observation and reward", "engine"}


def test_every_field_has_a_description_and_one_of_the_six_groups():
    for f in dataclasses.fields(EnvConfig):
        assert len(f.metadata.get("help", "").split()) >= 5, f.name
        assert f.metadata.get("group") in GROUPS, f.name
    assert {f.metadata["group"] for f in dataclasses.fields(EnvConfig)} == GROUPS


def test_fields_of_one_group_are_contiguous():
    # --help shows the groups in the order the fields first use them; a field declared away from its
    # group's block would still land in its group, but the class would read out of order
    groups = [f.metadata["group"] for f in dataclasses.fields(EnvConfig)]
    blocks = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
    assert len(blocks) == len(set(blocks)) == 6


def test_json_round_trip_keeps_every_field():
    config = EnvConfig(num_clients=7, clients_per_round=3, test_samples=100, round_deadline_s=12.5, download=True)
    assert EnvConfig.from_json(config.to_json()) == config
    assert set(json.loads(config.to_json())) == {f.name for f in dataclasses.fields(EnvConfig)}


def test_json_is_standard_and_reads_back_an_infinite_weight_and_deadline():
    config = EnvConfig(comm_weight=math.inf, round_deadline_s=math.inf).validate()
    assert config.round_deadline_s is None and config == EnvConfig(comm_weight=math.inf)  # inf: no deadline
    saved = strict_json_loads(config.to_json())
    assert saved["comm_weight"] is None and saved["round_deadline_s"] is None
    assert EnvConfig.from_json(config.to_json()) == config  # inf -> null -> inf


def test_from_dict_names_unknown_fields():
    with pytest.raises(ValueError, match=r"unknown EnvConfig fields \['num_client'\]"):
        EnvConfig.from_dict({"num_client": 3})


@pytest.mark.parametrize("field,value,message", [
    ("partition", "shards", "partition='shards' is not known; allowed: fedmarl"),
    ("num_rounds", 0, "num_rounds=0 must be an integer >= 1"),
    ("train_samples", 0, "train_samples=0 must be an integer >= 1 or None"),
    ("test_samples", -2, "test_samples=-2 must be an integer >= 1 or None"),
    ("partition_options", {"fedmarl": {"dominant_fraction": 1.5}},
     "partitioner 'fedmarl' option dominant_fraction=1.5 must be in [0, 1]"),
    ("partition_options", {"xclass": {"samples": 2.5}}, "partitioner 'xclass' option samples=2.5 must be of type int"),
    ("aggregation_options", {"fedadp": {"alpha": 0.0}}, "aggregation rule 'fedadp' option alpha=0.0 must be > 0"),
    ("round_deadline_s", -1.0, "round_deadline_s=-1.0 must be > 0 or None"),
    ("target_accuracy", 1.5, "target_accuracy=1.5 must be in (0, 1] or None"),
])
def test_validate_names_the_field_the_value_and_what_is_allowed(field, value, message):
    with pytest.raises(ValueError) as error:
        EnvConfig(**{field: value}).validate()
    assert message in str(error.value)


def test_group_constants_are_the_groups_used():
    constants = {config_module.FEDERATION, config_module.LOCAL_TRAINING, config_module.AGGREGATION,
                 config_module.TRACES, config_module.OBSERVATION_REWARD, config_module.ENGINE}
    assert constants == GROUPS


def test_numpy_values_become_plain_python_types():
    import numpy as np

    config = EnvConfig(num_clients=np.int64(4), lr=np.float32(0.25), download=np.bool_(True),
                       dataset=np.str_("mnist5k"), round_deadline_s=np.array(2.5), test_samples=None)
    values = [(config.num_clients, int), (config.lr, float), (config.download, bool), (config.dataset, str),
              (config.round_deadline_s, float)]
    assert all(type(value) is kind for value, kind in values)
    assert (config.num_clients, config.lr, config.round_deadline_s) == (4, 0.25, 2.5)
    assert EnvConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize("field,value,message", [
    ("num_clients", "3", "num_clients='3' must be of type int, not str"),
    ("download", "false", "download='false' must be of type bool, not str"),
    ("lr", True, "lr=True must be of type float, not bool"),
    ("round_deadline_s", "soon", "round_deadline_s='soon' must be of type float or None, not str"),
    ("dataset", 3, "dataset=3 must be of type str, not int"),
])
def test_wrong_types_are_refused_on_construction_naming_the_field(field, value, message):
    with pytest.raises(ValueError) as error:
        EnvConfig(**{field: value})
    assert message in str(error.value)
    with pytest.raises(ValueError):
        EnvConfig.from_dict({field: value})


@pytest.mark.parametrize(("old", "options"), [
    ({"fedadp_alpha": 3.0}, {"fedadp": {"alpha": 3.0}}),
    ({"aggregation": "fedca", "fedca_score": "acc"}, {"fedca": {"score": "acc"}}),
    ({"fedpdp_unnormalised": True}, {"fedpdp": {"unnormalised": True}, "fedca": {"unnormalised": True}}),
    ({"fedadp_alpha": 5.0, "fedca_score": "ce", "fedpdp_unnormalised": False}, {}),  # the defaults: nothing to keep
])
def test_flat_keys_of_earlier_releases_load_as_component_options(old, options):
    config = EnvConfig.from_dict(old).validate()
    assert config.aggregation_options == options
    assert EnvConfig.from_dict({**old, "aggregation_options": {"fedadp": {"alpha": 7.0}}}).aggregation_options[
        "fedadp"]["alpha"] == 7.0  # options given in the new form win over an old key


def test_a_checkpoint_of_an_earlier_release_restores_its_rule_options(tmp_path):
    import torch

    from agents.checkpoint import CHECKPOINT_FORMAT, CHECKPOINT_VERSION, load_checkpoint

    old = {k: v for k, v in EnvConfig(aggregation="fedadp").to_dict().items() if not k.endswith("_options")}
    old["fedadp_alpha"] = 2.5
    path = tmp_path / "old.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "q_state": {}, "vdn_config": {},
                "env_config": old, "feature_names": []}, path)
    assert load_checkpoint(path)["env_config"].component_options("aggregation").alpha == 2.5


def test_the_fused_engine_of_release_0_1_loads_as_auto_which_takes_its_path_and_the_flag_refuses_it():
    from fedenv.engine import batched_grad_fn
    from fedenv.models import MLP

    config = EnvConfig.from_dict({"engine": "fused"})
    assert config.engine == "auto"
    assert hasattr(batched_grad_fn(MLP((1, 28, 28), 10), config.engine), "sgd_step")  # the fused step fused's runs took
    with pytest.raises(ValueError, match="engine='fused' is not known; allowed: auto, unfused, vmap"):
        EnvConfig(engine="fused").validate()
