"""Mixers (agents/mixers.py): monotonicity, expressiveness beyond a sum, the straggler mixer's value and
exact joint argmax (against every joint action), registry, the learner's use of them and their
checkpoints."""

from __future__ import annotations

import itertools

import pytest
import torch

from agents.config import VDNConfig
from agents.mixers import MIXERS, QMixer, StragglerMixer, acts_jointly, greedy_actions, masked_argmax, pooled_state
from agents.replay import Batch
from agents.vdn import VDNLearner


def modules():
    """Every registered mixer that has parameters, built for d = 3."""
    return [(name, MIXERS[name](3, 8)) for name in MIXERS if MIXERS[name](3, 8) is not None]


def test_pooled_state_is_mean_and_max_over_the_candidates_only():
    obs = torch.tensor([[[1.0, 10.0], [3.0, -2.0], [100.0, 100.0]]])
    candidate = torch.tensor([[1.0, 1.0, 0.0]])
    torch.testing.assert_close(pooled_state(obs, candidate), torch.tensor([[2.0, 4.0, 3.0, 10.0]]))
    torch.testing.assert_close(pooled_state(obs, torch.zeros(1, 3)), torch.zeros(1, 4))


@pytest.mark.parametrize("name,mixer", modules())
def test_q_tot_never_decreases_in_any_candidates_value(name, mixer):
    torch.manual_seed(0)
    with torch.no_grad():  # weights far from the initialisation, of both signs
        for p in mixer.parameters():
            p.mul_(5.0).add_(torch.randn_like(p))
    q = torch.randn(64, 5, requires_grad=True)
    candidate = (torch.rand(64, 5) < 0.7).float()
    actions = (torch.rand(64, 5) < 0.5).long()
    grad, = torch.autograd.grad(mixer(q, candidate, torch.randn(64, 5, 3), actions).sum(), q)
    assert (grad >= 0).all()
    assert (grad[candidate == 0] == 0).all()  # a non-candidate has no say
    assert (grad[candidate == 1] > 0).any()


@pytest.mark.parametrize("name,mixer", modules())
def test_q_tot_does_not_depend_on_the_order_of_the_candidates(name, mixer):
    q, obs = torch.randn(4, 5), torch.randn(4, 5, 3)
    candidate = torch.ones(4, 5)
    order = torch.tensor([3, 0, 4, 1, 2])
    actions = (torch.rand(4, 5) < 0.5).long()
    torch.testing.assert_close(mixer(q, candidate, obs, actions),
                               mixer(q[:, order], candidate, obs[:, order], actions[:, order]))


def fit(model_q_tot, parameters, q, obs, target, steps=300):
    optimiser = torch.optim.Adam(parameters, lr=1e-2)
    for _ in range(steps):
        loss = torch.mean((model_q_tot(q, obs) - target) ** 2)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return float(loss.detach())


def test_qmix_fits_the_maximum_of_two_agents_far_better_than_a_sum():
    """Each agent observes its own value (as a client observes its own latency); the team value is the
    maximum. The best sum a * (q1 + q2) + b leaves a mean squared error of Var(|q1 - q2|) / 4. Both fits
    settle within 200 of their 300 Adam steps (the sum's at 0.0561, QMIX's near 1e-4)."""
    torch.manual_seed(1)
    q = torch.rand(512, 2) * 2 - 1
    obs = q.unsqueeze(-1)
    target = q.max(dim=1).values
    candidate = torch.ones(512, 2)
    scale = torch.zeros(2, requires_grad=True)
    sum_mse = fit(lambda q, obs: scale[0] * q.sum(dim=1) + scale[1], [scale], q, obs, target)
    torch.manual_seed(2)
    mixer = QMixer(obs_dim=1, embed_dim=16)
    qmix_mse = fit(lambda q, obs: mixer(q, candidate, obs, None), list(mixer.parameters()), q, obs, target)
    # max = (q1 + q2) / 2 + |q1 - q2| / 2; |q1 - q2| has density (2 - x) / 2 on [0, 2]: mean 2/3, second
    # moment 2/3, variance 2/9, so the best sum leaves (2/9) / 4 = 1/18
    assert sum_mse == pytest.approx(1 / 18, rel=0.1)
    assert qmix_mse < sum_mse / 5


def with_costs(mixer: StragglerMixer, feature: int = 0) -> StragglerMixer:
    """``mixer`` whose straggler cost of client n is its observation's feature ``feature``."""
    mixer.costs = lambda obs: obs[..., feature]
    return mixer


