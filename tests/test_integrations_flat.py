"""Flat observations, and importing the integrations without the optional libraries."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fedenv
from fedenv.integrations import FlatObservation, flatten_observations


def test_flatten_appends_the_mask_or_drops_it():
    observations = {"a": {"observation": np.array([0.5, 2.0], dtype=np.float32), "action_mask": np.array([1, 0])}}
    appended = flatten_observations(observations, "append")["a"]
    assert appended.dtype == np.float32 and appended.tolist() == [0.5, 2.0, 1.0, 0.0]
    assert flatten_observations(observations, "drop")["a"].tolist() == [0.5, 2.0]


def test_flat_observation_space_holds_the_flat_observations():
    env = fedenv.parallel_env(num_clients=3, clients_per_round=2, num_rounds=1)
    inner = env.observation_space("client_0")["observation"].shape[0]
    flat = FlatObservation(env, mask="append")
    observations, _ = flat.reset(seed=0)
    space = flat.observation_space("client_0")
    assert space.shape == (inner + 2,)
    assert all(space.contains(o) for o in observations.values())
    assert sum(o[-1] for o in observations.values()) == 2  # two candidates may upload
    with pytest.raises(ValueError, match="mask='last' is not known; allowed: append, drop"):
        FlatObservation(env, mask="last")


def test_importing_the_packages_imports_no_optional_library():
    code = ("import sys, fedenv, fedenv.baselines, fedenv.evaluation, fedenv.integrations; "
            "print(sorted(m for m in ('stable_baselines3', 'sb3_contrib', 'supersuit', 'torchrl', 'tensordict', "
            "'benchmarl') if m in sys.modules))")
    completed = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                               capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"
