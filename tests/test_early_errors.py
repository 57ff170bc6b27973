"""A configuration the federation cannot serve (here an xclass partition short of samples) is refused
with a one-line usage error before any entry point prints or writes anything (train_agents.py,
evaluate.py, python -m fedenv.calibrate)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INFEASIBLE_XCLASS = ["--partition", "xclass", "--num-clients", "5", "--clients-per-round", "5",
                     "--xclass-samples", "600"]
"""Five clients of 600 samples each, most of one class: mnist5k's pool holds fewer of some class."""

ENTRY_POINTS = [
    pytest.param([sys.executable, str(ROOT / "train_agents.py"), "--run-dir", "made"], "train_agents.py",
                 id="train_agents"),
    pytest.param([sys.executable, str(ROOT / "evaluate.py"), "--out", "made", "--episodes", "1"], "evaluate.py",
                 id="evaluate"),
    pytest.param([sys.executable, "-m", "fedenv.calibrate", "--seeds", "1"], "python -m fedenv.calibrate",
                 id="calibrate"),
]


@pytest.mark.parametrize("command, prog", ENTRY_POINTS)
def test_an_infeasible_partition_is_refused_before_anything_is_printed_or_written(command, prog, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*command, *INFEASIBLE_XCLASS], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"usage: {prog} [options]",
        # mnist5k holds 400 training images per class; the 25 % validation split leaves 300 in the pool
        f"{prog}: error: partition needs 600 samples of class 0 but the pool holds 300 (short by 300); "
        "lower the client sizes or the dominant fraction",
        f"Try '{prog} --help' for more information.",
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("demonstrator, why", [
    ("stale-fastest:last_rounds=25", "stale-fastest k=1, last_rounds=25, drop=1: need k >= 1, drop >= 0 and "
                                     "0 <= last_rounds <= num_rounds=20"),
    ("oracle-fastest", "policy 'oracle-fastest' is an oracle that reads each round's true round times, which a "
                       "learner's episodes do not give; choose a policy a server could run"),
])
def test_a_demonstrator_the_federation_cannot_serve_is_refused_before_anything_is_written(demonstrator, why,
                                                                                           tmp_path):
    # before, the refusal came after config.json was written, and that file then refused the corrected rerun
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "train_agents.py"), "--run-dir", "made", "--vdn-demonstrator",
                           demonstrator], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[1] == f"train_agents.py: error: vdn demonstrator={demonstrator!r}: {why}"
    assert list(tmp_path.iterdir()) == []