def test_straggler_q_tot_is_the_sum_minus_the_costliest_upload_worked_by_hand():
    mixer = with_costs(StragglerMixer(obs_dim=1, embed_dim=4))
    q = torch.tensor([[1.0, 2.0, 3.0, 4.0]] * 3)
    obs = torch.tensor([[0.5, 2.0, 1.0, 9.0]] * 3).unsqueeze(-1)
    candidate = torch.tensor([[1.0, 1.0, 1.0, 0.0]] * 3)  # client 3 is no candidate: neither its value nor its cost
    actions = torch.tensor([[1, 0, 1, 1], [0, 0, 0, 1], [1, 1, 0, 0]])
    # 1 + 2 + 3 - max(0.5, 1.0); 6 - 0 (no candidate uploads); 6 - max(0.5, 2.0)
    torch.testing.assert_close(mixer(q, candidate, obs, actions), torch.tensor([5.0, 6.0, 4.0]))


def test_the_straggler_greedy_action_leaves_out_a_slow_client_that_each_agent_alone_would_upload():
    """Two candidates each gain 1 by uploading; their costs are 0.5 and 3. Each agent's argmax uploads both
    (Q_tot 2 - 3 = -1); uploading the fast one alone gives 1 - 0.5 = 0.5, the best of the four."""
    mixer = with_costs(StragglerMixer(obs_dim=1, embed_dim=4))
    q_values = torch.tensor([[[0.0, 1.0], [0.0, 1.0]]])
    mask = torch.ones(1, 2, 2)
    obs = torch.tensor([[[0.5], [3.0]]])
    assert masked_argmax(q_values, mask).tolist() == [[1, 1]]
    assert greedy_actions(q_values, mask, obs, mixer).tolist() == [[1, 0]]
    assert greedy_actions(q_values[0], mask[0], obs[0], mixer).tolist() == [1, 0]  # one round, unbatched
    assert greedy_actions(q_values, mask, obs * 0.0 + 2.5, mixer).tolist() == [[0, 0]]  # 2 - 2.5 < 1 - 2.5 < 0


@pytest.mark.parametrize("ties", [False, True])
def test_the_straggler_greedy_action_is_the_best_of_every_allowed_joint_action(ties):
    torch.manual_seed(3)
    mixer = StragglerMixer(obs_dim=2, embed_dim=8)
    if ties:  # costs taking few values, so several clients share the costliest one
        with_costs(mixer)
    k, b = 6, 200
    q_values = torch.randn(b, k, 2)
    obs = torch.randn(b, k, 2).abs()
    if ties:
        obs = obs.round()
    mask = torch.ones(b, k, 2)
    mask[..., 1] = (torch.rand(b, k) < 0.7).float()
    candidate = mask[..., 1]
    with torch.no_grad():
        greedy = mixer.greedy(q_values, mask, obs)

        def q_tot(actions):
            chosen = q_values.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
            return mixer(chosen * candidate, candidate, obs, actions)

        joint = torch.tensor(list(itertools.product([0, 1], repeat=k)))  # (2^k, k); non-candidates set to 0
        every = torch.stack([q_tot(a.expand(b, k) * candidate.long()) for a in joint])
        assert ((greedy == 0) | (candidate > 0)).all()  # a non-candidate never uploads
        torch.testing.assert_close(q_tot(greedy), every.max(dim=0).values)


def test_with_no_straggler_cost_the_joint_argmax_is_each_agents_argmax():
    mixer = StragglerMixer(obs_dim=2, embed_dim=8)
    mixer.costs = lambda obs: torch.zeros(obs.shape[:-1])
    q_values, mask = torch.randn(50, 7, 2), torch.ones(50, 7, 2)
    mask[..., 1] = (torch.rand(50, 7) < 0.6).float()
    assert torch.equal(mixer.greedy(q_values, mask, torch.randn(50, 7, 2)), masked_argmax(q_values, mask))


def test_the_straggler_mixer_learns_the_latency_of_the_slowest_upload():
    """Team value minus the largest latency among the uploading clients, each client observing its own
    latency (as in FedMarl's Eq. 1): the straggler mixer's learned cost fits it, a sum cannot."""
    torch.manual_seed(4)
    latency = torch.rand(512, 4, 1)
    actions = (torch.rand(512, 4) < 0.5).long()
    candidate = torch.ones(512, 4)
    target = -torch.where(actions > 0, latency.squeeze(-1), torch.zeros(512, 4)).amax(dim=1)
    zero = torch.zeros(512, 4)
    scale = torch.zeros(2, requires_grad=True)
    sum_mse = fit(lambda q, obs: scale[0] * (obs.squeeze(-1) * actions).sum(dim=1) + scale[1], [scale], zero,
                  latency, target)
    mixer = StragglerMixer(obs_dim=1, embed_dim=16)
    straggler_mse = fit(lambda q, obs: mixer(q, candidate, obs, actions), list(mixer.parameters()), zero, latency,
                        target, steps=500)
    assert straggler_mse < sum_mse / 10


def test_only_the_straggler_mixer_acts_jointly():
    assert [name for name in MIXERS if acts_jointly(MIXERS[name](3, 8))] == ["straggler"]


