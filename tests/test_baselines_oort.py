"""Oort (Lai et al., OSDI 2021) as FedScale implements it: the selector's parts worked by hand, seeded
selection, exploration by data size, the pacer and epsilon schedules, and no starvation in an episode."""

import collections
import math

import numpy as np
import pytest
import torch

import fedenv
from fedenv.baselines import OortPolicy, oort_utility
from fedenv.baselines.oort import OortOptions, OortSelector
from fedenv.baselines.oort.selector import pacer, preferred_duration, sampling_probabilities, system_penalty
from fedenv.evaluation import run_episode
from fedenv.evaluation.rollout import profile_duration_s


def play(policy, sizes, durations_s, loss_sq, rounds, seed):
    """Run ``policy`` on hand-made infos (every client a candidate each round); the sorted picks per round."""
    agents = [f"client_{i}" for i in range(len(sizes))]
    infos = {a: {"data_size": n, "probe_loss_sq": q, "probe_latency_s": d / 2, "upload_latency_s": d / 2,
                 "selected": False, "dropped": False} for a, n, d, q in zip(agents, sizes, durations_s, loss_sq)}
    observations = {a: {"action_mask": np.array([1, 1], dtype=np.int8)} for a in agents}
    policy.reset(seed)
    picks = []
    for _ in range(rounds):
        actions = policy.act(observations, infos)
        picks.append(sorted(actions))
        infos = {a: {**infos[a], "selected": a in actions} for a in agents}
        policy.observe(infos)
    return picks


def selector_with(sizes, durations_s, rng_seed=0, **options):
    selector = OortSelector(np.random.default_rng(rng_seed), OortOptions(**options))
    for client, (size, duration) in enumerate(zip(sizes, durations_s)):
        assert selector.register(client, size, duration)
    return selector


def test_oort_utility_is_the_papers_form_over_all_samples():
    # |B| sqrt(mean loss^2): 100 samples of mean squared loss 0.25 -> 100 * 0.5
    assert oort_utility(100, 0.25) == pytest.approx(50.0)
    assert math.isnan(oort_utility(100, float("nan")))
    with pytest.raises(ValueError, match="mean_sq_loss=-1"):
        oort_utility(100, -1)


def test_selection_is_identical_under_one_seed_and_differs_across_seeds():
    sizes, durations, losses = [40 * (i + 1) for i in range(20)], [1.0 + i % 5 for i in range(20)], [1.0] * 20

    def run(seed):
        return play(OortPolicy(select_fraction=0.25), sizes, durations, losses, rounds=10, seed=seed)

    first = run(0)
    assert run(0) == first
    assert run(1) != first and run(2) != first
    assert all(len(p) == 5 for p in first)  # m = round(0.25 * 20) in every round, also once all are explored


def test_unexplored_clients_are_explored_in_order_of_capped_data_size():
    sizes = [50, 900, 100, 450, 200, 700, 300, 400, 350, 250]  # FedScale's priority: min(size, 20 * 30 = 600)
    selector = selector_with(sizes, [1.0] * 10, sample_window=1.0, fill_exploitation=True, guard_small_pools=True)
    first = selector.select(1, range(10), 4)  # FedScale's first selection: uniform at random
    for client in first:
        selector.update(client, 10.0, 1.0, round=1)
    second = selector.select(2, range(10), 4)
    # epsilon 0.9 * 0.98 -> int(4 * 0.882) = 3 exploration slots, window 1.0 * 3: the 3 largest unexplored
    unexplored = sorted(set(range(10)) - set(first), key=lambda c: -min(sizes[c], 600))
    assert sorted(selector.explore_clients) == sorted(unexplored[:3])
    assert len(selector.exploit_clients) == 1 and set(selector.exploit_clients) <= set(first)
    assert len(set(second)) == 4


def test_exploration_window_leaves_out_the_smallest_unexplored_clients():
    sizes = list(range(40, 440, 10))  # 40 clients, all under the 600 cap
    selector = selector_with(sizes, [1.0] * 40, fill_exploitation=True, guard_small_pools=True)
    first = selector.select(1, range(40), 2)
    for client in first:
        selector.update(client, 10.0, 1.0, round=1)
    selector.select(2, range(40), 2)
    # int(2 * 0.882) = 1 exploration slot, drawn from the 5 * 1 largest unexplored
    window = sorted(set(range(40)) - set(first), key=lambda c: -sizes[c])[:5]
    assert set(selector.explore_clients) <= set(window)


