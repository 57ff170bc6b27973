import math

import numpy as np
import pytest
import torch

import fedenv
from fedenv.aggregation import fedadp_weights, fedca_subset, fedpdp_weights, gompertz
from fedenv.policies import FedCMTS, FedCMUCB, POLICY_NAMES, Policy, make_policy, oort_utility
from fedenv.rollout import run_episode


def test_fedadp_weights_for_three_clients_by_hand():
    updates = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    sizes = np.array([1.0, 1.0, 2.0])  # data-weighted mean update: [0.75, 0.75]
    previous = np.array([0.5, 1.0, 0.2])
    participations = np.array([1, 3, 0])
    weights, smoothed = fedadp_weights(updates, sizes, previous, participations, alpha=5.0)
    # angles to [0.75, 0.75]: pi/4, pi/4, 0; smoothing with t = 2, 4, 1
    expected_smoothed = [0.5 / 2 + (math.pi / 4) / 2, 3 / 4 * 1.0 + (math.pi / 4) / 4, 0.0]
    assert smoothed == pytest.approx(expected_smoothed)
    f = [5 * (1 - math.exp(-math.exp(-5 * (theta - 1)))) for theta in expected_smoothed]
    assert f == pytest.approx([4.98721, 3.64775, 5.0], abs=1e-4)
    scores = [1 * math.exp(f[0]), 1 * math.exp(f[1]), 2 * math.exp(f[2])]
    assert weights == pytest.approx([s / sum(scores) for s in scores])
    assert gompertz(np.array([1.0]), 5.0)[0] == pytest.approx(5 * (1 - math.exp(-1)))


def test_fedpdp_weights_by_hand():
    assert fedpdp_weights([10, 30], total_samples=100, num_clients=4) == pytest.approx([0.2, 0.6])


def biased_case():
    labels = torch.tensor([0, 1, 2, 3])
    eye = torch.eye(4)
    good_a = eye * 2.0
    good_a[3] = torch.tensor([0.0, 0.0, 1.0, 0.9])  # wrong on sample 3, narrowly
    good_b = eye * 2.0
    good_b[0] = torch.tensor([0.9, 0.0, 0.0, 1.0])  # wrong on sample 0, narrowly
    biased = torch.zeros(4, 4)
    biased[:, 0] = 10.0  # always predicts class 0
    return torch.stack([good_a, good_b, biased]), labels


@pytest.mark.parametrize("score", ["acc", "ce"])
def test_fedca_filters_the_biased_model(score):
    logits, labels = biased_case()
    assert fedca_subset(logits, labels, score).tolist() == [0, 1]  # together both good models are right 4/4


def test_fedca_greedy_search_above_ten_uploads_leaves_the_biased_model_out():
    logits, labels = biased_case()
    many = torch.cat([logits[:2].repeat(6, 1, 1), logits[2:]])  # 12 uploads, the biased one last
    chosen = fedca_subset(many, labels, "ce")
    assert 11 not in chosen.tolist() and len(chosen) >= 2


def test_ucb_update_and_index_by_hand():
    policy = FedCMUCB(select_fraction=0.5)
    policy.reset(0)
    policy.arms["client_0"] = [0.0, 1.0]
    policy.update("client_0", 1.0)
    assert policy.arms["client_0"] == [0.5, 2.0]
    policy.round = 3
    assert policy.index("client_0") == pytest.approx(0.5 + math.sqrt(2 * math.log(3) / 2))


def test_thompson_sampling_update_by_hand():
    policy = FedCMTS()
    policy.reset(0)
    policy.arm("client_1")
    policy.update("client_1", 1.0)
    policy.update("client_1", 0.0)
    policy.update("client_1", 1.0)
    assert policy.arms["client_1"] == [3.0, 2.0]
    draws = [policy.index("client_1") for _ in range(4000)]
    assert np.mean(draws) == pytest.approx(3 / 5, abs=0.02)  # Beta(3, 2) mean


def test_oort_utility_by_hand():
    # 100 samples, mean squared loss 0.25 -> 100 * 0.5; staleness sqrt(0.1 ln 5 / 2); slower than preferred
    expected = (100 * 0.5 + math.sqrt(0.1 * math.log(5) / 2)) * (10 / 20) ** 2
    assert oort_utility(100, 0.25, duration_s=20.0, preferred_s=10.0, round_index=5, last_selected=2) == pytest.approx(expected)
    assert oort_utility(100, 0.25, 5.0, 10.0, 1, 1) == pytest.approx(50.0)


def test_oort_sees_the_loss_of_all_probing_samples_not_only_the_last_batch():
    from fedenv.engine import make_schedule, train_reference

    env = fedenv.parallel_env(num_clients=2, clients_per_round=2, num_rounds=1, batch_size=16)
    _, infos = env.reset(seed=0)
    fed = env.federation
    generators = env._generators(np.arange(2), phase=0)
    schedule = make_schedule(fed.client_indices, 1, 16, generators)
    params = {n: p.unsqueeze(0).repeat(2, *[1] * p.dim()) for n, p in fed.global_params.items()}
    reference = train_reference(fed.model, params, {n: torch.zeros_like(p) for n, p in params.items()},
                                fed.global_params, fed.train_x, fed.train_y, schedule, fed.config)
    expected = (reference.loss_sq_sum / reference.samples.to(reference.loss_sq_sum.device)).tolist()
    assert [infos[a]["probe_loss_sq"] for a in env.possible_agents] == pytest.approx(expected, rel=1e-5)
    assert len(fed.client_indices[0]) > 16  # more than one batch: the last batch alone would differ


class Recorder(Policy):
    """Wraps a policy and records the candidates it was offered each round."""

    def __init__(self, inner):
        self.inner, self.name, self.env_overrides, self.seen = inner, inner.name, inner.env_overrides, []

    def reset(self, seed):
        self.inner.reset(seed)

    def act(self, observations, infos):
        self.seen.append(sorted(a for a, o in observations.items() if o["action_mask"][1]))
        return self.inner.act(observations, infos)

    def observe(self, infos):
        self.inner.observe(infos)


def test_identical_seeds_give_identical_partitions_traces_and_candidates_across_policies():
    base = fedenv.EnvConfig(num_clients=6, clients_per_round=4, num_rounds=3)
    seen = {}
    for name in POLICY_NAMES:
        policy = Recorder(make_policy(name))
        env = fedenv.parallel_env(base, **policy.env_overrides)
        record = run_episode(env, policy, seed=1003)
        seen[name] = ([i.tolist() for i in env.client_indices], env.replay.assignment.tolist(), env.replay.offset,
                      policy.seen, record.accuracy[0])
    first = seen["fedavg"]
    assert all(value == first for value in seen.values())
    assert len({tuple(map(tuple, value[3])) for value in seen.values()}) == 1


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_every_baseline_runs_and_reports_its_aggregation(name):
    policy = make_policy(name, select_fraction=0.5)
    env = fedenv.parallel_env(num_clients=4, clients_per_round=4, num_rounds=3, **policy.env_overrides)
    record = run_episode(env, policy, seed=5)
    assert len(record.accuracy) == 4 and all(np.isfinite(record.reward))
    if name in ("fedcm-ucb", "fedcm-ts", "oort", "fastest"):
        assert max(record.num_selected) <= 2
    env.reset(seed=5)
    _, _, _, _, infos = env.step({a: 1 for a in env.agents})
    weights = [i["aggregation_weight"] for i in infos.values() if i["kept"]]
    assert weights and all(w > 0 for w in weights)
    if env.config.aggregation in ("fedavg", "fedadp"):
        assert sum(weights) == pytest.approx(1.0)
