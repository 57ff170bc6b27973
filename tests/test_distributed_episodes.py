"""Evaluation and calibration on a 2-CPU local Ray cluster give the local numbers; without the Ray flags
nothing imports Ray."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

import evaluate  # noqa: E402
from fedenv.calibration import calibrate_weights  # noqa: E402
from fedenv.distributed import RayOptions, ray_options_from_args  # noqa: E402
from fedenv.distributed.episodes import calibrate_weights_on_ray  # noqa: E402
from tests.helpers import tiny_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY_FLAGS = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--device", "cpu",
              "--test-samples", "200"]
LOCAL_CLUSTER = ["--ray-address", "local", "--num-workers", "2"]


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU local Ray cluster shared by this file's tests."""
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def test_evaluate_on_two_workers_writes_the_local_results(cluster, tmp_path, capsys):
    flags = TINY_FLAGS + ["--policies", "fedavg,random,oort", "--seeds", "1000", "1001", "--no-progress"]
    assert evaluate.main(flags + ["--out", str(tmp_path / "local")]) == 0
    assert evaluate.main(flags + LOCAL_CLUSTER + ["--out", str(tmp_path / "ray")]) == 0
    local, remote = (json.loads((tmp_path / name / "results.json").read_text()) for name in ("local", "ray"))
    assert remote["records"] == local["records"]
    assert remote["summary"] == local["summary"]
    assert [r["seed"] for r in remote["records"]["oort"]] == [1000, 1001]
    assert (tmp_path / "ray" / "results.csv").read_text() == (tmp_path / "local" / "results.csv").read_text()


def test_calibration_on_two_workers_gives_the_local_weights(cluster):
    config = tiny_config()
    local = calibrate_weights(config, [10000, 10001, 10002], 0.25)
    remote = calibrate_weights_on_ray(config, [10000, 10001, 10002], 0.25, RayOptions("local", 2))
    assert remote == local


def test_calibrate_command_on_two_workers_prints_the_local_weights(cluster, capsys):
    from fedenv.calibrate import main

    main(TINY_FLAGS + ["--seeds", "10000", "10001"])
    local = capsys.readouterr().out
    main(TINY_FLAGS + ["--seeds", "10000", "10001"] + LOCAL_CLUSTER)
    assert capsys.readouterr().out == local


@pytest.mark.parametrize("flags, message", [
    (["--ray-address", "yarn"], "allowed are local, auto or ray://host:port"),
    (["--ray-address", "local", "--num-workers", "0"], "--num-workers=0 must be >= 1"),
    (["--ray-address", "local", "--worker-gpus", "-0.5"], "--worker-gpus=-0.5 must be >= 0"),
    (["--num-workers", "2"], "--num-workers, --worker-gpus and --sync need --ray-address"),
])
def test_bad_ray_flags_are_refused_with_the_value(flags, message):
    args = evaluate.build_parser().parse_args(flags)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ray_options_from_args(args)


def test_without_the_ray_flags_nothing_imports_ray(tmp_path):
    script = f"""
import sys
import evaluate, train_agents
from fedenv import calibrate
for module in (evaluate, train_agents, calibrate):
    module.build_parser().parse_args([])
calibrate.main({TINY_FLAGS + ['--seeds', '10000']!r})
evaluate.main({TINY_FLAGS + ['--policies', 'fedavg', '--episodes', '1', '--no-progress', '--out', str(tmp_path)]!r})
assert "ray" not in sys.modules, "ray was imported"
print("no ray")
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("no ray")
