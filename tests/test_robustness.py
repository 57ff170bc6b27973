"""Crash recovery: a training run killed mid-way (SIGKILL, no chance to clean up) and resumed from its last
checkpoint ends exactly where an uninterrupted run does, and leaves the same TensorBoard scalars
(train_agents.py, agents.checkpoint, agents.tensorboard_log)."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def run_training(run_dir: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "train_agents.py", "--episodes", "12", "--checkpoint-interval", "2", "--eval-interval", "3",
         "--eval-seeds",
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
        if checkpoint.exists() and load_checkpoint(checkpoint)["episodes"] >= 4:
            break
        time.sleep(0.05)
    assert killed.poll() is None, "the run ended before it could be killed; make it longer"
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    interrupted_at = load_checkpoint(checkpoint)["episodes"]
    assert 4 <= interrupted_at < 12
    resumed = subprocess.run([sys.executable, "train_agents.py", "--resume", str(tmp_path / "killed"),
                              "--eval-seeds", "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert whole.wait(timeout=600) == 0
    final_whole, final_resumed = load_checkpoint(tmp_path / "whole" / "checkpoint.pt"), load_checkpoint(checkpoint)
    assert final_whole["episodes"] == final_resumed["episodes"] == 12
    for name, tensor in final_whole["q_state"].items():
        assert torch.equal(tensor, final_resumed["q_state"][name]), name
    assert json.loads((tmp_path / "killed" / "config.json").read_text())["episodes"] == 12
    expected, got = scalars(tmp_path / "whole"), scalars(tmp_path / "killed")
    assert expected.keys() == got.keys() and "eval/team_return" in expected
    for tag in expected:  # nothing lost with the killed process, nothing written twice by the resumed one
        assert [step for step, _ in got[tag]] == [step for step, _ in expected[tag]], tag
        if tag != "charts/SPS":  # a measured rate
            assert [value for _, value in got[tag]] == [value for _, value in expected[tag]], tag


def scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """``tag -> [(step, value)]`` as TensorBoard shows them (events purged on resume left out)."""
    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}