def test_the_straggler_td_target_bootstraps_the_joint_argmax_of_the_online_networks():
    learner = VDNLearner(4, VDNConfig(hidden=(8,), mixer="straggler", mixing_embed_dim=8), seed=2)
    with torch.no_grad():
        for p in learner.target.parameters():
            p.add_(0.3)
        for p in learner.target_mixer.parameters():
            p.mul_(2.0)
    b = batch(k=4, b=16, seed=5)
    with torch.no_grad():
        best = learner.mixer.greedy(learner.q(b.next_obs, b.next_mask[..., 1]), b.next_mask, b.next_obs)
        q_target = learner.target(b.next_obs, b.next_mask[..., 1]).gather(-1, best.unsqueeze(-1)).squeeze(-1)
        uploads = (best > 0) & (b.next_mask[..., 1] > 0)
        slowest = torch.where(uploads, learner.target_mixer.costs(b.next_obs), torch.zeros_like(q_target))
        value = (q_target * b.next_mask[..., 1]).sum(dim=1) - slowest.max(dim=1).values
    expected = learner.config.reward_scale * b.reward + b.discount * value
    torch.testing.assert_close(learner.td_target(b), expected)


def test_the_straggler_learner_acts_with_the_joint_argmax():
    learner = VDNLearner(4, VDNConfig(hidden=(8,), mixer="straggler", mixing_embed_dim=8), seed=2)
    b = batch(k=5, b=12, seed=1)
    for obs, mask in zip(b.obs, b.mask):
        expected = learner.mixer.greedy(learner.q(obs, mask[:, 1]).unsqueeze(0), mask.unsqueeze(0), obs.unsqueeze(0))
        assert learner.act(obs.numpy(), mask.numpy(), epsilon=0.0).tolist() == expected[0].tolist()


def batch(k=3, d=4, b=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(b, k, 2)
    mask[:, 0, 1] = 0.0  # client 0 is no candidate
    return Batch(obs=torch.rand(b, k, d, generator=g), mask=mask,
                 actions=torch.randint(0, 2, (b, k), generator=g) * mask[..., 1].long(),
                 reward=torch.rand(b, generator=g), next_obs=torch.rand(b, k, d, generator=g), next_mask=mask,
                 discount=torch.ones(b), terminated=torch.zeros(b))


def test_the_default_learner_has_no_mixer_and_sums():
    learner = VDNLearner(4, VDNConfig(hidden=(8,)))
    assert learner.mixer is None and "mixer" not in learner.state_dict()
    b = batch()
    chosen = learner.q(b.obs, b.mask[..., 1]).gather(-1, b.actions.unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(learner.q_tot(b), chosen[:, 1:].sum(dim=1))


@pytest.mark.parametrize("name", [n for n in MIXERS if n != "vdn"])
def test_a_mixing_learner_keeps_the_q_network_of_plain_vdn_and_trains_its_mixer(name):
    plain = VDNLearner(4, VDNConfig(hidden=(8,)), seed=5)
    mixed = VDNLearner(4, VDNConfig(hidden=(8,), mixer=name, mixing_embed_dim=8, target_update_interval=1), seed=5)
    for key, value in plain.q.state_dict().items():
        torch.testing.assert_close(mixed.q.state_dict()[key], value, rtol=0, atol=0)
    before = {k: v.clone() for k, v in mixed.mixer.state_dict().items()}
    mixed.update(batch())
    assert any(not torch.equal(before[k], v) for k, v in mixed.mixer.state_dict().items())
    for key, value in mixed.mixer.state_dict().items():  # target_update_interval=1: the target follows
        torch.testing.assert_close(mixed.target_mixer.state_dict()[key], value, rtol=0, atol=0)
    copy = VDNLearner(4, mixed.config, seed=9)
    copy.load_state_dict(mixed.state_dict())
    b = batch(seed=3)
    torch.testing.assert_close(copy.q_tot(b), mixed.q_tot(b), rtol=0, atol=0)
    torch.testing.assert_close(copy.td_target(b), mixed.td_target(b), rtol=0, atol=0)


def test_an_unknown_mixer_is_refused_with_the_allowed_names():
    with pytest.raises(ValueError, match=rf"mixer='sum' is not known; allowed: {', '.join(MIXERS)}$"):
        VDNConfig(mixer="sum").validate()


def test_an_asynchronous_ray_actor_acts_with_the_mixer_it_is_handed():
    from agents.ray_training import RolloutWorker
    from tests.helpers import tiny_config

    config = VDNConfig(hidden=(8,), mixer="straggler", mixing_embed_dim=8)
    worker = RolloutWorker(tiny_config(num_rounds=2), config, seed=0, num_envs=1)
    learner = VDNLearner(worker.actor.obs_dim, config, seed=7)
    worker.play([0], {"q": learner.q.state_dict(), "mixer": learner.mixer.state_dict()}, schedule_episodes=2)
    for mine, theirs in ((worker.actor.q, learner.q), (worker.actor.mixer, learner.mixer)):
        for key, value in theirs.state_dict().items():
            assert torch.equal(mine.state_dict()[key], value)