@pytest.mark.parametrize("weights, expected", [
    ([1.0, 3.0], [0.25, 0.75]),
    ([0.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]),
    ([float("nan"), 1.0, 3.0], [0.0, 0.25, 0.75]),
    ([float("nan"), float("nan")], [0.5, 0.5]),
    ([float("inf"), 1.0, float("inf")], [0.5, 0.0, 0.5]),
])
def test_exploitation_probabilities_sum_to_one_for_degenerate_utilities(weights, expected):
    p = sampling_probabilities(weights)
    np.testing.assert_allclose(p, expected)
    assert p.sum() == pytest.approx(1.0) and not np.isnan(p).any()


def test_sampling_probabilities_refuse_negative_weights():
    with pytest.raises(ValueError, match="non-negative"):
        sampling_probabilities([1.0, -1.0])


@pytest.mark.parametrize("utility", [0.0, float("nan"), float("inf")])
def test_selection_with_degenerate_utilities_still_picks_k_distinct_clients(utility):
    selector = selector_with([100] * 8, [1.0] * 8, fill_exploitation=True, guard_small_pools=True,
                             reset_stale_explore=True)
    for client in range(8):
        selector.update(client, utility, 1.0, round=1)
    selector.select(2, range(8), 3)  # the first, uniform selection
    picked = selector.select(3, range(8), 3)
    assert len(set(picked)) == 3 and set(picked) <= set(range(8))


def test_system_penalty_worked_by_hand():
    assert system_penalty(20.0, 10.0, 2.0) == pytest.approx(0.25)  # (10 / 20) ** 2
    assert system_penalty(5.0, 10.0, 2.0) == 1.0  # faster than T: no penalty
    # T: index int(10 * 30 / 100) = 3 of the sorted durations 1..10
    assert preferred_duration([5, 1, 4, 2, 3, 6, 7, 8, 9, 10], 30.0) == 4
    assert preferred_duration([5, 1], 100.0) == math.inf


