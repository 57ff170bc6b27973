"""A Ray cluster smaller than asked for (ray-project/ray #6047, #35495): training, evaluation and calibration
refuse it with one line naming --num-workers and the cluster's CPUs, instead of waiting for ever on workers
that cannot be placed."""

import subprocess
import sys
from pathlib import Path

import pytest

from fedenv.distributed import RayOptions
from fedenv.distributed.cluster import check_cluster

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]
TINY_FLAGS = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--device", "cpu",
              "--test-samples", "200"]
ON_RAY = """
import importlib, sys
import ray
ray.init(num_cpus=1, include_dashboard=False)  # Ray already running on 1 CPU when the entry point starts
sys.exit(importlib.import_module(sys.argv[1]).main(sys.argv[2:]))
"""
TOO_MANY = ("--num-workers=2: the Ray cluster (--ray-address local) has 1 CPUs and every worker takes one; give "
            "--num-workers 1 or fewer (or a larger cluster)")


def run_on_one_cpu(module: str, argv: list[str]) -> subprocess.CompletedProcess:
    """``module.main(argv)`` in a fresh process whose Ray runs on 1 CPU; killed after 300 s (a hang fails)."""
    return subprocess.run([sys.executable, "-c", ON_RAY, module, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("module,argv", [
    ("train_agents", ["--episodes", "2", "--eval-seeds", "--no-progress", "--sync"]),
    ("train_agents", ["--episodes", "2", "--eval-seeds", "--no-progress"]),  # the asynchronous mode
    ("evaluate", ["--policies", "fedavg", "--episodes", "2", "--no-progress"]),
    ("fedenv.calibrate", ["--seeds", "10000", "10001"]),
])
def test_more_workers_than_the_running_cluster_has_cpus_is_a_usage_error(module, argv, tmp_path):
    out = ["--run-dir", str(tmp_path / "out")] if module == "train_agents" else (
        ["--out", str(tmp_path / "out")] if module == "evaluate" else [])
    result = run_on_one_cpu(module, [*argv, *TINY_FLAGS, *out, "--ray-address", "local", "--num-workers", "2"])
    assert result.returncode == 2, result.stderr
    [line] = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert line.endswith(f": error: {TOO_MANY}")
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_a_cluster_is_checked_against_workers_and_gpus():
    assert check_cluster(RayOptions("auto", num_workers=3), 3.0, 0.0) == 3
    assert check_cluster(RayOptions("auto"), 2.5, 0.0) == 2  # the default: one worker per whole CPU
    assert check_cluster(RayOptions("auto", num_workers=4, worker_gpus=0.25), 4.0, 1.0) == 4
    with pytest.raises(ValueError, match=r"^--num-workers=4: the Ray cluster \(--ray-address auto\) has 3 CPUs"):
        check_cluster(RayOptions("auto", num_workers=4), 3.0, 0.0)
    with pytest.raises(ValueError, match=r"^the Ray cluster \(--ray-address auto\) has 0 CPUs; every worker needs one"):
        check_cluster(RayOptions("auto"), 0.0, 0.0)
    with pytest.raises(ValueError, match=r"^--worker-gpus=0.5: the Ray cluster \(--ray-address auto\) has 0 GPUs"):
        check_cluster(RayOptions("auto", worker_gpus=0.5), 4.0, 0.0)
