import pickle

import numpy as np
import pytest
import torch

from agents.checkpoint import load_checkpoint, save_checkpoint
from agents.config import VDNConfig
from agents.policy import GreedyPolicy
from agents.trainer import CHECKPOINT_NAME, train_vdn
from fedenv.config import EnvConfig

TINY = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=2, local_epochs=1, batch_size=64,
                 partition="iid", val_fraction=0.9)
NUMPY_TYPED = {"learning_rate": np.float64(1e-3), "batch_size": np.int64(4), "learning_starts": np.int32(1),
               "hidden": [np.int64(8)], "double_q": np.bool_(True), "gamma": np.float32(0.5)}
OLD_NAMES = {"lr": "learning_rate", "train_interval": "train_freq", "epsilon_start": "exploration_initial_eps",
             "epsilon_end": "exploration_final_eps", "epsilon_fraction": "exploration_fraction"}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A 2-episode run (numpy-typed hyperparameters, episodes and seed, as a sweep passes them)."""
    run_dir = tmp_path_factory.mktemp("run")
    trainer, _ = train_vdn(TINY, VDNConfig(**NUMPY_TYPED), episodes=np.int64(2), seed=np.int64(0), run_dir=run_dir,
                           progress=False)
    return run_dir / CHECKPOINT_NAME, trainer


def test_numpy_typed_hyperparameters_round_trip(checkpoint):
    path, trainer = checkpoint
    document = load_checkpoint(path)
    assert document["vdn_config"] == VDNConfig(learning_rate=1e-3, batch_size=4, learning_starts=1, hidden=(8,),
                                               double_q=True, gamma=0.5)
    assert document["episodes"] == 2 and document["training"]["planned_episodes"] == 2
    policy = GreedyPolicy.from_checkpoint(path)
    for name, tensor in trainer.learner.q.state_dict().items():
        assert torch.equal(policy.q.state_dict()[name], tensor.cpu()), name


def test_a_checkpoint_written_before_the_rename_resumes(checkpoint, tmp_path):
    path, trainer = checkpoint
    document = torch.load(path, weights_only=True)
    renamed = {new: old for old, new in OLD_NAMES.items()}
    document["vdn_config"] = {renamed.get(k, k): v for k, v in document["vdn_config"].items()}
    assert "lr" in document["vdn_config"] and "learning_rate" not in document["vdn_config"]
    torch.save(document, tmp_path / CHECKPOINT_NAME)
    resumed, summaries = train_vdn(TINY, VDNConfig(**NUMPY_TYPED), episodes=2, run_dir=tmp_path, progress=False,
                                   resume=True)
    assert summaries == [] and (resumed.episode, resumed.steps) == (2, trainer.steps)
    for name, tensor in trainer.learner.q.state_dict().items():
        assert torch.equal(resumed.learner.q.state_dict()[name], tensor), name


def test_an_unknown_vdn_field_is_one_line_naming_the_file_and_the_field(checkpoint, tmp_path):
    document = torch.load(checkpoint[0], weights_only=True)
    document["vdn_config"]["momentum"] = 0.9
    torch.save(document, tmp_path / "odd.pt")
    with pytest.raises(ValueError, match=r"odd\.pt: unknown VDNConfig fields \['momentum'\]") as error:
        load_checkpoint(tmp_path / "odd.pt")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("damage", ["truncated", "empty", "text", "pickle", "missing entry"])
def test_damaged_files_and_other_files_raise_value_error_naming_the_file(checkpoint, tmp_path, damage):
    data = checkpoint[0].read_bytes()
    document = torch.load(checkpoint[0], weights_only=True)
    del document["q_state"]
    contents = {"truncated": data[: len(data) // 2], "empty": b"", "text": b"epochs: 3\n",
                "pickle": pickle.dumps({"format": "fedenv-vdn-checkpoint", "x": np.float64(1.0)}, protocol=2)}
    path = tmp_path / "bad.pt"
    if damage == "missing entry":
        torch.save(document, path)
    else:
        path.write_bytes(contents[damage])
    with pytest.raises(ValueError, match=r"bad\.pt (is damaged|is not a fedenv-vdn-checkpoint)") as error:
        load_checkpoint(path)
    assert "\n" not in str(error.value)


def test_a_run_folder_or_its_config_given_as_the_checkpoint_says_what_to_give(checkpoint, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(FileNotFoundError, match=r"^no checkpoint at \S+run$"):  # nothing to suggest
        load_checkpoint(run)
    (run / "checkpoint.pt").write_bytes(checkpoint[0].read_bytes())
    with pytest.raises(FileNotFoundError, match=r"no checkpoint at \S+run: a folder; did you mean \S+checkpoint\.pt\?"):
        load_checkpoint(run)
    (run / "config.json").write_text('{"episodes": 3}')
    with pytest.raises(ValueError, match=r"config\.json is not a fedenv-vdn-checkpoint file \(the checkpoint\.pt or "
                                         r"best\.pt of a train_agents\.py run\): torch\.load"):
        load_checkpoint(run / "config.json")


def test_saving_refuses_values_weights_only_loading_would_refuse(tmp_path):
    with pytest.raises(TypeError, match=r"checkpoint\['training'\]\['seed'\] is a numpy.int64"):
        save_checkpoint(tmp_path / "c.pt", {"training": {"seed": np.int64(3)}})
    assert not (tmp_path / "c.pt").exists()
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "c.pt")
