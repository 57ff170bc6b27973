"""The example scripts (examples/): each trains briefly with a third-party library, then compares its policy
with the baselines, and evaluate.py loads the saved SB3 policy."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

import evaluate

ROOT = Path(__file__).resolve().parents[1]
TINY_FLAGS = ["--num-rounds", "3", "--num-clients", "3", "--eval-episodes", "1"]


def run_example(name, out, *extra):
    completed = subprocess.run([sys.executable, f"examples/{name}.py", "--out", str(out), *TINY_FLAGS, *extra],
                               check=False, cwd=ROOT, capture_output=True, text=True, timeout=900,
                               # PYTHONPATH: this checkout's fedenv
                               env={**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)})
    assert completed.returncode == 0, completed.stderr[-3000:]
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert {row["policy"] for row in rows} >= {"fedavg", "random"}
    return completed.stdout, rows


@pytest.mark.slow
def test_sb3_ppo_example_and_evaluate_py_with_its_policy(tmp_path, capsys):
    stdout, rows = run_example("sb3_ppo", tmp_path / "ppo", "--episodes", "4")
    assert "sb3-ppo" in {row["policy"] for row in rows}
    assert "4 training episodes: a smoke test, too short to learn" in stdout
    assert "sb3: episode 4/4, team return" in stdout  # the progress callback saw the 4th episode end
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
