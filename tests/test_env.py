"""The PettingZoo layer (fedenv.env.ClientSelectionEnv): PettingZoo's API and seed tests, spaces, actions,
observations, infos, seeding, episode ends and configuration errors. The rounds themselves are tested in
tests/test_simulator.py."""

import numpy as np
import pettingzoo
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
from pettingzoo.utils import parallel_to_aec

import fedenv
from fedenv.baselines import FedAvgPolicy, Policy
from fedenv.config import EnvConfig
from fedenv.env import INFO_KEYS, ClientSelectionEnv
from fedenv.evaluation import run_episode
from tests.helpers import expected_round_latency_s, tiny_config

SOME_NOT_CANDIDATES = dict(num_clients=5, clients_per_round=3, num_rounds=3)


def test_parallel_api_test_passes(make_env):
    parallel_api_test(make_env(**SOME_NOT_CANDIDATES), num_cycles=10)


def test_aec_api_test_passes_including_observation_bounds(make_env):
    api_test(parallel_to_aec(make_env(**SOME_NOT_CANDIDATES)), num_cycles=10)


def test_parallel_seed_test_passes(tiny_config):
    parallel_seed_test(lambda: ClientSelectionEnv(tiny_config))


def pattern(agents, round_index):
    return {a: int((round_index + i) % 3 != 0) for i, a in enumerate(agents)}


