"""Copies of a federation in the vector env: distinct reproducible seeds and the infos of a finished episode."""

import numpy as np
import pytest

from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.vector import VectorClientSelectionEnv, federation_seeds

TINY = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=2, local_epochs=1, batch_size=64, partition="iid",
                 val_fraction=0.9, device="cpu")


def test_federation_seeds_are_the_seed_sequence_children():
    seeds = federation_seeds(11, 3)
    children = np.random.SeedSequence(11).spawn(3)
    assert seeds == [int(c.generate_state(1, np.uint64)[0]) // 2 for c in children]
    assert len(set(seeds)) == 3 and federation_seeds(11, 3) == seeds
    assert federation_seeds(11, 5)[:3] == seeds  # copy i's seed does not depend on how many copies there are
    assert len(set(federation_seeds(None, 4))) == 4
    with pytest.raises(ValueError, match="seed=-1"):
        federation_seeds(-1, 2)


def first_features(started):
    return [np.stack([o["observation"] for o in observations.values()]) for observations, _ in started]


def test_reset_without_seeds_gives_each_copy_its_own_federation():
    vector = VectorClientSelectionEnv(TINY, num_envs=2)
    first, second = first_features(vector.reset())
    assert not np.allclose(first, second)


def test_reset_with_a_base_seed_plays_the_derived_seed_of_each_copy():
    vector = VectorClientSelectionEnv(TINY, num_envs=2)
    started = first_features(vector.reset(4))
    for features, seed in zip(started, federation_seeds(4, 2)):
        observations, _ = ClientSelectionEnv(TINY).reset(seed=seed)
        assert np.allclose(features, np.stack([o["observation"] for o in observations.values()]), atol=1e-6)


def test_last_step_infos_are_the_finished_rounds():
    vector = VectorClientSelectionEnv(TINY, num_envs=2)
    vector.reset([5, 6])
    for _ in range(TINY.num_rounds):
        outputs = vector.step([{a: 1 for a in vector.possible_agents}] * 2)
    for (_, _, _, truncations, infos), seed in zip(outputs, [5, 6]):
        plain = ClientSelectionEnv(TINY)
        plain.reset(seed=seed)
        for _ in range(TINY.num_rounds):
            _, _, _, _, expected = plain.step({a: 1 for a in plain.agents})
        assert all(truncations.values())
        assert infos["client_0"]["round"] == TINY.num_rounds
        assert infos["client_0"]["validation_accuracy"] == expected["client_0"]["validation_accuracy"]
        assert infos["client_0"]["test_accuracy"] == expected["client_0"]["test_accuracy"]
