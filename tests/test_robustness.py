import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import fedenv
from agents.checkpoint import load_checkpoint
from fedenv.aggregation import weighted_average

ROOT = Path(__file__).resolve().parents[1]


def test_c4_fedavg_of_batchnorm_models_keeps_integer_counters():
    def small_cnn(seed):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
        model(torch.randn(4, 1, 6, 6))  # training mode: updates the running statistics
        return model.state_dict()

    states = [small_cnn(0), small_cnn(1)]
    stacked = {name: torch.stack([s[name] for s in states]) for name in states[0]}
    averaged = weighted_average(stacked, torch.tensor([0.25, 0.75]))
    for name in ("1.running_mean", "1.running_var", "0.weight"):
        assert torch.allclose(averaged[name], 0.25 * states[0][name] + 0.75 * states[1][name])
    assert averaged["1.num_batches_tracked"].dtype == torch.int64
    assert int(averaged["1.num_batches_tracked"]) == 1


def test_diverged_clients_are_excluded_and_everything_stays_finite():
    env = fedenv.parallel_env(num_clients=3, clients_per_round=3, num_rounds=2, lr=1e9)
    observations, infos = env.reset(seed=0)
    initial = infos["client_0"]["accuracy"]
    observations, rewards, _, _, infos = env.step({a: 1 for a in env.agents})
    assert all(info["selected"] and info["excluded"] for info in infos.values())
    assert infos["client_0"]["accuracy"] == initial  # no usable upload: the model is unchanged
    assert all(torch.isfinite(p).all() for p in env.simulator.federation.global_params.values())
    assert np.isfinite(rewards["client_0"])
    space = env.observation_space("client_0")
    assert all(space.contains(o) for o in observations.values())


def run_training(run_dir: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "train_agents.py", "--episodes", "12", "--checkpoint-interval", "1", "--eval-seeds",
         "--no-progress", "--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "3",
         "--local-epochs", "1", "--batch-size", "64", "--val-fraction", "0.9", "--partition", "iid",
         "--vdn-learning-starts", "3", "--vdn-batch-size", "8", "--run-dir", str(run_dir), *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_killed_and_resumed_run_ends_with_the_same_weights(tmp_path):
    whole = run_training(tmp_path / "whole")
    killed = run_training(tmp_path / "killed")
    checkpoint = tmp_path / "killed" / "checkpoint.pt"
    deadline = time.time() + 300
    while time.time() < deadline and killed.poll() is None:
        if checkpoint.exists() and load_checkpoint(checkpoint)["episodes"] >= 3:
            break
        time.sleep(0.05)
    assert killed.poll() is None, "the run ended before it could be killed; make it longer"
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    interrupted_at = load_checkpoint(checkpoint)["episodes"]
    assert 3 <= interrupted_at < 12
    resumed = subprocess.run([sys.executable, "train_agents.py", "--resume", str(tmp_path / "killed"),
                              "--eval-seeds", "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert whole.wait(timeout=600) == 0
    final_whole, final_resumed = load_checkpoint(tmp_path / "whole" / "checkpoint.pt"), load_checkpoint(checkpoint)
    assert final_whole["episodes"] == final_resumed["episodes"] == 12
    for name, tensor in final_whole["q_state"].items():
        assert torch.equal(tensor, final_resumed["q_state"][name]), name
    assert json.loads((tmp_path / "killed" / "config.json").read_text())["episodes"] == 12


ACTION = st.one_of(
    st.sampled_from([0, 1]),
    st.sampled_from([np.int8(0), np.int64(1), np.uint8(1), np.int32(0)]),
    st.sampled_from([np.array(0), np.array(1)]),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_clients=st.integers(1, 5),
    per_round_fraction=st.floats(0.01, 1.0),
    num_rounds=st.integers(1, 3),
    local_epochs=st.integers(1, 2),
    partition=st.sampled_from(["fedmarl", "dirichlet", "iid"]),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_fuzzed_configs_and_actions_keep_the_contract(num_clients, per_round_fraction, num_rounds, local_epochs,
                                                       partition, seed, data):
    clients_per_round = max(1, int(round(per_round_fraction * num_clients)))
    env = fedenv.parallel_env(num_clients=num_clients, clients_per_round=clients_per_round, num_rounds=num_rounds,
                              local_epochs=local_epochs, partition=partition, batch_size=64, val_fraction=0.8)
    space = env.observation_space("client_0")
    observations, infos = env.reset(seed=seed)
    for _ in range(num_rounds):
        assert all(space.contains(observations[a]) for a in env.possible_agents)
        present = data.draw(st.lists(st.sampled_from(env.possible_agents), unique=True))
        actions = {agent: data.draw(ACTION) for agent in present}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        assert set(rewards) == set(terminations) == set(truncations) == set(infos) == set(env.possible_agents)
        assert len(set(rewards.values())) == 1 and np.isfinite(rewards["client_0"])
        assert all(type(v) is bool for v in list(terminations.values()) + list(truncations.values()))
    assert env.agents == []
    assert all(truncations.values())
    with pytest.raises(RuntimeError):
        env.step({})


@pytest.mark.parametrize("bad", [2, -1, 0.5, True, np.array([1]), "1", None])
def test_invalid_actions_raise_value_error_naming_the_agent(bad):
    env = fedenv.parallel_env(num_clients=3, clients_per_round=3, num_rounds=1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="client_2"):
        env.step({"client_0": 1, "client_2": bad})
