"""Oort (Lai et al., OSDI 2021): the utility worked by hand and the loss it reads from the environment."""

import math

import numpy as np
import pytest
import torch

import fedenv
from fedenv.baselines import oort_utility


def test_oort_utility_by_hand():
    # 100 samples, mean squared loss 0.25 -> 100 * 0.5; staleness sqrt(0.1 ln 5 / 2); slower than preferred
    expected = (100 * 0.5 + math.sqrt(0.1 * math.log(5) / 2)) * (10 / 20) ** 2
    assert oort_utility(100, 0.25, duration_s=20.0, preferred_s=10.0, round_index=5, last_selected=2) == pytest.approx(expected)
    assert oort_utility(100, 0.25, 5.0, 10.0, 1, 1) == pytest.approx(50.0)


def test_oort_sees_the_loss_of_all_probing_samples_not_only_the_last_batch():
    from fedenv.engine import make_schedule, train_reference

    env = fedenv.parallel_env(num_clients=2, clients_per_round=2, num_rounds=1, batch_size=16)
    _, infos = env.reset(seed=0)
    fed = env.simulator.federation
    generators = env.simulator._generators(np.arange(2), phase=0)
    schedule = make_schedule(fed.client_indices, 1, 16, generators)
    params = {n: p.unsqueeze(0).repeat(2, *[1] * p.dim()) for n, p in fed.global_params.items()}
    reference = train_reference(fed.model, params, {n: torch.zeros_like(p) for n, p in params.items()},
                                fed.global_params, fed.train_x, fed.train_y, schedule, fed.config)
    expected = (reference.loss_sq_sum / reference.samples.to(reference.loss_sq_sum.device)).tolist()
    assert [infos[a]["probe_loss_sq"] for a in env.possible_agents] == pytest.approx(expected, rel=1e-5)
    assert len(fed.client_indices[0]) > 16  # more than one batch: the last batch alone would differ
