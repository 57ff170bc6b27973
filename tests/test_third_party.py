import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import evaluate
from fedenv.config import EnvConfig

ROOT = Path(__file__).resolve().parents[1]
TINY = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=3, local_epochs=1, batch_size=64,
                 partition="iid", val_fraction=0.9)
TINY_FLAGS = ["--num-rounds", "3", "--num-clients", "3", "--eval-episodes", "1"]


def test_c10_ppo_with_seed_truncation_flag_and_episode_statistics(tmp_path):
    from stable_baselines3 import PPO
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from fedenv.wrappers import sb3_vec_env

    venv = sb3_vec_env(TINY, num_envs=2)
    assert venv.num_envs == 6
    model = PPO("MlpPolicy", venv, seed=0, n_steps=9, batch_size=18, n_epochs=1, tensorboard_log=str(tmp_path))
    model.learn(total_timesteps=216)  # 12 episodes of each federation: a few hundred agent steps
    run = next(tmp_path.iterdir())
    accumulator = EventAccumulator(str(run))
    accumulator.Reload()
    assert "rollout/ep_rew_mean" in accumulator.Tags()["scalars"]
    venv.seed(5)
    first = venv.reset()
    venv.seed(5)
    assert np.array_equal(first, venv.reset())  # seeding reaches the federations
    for round_index in range(3):
        observations, rewards, dones, infos = venv.step(np.ones(6, dtype=np.int64))
        assert dones.all() == (round_index == 2)
    assert all(info["TimeLimit.truncated"] is True and "terminal_observation" in info for info in infos)
    assert np.allclose(rewards[:3], rewards[0]) and np.allclose(rewards[3:], rewards[3])  # one team reward per federation


def test_flat_observation_keeps_the_mask_for_maskable_ppo():
    from fedenv.wrappers import sb3_vec_env

    venv = sb3_vec_env(TINY.__class__(**{**TINY.to_dict(), "clients_per_round": 2}), num_envs=1)
    observations = venv.reset()
    masks = venv.env_method("action_masks")
    assert np.array_equal(np.stack(masks), observations[:, -2:] > 0.5)
    assert sum(m[1] for m in masks) == 2 and all(m[0] for m in masks)


def test_torchrl_wrapper_passes_check_env_specs_and_keeps_every_info_key():
    from torchrl.envs.utils import check_env_specs

    from fedenv.env import INFO_KEYS
    from fedenv.wrappers import torchrl_env

    env = torchrl_env(TINY, seed=0)
    check_env_specs(env)
    assert {key for key in env.observation_spec["agents", "info"].keys()} == set(INFO_KEYS)
    rollout = env.rollout(3)
    assert rollout["next", "agents", "info", "accuracy"].shape == (3, 3)
    assert rollout["next", "truncated"][-1].all()


def run_example(name, out, *extra):
    completed = subprocess.run([sys.executable, f"examples/{name}.py", "--out", str(out), *TINY_FLAGS, *extra],
                               cwd=ROOT, capture_output=True, text=True, timeout=900,
                               env={**os.environ, "WANDB_MODE": "disabled"})
    assert completed.returncode == 0, completed.stderr[-3000:]
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert {row["policy"] for row in rows} >= {"fedavg", "random"}
    return completed.stdout, rows


@pytest.mark.slow
def test_sb3_ppo_example_and_evaluate_py_with_its_policy(tmp_path, capsys):
    stdout, rows = run_example("sb3_ppo", tmp_path / "ppo", "--episodes", "4")
    assert "sb3-ppo" in {row["policy"] for row in rows}
    assert (tmp_path / "ppo" / "policy" / "model.zip").is_file()
    assert evaluate.main(["--sb3", str(tmp_path / "ppo" / "policy"), "--policies", "fedavg,random,oort",
                          "--episodes", "1", "--out", str(tmp_path / "eval"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    for policy in ("fedavg", "random", "oort", "sb3-ppo"):
        assert f"\n{policy} " in printed


@pytest.mark.slow
def test_sb3_dqn_example(tmp_path):
    _, rows = run_example("sb3_dqn", tmp_path / "dqn", "--episodes", "4")
    assert "sb3-dqn" in {row["policy"] for row in rows}


@pytest.mark.slow
def test_benchmarl_vdn_example(tmp_path):
    _, rows = run_example("benchmarl_vdn", tmp_path / "bm", "--frames", "30")
    assert "benchmarl-vdn" in {row["policy"] for row in rows}