def assert_same(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    else:
        assert a == b


def play(env, seed, rounds):
    trajectory = [env.reset(seed=seed)]
    for t in range(rounds):
        trajectory.append(env.step(pattern(env.possible_agents, t)))
    return trajectory


def test_c5_same_seed_same_actions_identical_whole_episode_and_the_seed_fixes_the_federation():
    config = tiny_config(num_clients=6, clients_per_round=4, num_rounds=12)
    env, again, other = (fedenv.parallel_env(config) for _ in range(3))
    first, second = play(env, 7, 12), play(again, 7, 12)
    for a, b in zip(first, second):
        assert_same(a, b)
    assert first[-1][3]["client_0"] is True  # truncated at the end of round 12
    play(other, 8, 1)
    assert [len(s) for s in env.simulator.client_indices] != [len(s) for s in other.simulator.client_indices]
    assert env.simulator.replay.assignment.tolist() != other.simulator.replay.assignment.tolist()
    assert_same(env.reset(), again.reset())  # without a seed, the next episode's seed comes from the last one
    assert env.simulator.episode_seed == again.simulator.episode_seed != 7  # a new episode, the same in both


def test_c6_step_after_the_last_round_says_reset_is_needed(tiny_env):
    tiny_env.reset(seed=0)
    for _ in range(2):
        tiny_env.step({})
    assert tiny_env.agents == []
    with pytest.raises(RuntimeError, match=r"episode is over.*reset"):
        tiny_env.step({})
    tiny_env.reset(seed=0)
    _, _, _, _, infos = tiny_env.step({})  # works again after reset
    assert infos["client_0"]["round"] == 1


def test_actions_accepted_types_and_errors_name_the_agent(tiny_env):
    tiny_env.reset(seed=0)
    _, _, _, _, infos = tiny_env.step({"client_0": np.int64(1), "client_1": np.array(1), "client_2": 0})
    assert [infos[a]["selected"] for a in tiny_env.possible_agents] == [True, True, False]
    for bad, message in [(2, "client_1"), (1.0, "client_1"), (np.array([1, 0]), "client_1"), ("1", "client_1")]:
        with pytest.raises(ValueError, match=message):
            tiny_env.step({"client_1": bad})
    with pytest.raises(ValueError, match="unknown agent 'client_9'"):
        tiny_env.step({"client_9": 1})


@pytest.mark.parametrize("bad", [2, -1, 0.5, True, np.array([1]), "1", None])
def test_invalid_actions_raise_value_error_naming_the_agent(tiny_env, bad):
    tiny_env.reset(seed=0)
    with pytest.raises(ValueError, match="client_2"):
        tiny_env.step({"client_0": 1, "client_2": bad})


def test_missing_key_means_zero_and_non_candidate_actions_are_ignored(make_env):
    def outcome(actions_for):
        env = make_env(num_clients=5, clients_per_round=2)
        observations, _ = env.reset(seed=3)
        result = env.step(actions_for(observations))
        info = result[4]["client_0"]
        return (result[1]["client_0"], info["validation_accuracy"], info["test_accuracy"],
                [i["selected"] for i in result[4].values()])

    candidates = lambda obs: [a for a, o in obs.items() if o["action_mask"][1]]  # noqa: E731
    explicit = outcome(lambda obs: {a: (1 if a in candidates(obs)[:1] else 0) for a in obs})
    missing = outcome(lambda obs: {candidates(obs)[0]: 1})
    ignored = outcome(lambda obs: {a: (1 if a == candidates(obs)[0] or a not in candidates(obs) else 0) for a in obs})
    assert explicit == missing == ignored
    assert sum(explicit[3]) == 1


def test_observations_in_bounds_infos_complete_and_final_round_has_no_candidates(make_env):
    env = make_env(**SOME_NOT_CANDIDATES)
    space = env.observation_space("client_0")
    observations, infos = env.reset(seed=1)
    while True:
        for agent in env.possible_agents:
            assert space.contains(observations[agent]) and observations[agent]["observation"].dtype == np.float32
            assert set(infos[agent]) == set(INFO_KEYS)
        if not env.agents:
            break
        observations, rewards, terminations, truncations, infos = env.step({a: 1 for a in env.agents})
        assert len(set(rewards.values())) == 1 and isinstance(rewards["client_0"], float)
        assert not any(terminations.values()) and all(truncations.values()) == (not env.agents)
    assert all(o["action_mask"].tolist() == [1, 0] for o in observations.values())
    assert env.state().shape == (5 * len(env.feature_names),)


def test_infos_report_each_round_as_the_latency_model_and_the_actions_give_it(make_env):
    env = make_env(num_clients=6, clients_per_round=4, num_rounds=4, local_epochs=3)
    observations, infos = env.reset(seed=2)
    clock_s = 0.0
    for t in range(4):
        actions = pattern(env.possible_agents, t)
        candidate = {a: bool(observations[a]["action_mask"][1]) for a in env.possible_agents}
        assert candidate == {a: infos[a]["candidate"] for a in env.possible_agents}
        selected = [i for i, a in enumerate(env.possible_agents) if actions[a] and candidate[a]]
        latency_s = expected_round_latency_s(env.simulator, np.array(selected, dtype=np.int64))
        observations, _, _, _, infos = env.step(actions)
        clock_s += latency_s
        assert [infos[a]["selected"] for a in env.possible_agents] == [i in selected for i in range(6)]
        for info in infos.values():
            assert info["round"] == t + 1
            assert info["round_latency_s"] == pytest.approx(latency_s)
            assert info["upload_mb"] == pytest.approx(len(selected) * env.simulator.model_size_mb)
            assert info["wall_clock_s"] == pytest.approx(clock_s)


def test_target_accuracy_ends_by_termination(make_env):
    env = make_env(num_rounds=5, target_accuracy=0.3)  # on the reward's split: validation by default
    _, infos = env.reset(seed=0)
    assert infos["client_0"]["validation_accuracy"] < 0.3
    _, _, terminations, truncations, infos = env.step({a: 1 for a in env.agents})
    assert infos["client_0"]["validation_accuracy"] >= 0.3
    assert terminations["client_0"] is True and truncations["client_0"] is False and env.agents == []


class Nobody(Policy):
    name = "nobody"

    def act(self, observations, infos):
        return {}


def test_default_reward_weights_make_selecting_nobody_worse_than_fedavg():
    env = fedenv.parallel_env()
    fedavg_returns = []
    for seed in (10_005, 10_006, 10_007):  # training seeds, not evaluation seeds; 10005 has a bad straggler
        fedavg, nobody = run_episode(env, FedAvgPolicy(), seed), run_episode(env, Nobody(), seed)
        assert nobody.team_return < min(0.0, fedavg.team_return)
        assert nobody.final_accuracy == nobody.test_accuracy[0]  # no upload: the model never changed
        assert nobody.validation_accuracy[-1] == nobody.validation_accuracy[0]
        fedavg_returns.append(fedavg.team_return)
    assert np.mean(fedavg_returns) > 0


def test_registered_with_pettingzoo_and_config_round_trips():
    env = pettingzoo.make("parallel", fedenv.ENV_ID, num_rounds=2, num_clients=3, clients_per_round=2)
    assert env.possible_agents == ["client_0", "client_1", "client_2"]
    config = EnvConfig(num_clients=7, trace="default", target_accuracy=0.9)
    assert EnvConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize("field,value,message", [
    ("clients_per_round", 11, "clients_per_round=11 must be <= num_clients=10"),
    ("num_rounds", 0, "num_rounds=0 must be an integer >= 1"),
    ("dataset", "cifar", "dataset='cifar' is not known; allowed: mnist5k, mnist, fashion-mnist"),
    ("model", "vgg", "allowed: mlp, lenet5"),
    ("num_clients", 1000, "num_clients=1000 but trace 'default' holds 100 clients"),
])
def test_bad_config_values_raise_clear_errors(field, value, message):
    with pytest.raises(ValueError, match=message):
        fedenv.parallel_env(**{field: value})


ACTION = st.one_of(
    st.sampled_from([0, 1]),
    st.sampled_from([np.int8(0), np.int64(1), np.uint8(1), np.int32(0)]),
    st.sampled_from([np.array(0), np.array(1)]),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_clients=st.integers(1, 5),
    per_round_fraction=st.floats(0.01, 1.0),
    num_rounds=st.integers(1, 3),
    local_epochs=st.integers(1, 2),
    partition=st.sampled_from(["fedmarl", "dirichlet", "iid"]),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_fuzzed_configs_and_actions_keep_the_contract(num_clients, per_round_fraction, num_rounds, local_epochs,
                                                       partition, seed, data):
    clients_per_round = max(1, round(per_round_fraction * num_clients))
    env = fedenv.parallel_env(tiny_config(num_clients=num_clients, clients_per_round=clients_per_round,
                                          num_rounds=num_rounds, local_epochs=local_epochs, partition=partition,
                                          batch_size=64, val_fraction=0.8))
    space = env.observation_space("client_0")
    observations, infos = env.reset(seed=seed)
    for t in range(num_rounds):
        assert all(space.contains(observations[a]) for a in env.possible_agents)
        present = data.draw(st.lists(st.sampled_from(env.possible_agents), unique=True))
        actions = {agent: data.draw(ACTION) for agent in present}
        chosen = [a for a in env.possible_agents if infos[a]["candidate"] and actions.get(a, 0) == 1]
        observations, rewards, terminations, truncations, infos = env.step(actions)
        assert set(rewards) == set(terminations) == set(truncations) == set(infos) == set(env.possible_agents)
        assert len(set(rewards.values())) == 1 and np.isfinite(rewards["client_0"])
        assert all(type(v) is bool for v in list(terminations.values()) + list(truncations.values()))
        assert [a for a in env.possible_agents if infos[a]["selected"]] == chosen
        assert infos["client_0"]["round"] == t + 1
        assert infos["client_0"]["upload_mb"] == pytest.approx(len(chosen) * env.simulator.model_size_mb)
    assert env.agents == []
    assert all(truncations.values())
    with pytest.raises(RuntimeError):
        env.step({})
