"""benchmarks/bench_scale.py --quick runs to the end on a local 2-CPU Ray cluster and reports what it measured."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fedenv.baselines import compared_policies

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quick_run_reports_threads_ratios_against_the_bars_and_identical_records():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("OMP_NUM_THREADS", None)  # the script sets one thread here; Ray sets it in the workers
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_scale", "--quick"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "this process: torch threads 1 (inter-op 1)" in out
    assert "warm-up played in this process and in 2 Ray worker processes (torch threads [1, 1])" in out
    assert f"{len(compared_policies())} policies x 2 seeds" in out  # evaluate.py --policies all
    assert re.search(r"speed-up \d+\.\d\dx \(bar 1\.6x: (met|NOT met)\); identical records: True", out)
    assert re.search(r"2 rollout actors \(torch threads \[1, 1\]\) .* speed-up \d+\.\d\dx \(bar 1\.5x: (met|NOT met)\)",
                     out)
    assert out.count("load average") >= 3