def test_penalty_demotes_a_slow_unexplored_client_below_a_smaller_fast_one():
    # durations 10, 1, 1 ... 1, 10: T (30th percentile) = 1; client 0 (500 samples) is 10x slower:
    # 500 * (1 / 10) ** 2 = 5 < 400 of client 2; the window of 1 then holds client 2 only
    sizes, durations = [500, 100, 400, 100, 100, 100], [10.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    selector = selector_with(sizes, durations, sample_window=1.0, fill_exploitation=True, guard_small_pools=True)
    selector.select(1, [1, 3], 1)  # the first, uniform selection, among two small fast clients
    selector.update(1, 10.0, 1.0, round=1)
    selector.select(2, range(6), 2)
    assert selector.preferred_duration_s == 1.0
    assert selector.explore_clients == [2]


def test_epsilon_decays_each_selection_to_its_floor():
    selector = selector_with([100] * 10, [1.0] * 10, fill_exploitation=True, guard_small_pools=True,
                             reset_stale_explore=True)
    selector.select(1, range(10), 2)  # the uniform first selection does not decay epsilon
    assert selector.exploration == 0.9
    values = []
    for round_index in range(2, 60):
        for client in selector.select(round_index, range(10), 2):
            selector.update(client, 10.0, 1.0, round=round_index)
        values.append(selector.exploration)
    assert values[0] == pytest.approx(0.882) and values[1] == pytest.approx(0.86436)  # 0.9 * 0.98, * 0.98
    assert values[53] == pytest.approx(0.30231, abs=1e-5)  # 0.9 * 0.98 ** 54 is still above the floor
    assert values[54:] == [0.3] * 4  # 0.9 * 0.98 ** 55 = 0.2962 < 0.3


def test_pacer_by_hand():
    assert pacer([1.0] * 4, 4, 30.0, 2, 5.0) == 35.0  # plateau: |2 - 2| <= 0.2 -> relax T
    assert pacer([0.1, 0.1, 1.0, 1.0], 4, 30.0, 2, 5.0) == 25.0  # |2 - 0.2| >= 5 * 0.2 -> tighten
    assert pacer([1.0, 1.0, 1.5, 1.5], 4, 30.0, 2, 5.0) == 30.0  # neither
    assert pacer([1.0] * 3, 3, 30.0, 2, 5.0) == 30.0  # not a multiple of the window
    assert pacer([1.0] * 2, 2, 30.0, 2, 5.0) == 30.0  # before 2 windows
    assert pacer([1.0] * 4, 4, 100.0, 2, 5.0) == 100.0 and pacer([0.1, 0.1, 1, 1], 4, 5.0, 2, 5.0) == 5.0


def test_pacer_relaxes_the_preferred_duration_when_utility_stalls():
    durations = [float(d) for d in range(1, 21)]
    selector = selector_with([100] * 20, durations, pacer_step=2, fill_exploitation=True, guard_small_pools=True)
    for client in selector.select(1, range(20), 2):
        selector.update(client, 10.0, durations[client], round=1)
    thresholds, preferred = [], []
    for round_index in range(1, 8):
        for client in selector.select(round_index + 1, range(20), 2):
            selector.update(client, 10.0, durations[client], round=round_index + 1)
        thresholds.append(selector.round_threshold)
        preferred.append(selector.preferred_duration_s)
    # exploitation utility per Oort selection (of the previous one's exploited clients): 0 (none before
    # the first), then 10, 10, ...; at selection 4 the windows [0, 10] and [10, 10] differ by 10, neither
    # <= 0.1 * 10 nor >= 5 * 10; at selection 6, [10, 10] and [10, 10]: a plateau, T relaxes by 5 points
    assert thresholds == [30.0] * 5 + [35.0] * 2
    assert preferred == [7.0] * 5 + [8.0] * 2  # durations 1..20 at index int(20 * 0.30) = 6, int(20 * 0.35) = 7


def test_no_client_is_starved_in_an_episode():
    policy = OortPolicy(select_fraction=0.5)
    env = fedenv.parallel_env(num_clients=6, clients_per_round=6, num_rounds=8, device="cpu", **policy.env_overrides)
    picks, act = [], policy.act

    def recording_act(observations, infos):
        actions = act(observations, infos)
        picks.append(set(actions))
        return actions

    policy.act = recording_act
    run_episode(env, policy, seed=0)
    counts = collections.Counter(agent for round_picks in picks for agent in round_picks)
    assert all(len(p) == 3 for p in picks)
    assert len(set().union(*picks[2:])) > 3  # exploitation is not one fixed top-3
    selector = policy.selector
    unpenalised = [a for a in counts if system_penalty(selector.arms[a].duration_s, selector.preferred_duration_s,
                                                       2.0) >= 0.25]
    assert unpenalised and all(counts[a] >= 2 for a in unpenalised)


def test_oort_sees_the_loss_of_all_probing_samples_not_only_the_last_batch():
    from fedenv.engine import make_schedule, train_reference

    env = fedenv.parallel_env(num_clients=2, clients_per_round=2, num_rounds=1, batch_size=16)
    _, infos = env.reset(seed=0)
    fed = env.simulator.federation
    generators = env.simulator.minibatch_generators(np.arange(2), phase=0)
    schedule = make_schedule(fed.client_indices, 1, 16, generators)
    params = {n: p.unsqueeze(0).repeat(2, *[1] * p.dim()) for n, p in fed.global_params.items()}
    reference = train_reference(fed.model, params, {n: torch.zeros_like(p) for n, p in params.items()},
                                fed.global_params, fed.train_x, fed.train_y, schedule, fed.config)
    expected = (reference.loss_sq_sum / reference.samples.to(reference.loss_sq_sum.device)).tolist()
    assert [infos[a]["probe_loss_sq"] for a in env.possible_agents] == pytest.approx(expected, rel=1e-5)
    assert len(fed.client_indices[0]) > 16  # more than one batch: the last batch alone would differ


def hand_infos(loss_sq, latency_s=1.0, selected=(), dropped=()):
    """Infos of three clients of 100 samples with the given mean squared losses."""
    return {a: {"data_size": 100, "probe_loss_sq": q, "probe_latency_s": latency_s, "upload_latency_s": latency_s,
                "selected": a in selected, "dropped": a in dropped} for a, q in zip(("a", "b", "c"), loss_sq)}


@pytest.mark.parametrize("probing", [False, True])
def test_feedback_is_the_utility_of_the_rounds_own_training_for_the_clients_that_trained(probing):
    policy = OortPolicy(select_fraction=1.0)
    policy.reset(0)
    policy.register_clients({}, probing=probing)
    observations = {a: {"action_mask": np.array([1, 1], dtype=np.int8)} for a in "abc"}
    before = hand_infos([1.0, 4.0, 9.0])  # what the clients reported before the round (last participation)
    picked = sorted(policy.act(observations, before))
    assert picked == ["a", "b", "c"]  # the first selection takes every registered client when they fit
    # the round: a and b trained, c missed the deadline; the env now reports a's and b's losses of this
    # round (without probing) or the next round's probing epoch (with probing)
    after = hand_infos([16.0, 25.0, 36.0], selected=("a", "b", "c"), dropped=("c",))
    policy.observe(after)
    arms = policy.selector.arms
    # with probing the round's own first epoch is the probing epoch seen when deciding; without, the one
    # reported after the step: 100 * sqrt(loss_sq)
    expected = {"a": 100.0, "b": 200.0} if probing else {"a": 400.0, "b": 500.0}
    assert {a: arms[a].reward for a in ("a", "b")} == pytest.approx(expected)
    assert [arms[a].time_stamp for a in ("a", "b")] == [1, 1] and [arms[a].count for a in "ab"] == [1, 1]
    assert arms["c"].count == 0 and arms["c"].reward == 100  # the straggler fed nothing back: its size reward


def test_oort_feedback_in_an_episode_without_probing_is_the_rounds_first_epoch():
    policy = OortPolicy(select_fraction=0.5)
    env = fedenv.parallel_env(num_clients=4, clients_per_round=4, num_rounds=3, device="cpu", probing=False,
                              train_samples=800, **policy.env_overrides)
    observe, fed_back = policy.observe, []

    def recording_observe(infos):
        stale = {a: (arm.reward, arm.count) for a, arm in policy.selector.arms.items()}
        observe(infos)
        trained = [a for a, i in infos.items() if i["selected"] and not i["dropped"]]
        fed_back.append(trained)
        for agent in trained:
            arm = policy.selector.arms[agent]
            info = infos[agent]  # after the step: the first local epoch of the round just played
            assert arm.reward == pytest.approx(info["data_size"] * math.sqrt(info["probe_loss_sq"]))
            assert arm.count == stale[agent][1] + 1 and arm.time_stamp == policy.round
            assert arm.reward != stale[agent][0]  # neither the size reward nor the previous participation's

    policy.observe = recording_observe
    run_episode(env, policy, seed=0)
    assert [len(t) for t in fed_back] == [2, 2, 2]


def test_a_never_seen_clients_duration_is_its_device_profile_estimate(write_trace):
    # trace clients: ms per sample for the 1e6-MAC reference model, median upload and download kbit/s
    profiles = [(2.0, (1000.0, 3000.0, 2000.0), (4000.0,)), (8.0, (500.0,), (1000.0, 9000.0, 1000.0)),
                (4.0, (4000.0,), (8000.0,))]
    trace = write_trace([{"client": i, "device": f"d{i}", "train_ms_per_sample": ms, "upload_kbps": list(up),
                          "download_kbps": list(down)} for i, (ms, up, down) in enumerate(profiles)])
    policy = OortPolicy(select_fraction=0.5)
    env = fedenv.parallel_env(num_clients=3, clients_per_round=3, num_rounds=1, device="cpu", probing=False,
                              train_samples=3000, trace=trace, **policy.env_overrides)
    observations, infos = env.reset(seed=0)
    policy.reset(0)
    policy.register_clients(profile_duration_s(env), probing=False)
    policy.act(observations, infos)
    sim = env.simulator
    bits, macs, sizes = sim.model_bits, sim.model_macs, sim.clients.data_size
    median_kbps = {0: (2000.0, 4000.0), 1: (500.0, 1000.0), 2: (4000.0, 8000.0)}  # (upload, download) by hand
    for i, agent in enumerate(env.possible_agents):
        t = int(sim.replay.assignment[i])
        up, down = median_kbps[t]
        by_hand = bits / (down * 1e3) + profiles[t][0] * macs / 1e6 * sizes[i] / 1e3 + bits / (up * 1e3)
        assert infos[agent]["probe_latency_s"] == 0  # never seen
        assert policy.selector.arms[agent].duration_s == pytest.approx(by_hand, rel=1e-12)
