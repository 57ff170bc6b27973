"""Seeded builds and seeded episodes do not depend on other threads, nor touch the global torch RNG
(fedenv.models.build_model, fedenv.models.seeding.SeededDraws)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from fedenv.baselines import make_policy
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import run_episode
from fedenv.models import build_model
from fedenv.models.seeding import SeededDraws
from fedenv.registry import MODELS
from tests.helpers import tiny_config

THREADS, BUILDS_PER_THREAD = 8, 5


def _weights(model: torch.nn.Module) -> list[torch.Tensor]:
    return [t.detach().clone() for t in model.state_dict().values()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def test_builds_in_eight_threads_at_once_equal_the_same_builds_one_after_another():
    seeds = [[thread * BUILDS_PER_THREAD + i for i in range(BUILDS_PER_THREAD)] for thread in range(THREADS)]
    sequential = {s: _weights(build_model("lenet5", (1, 28, 28), 10, seed=s)) for row in seeds for s in row}
    start = threading.Barrier(THREADS)

    def build_row(row):
        start.wait()
        return {s: _weights(build_model("lenet5", (1, 28, 28), 10, seed=s)) for s in row}

    with ThreadPoolExecutor(THREADS) as pool:
        parallel = {s: w for result in pool.map(build_row, seeds) for s, w in result.items()}
    assert [s for s in sequential if not _same(sequential[s], parallel[s])] == []


@pytest.mark.parametrize("name", MODELS.names())
def test_a_seeded_build_is_the_constructor_under_manual_seed_and_leaves_the_global_rng_state(name):
    spec = MODELS.get(name)
    torch.manual_seed(2024)
    state = torch.get_rng_state()
    model = build_model(name, spec.reference_input_shape, spec.reference_num_classes, seed=11)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(11)
    reference = spec.build(spec.reference_input_shape, spec.reference_num_classes)
    assert _same(_weights(model), _weights(reference))


def test_seeded_draws_route_factories_and_in_place_draws_to_a_generator_of_that_seed():
    state = torch.get_rng_state()
    with SeededDraws(5):
        drawn = [torch.rand(3), torch.randperm(6), torch.empty(4).normal_(), torch.randint(0, 9, (3,))]
    generator = torch.Generator().manual_seed(5)
    expected = [torch.rand(3, generator=generator), torch.randperm(6, generator=generator),
                torch.empty(4).normal_(generator=generator), torch.randint(0, 9, (3,), generator=generator)]
    assert _same(drawn, expected)
    assert torch.equal(torch.get_rng_state(), state)


def test_seeded_draws_keep_a_generator_the_caller_passes():
    with SeededDraws(5):
        drawn = torch.rand(3, generator=torch.Generator().manual_seed(9))
    assert torch.equal(drawn, torch.rand(3, generator=torch.Generator().manual_seed(9)))


def _play(seeds: list[int], start: threading.Barrier | None = None) -> list[tuple]:
    """Accuracy, wall clock and selections of a tiny federation's episode from each of ``seeds``."""
    env = ClientSelectionEnv(tiny_config())
    if start is not None:
        start.wait()
    records = [run_episode(env, make_policy("fedavg"), seed=seed) for seed in seeds]
    return [(r.test_accuracy, r.validation_accuracy, r.wall_clock_s, r.num_selected) for r in records]


def test_seeded_episodes_played_in_threads_at_once_equal_them_played_one_after_another():
    seeds = [[3, 4, 5], [6, 7, 8], [9, 10, 11]]
    sequential = [_play(row) for row in seeds]
    start = threading.Barrier(len(seeds))
    with ThreadPoolExecutor(len(seeds)) as pool:
        parallel = list(pool.map(lambda row: _play(row, start), seeds))
    for expected_row, got_row in zip(sequential, parallel):
        for expected, got in zip(expected_row, got_row):
            for a, b in zip(expected, got):
                np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
    assert len({repr(e) for row in sequential for e in row}) == 9  # the seeds play different episodes


def test_a_seeded_episode_leaves_the_global_rng_state():
    env = ClientSelectionEnv(tiny_config())
    state = torch.get_rng_state()
    run_episode(env, make_policy("fedavg"), seed=3)
    assert torch.equal(torch.get_rng_state(), state)
