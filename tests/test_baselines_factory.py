"""Building the registered baselines by name, and running every one of them on identical seeds."""

import numpy as np
import pytest

import fedenv
from fedenv.baselines import (
    FastestPolicy,
    OortPolicy,
    Policy,
    StaleFastestPolicy,
    make_policy,
    options_for,
    parse_policy_spec,
    policy_from_spec,
    policy_options,
)
from fedenv.evaluation import run_episode
from fedenv.registry import POLICIES


def test_every_registered_policy_is_built_by_name_with_its_registered_name():
    for name in POLICIES.names():
        assert make_policy(name).name == name


def test_options_go_to_the_policies_that_take_them():
    for name in POLICIES.names():
        takes = policy_options(name) is None or "select_fraction" in policy_options(name)
        assert options_for(name, select_fraction=0.3) == ({"select_fraction": 0.3} if takes else {})
    assert {"fedcm-ucb", "fedcm-ts", "oort", "fastest"} <= {
        name for name in POLICIES.names() if "select_fraction" in policy_options(name)}
    assert policy_options("fastest") == ("select_fraction",)
    assert policy_options("fedavg") == ()
    assert make_policy("fastest", select_fraction=0.3).select_fraction == 0.3
    assert isinstance(make_policy("oort", select_fraction=0.3, exploration=0.5), OortPolicy)
    assert make_policy("random", p=0.2).p == 0.2
    assert options_for("fedavg", select_fraction=0.3) == {}
    assert options_for("fedcm-ts", select_fraction=0.3) == {"select_fraction": 0.3}


def test_an_option_the_policy_does_not_take_is_refused_with_the_ones_it_takes():
    with pytest.raises(ValueError, match=r"policy 'fedavg' takes no option 'select_fraction'; it takes: none"):
        make_policy("fedavg", select_fraction=0.5)
    with pytest.raises(ValueError, match=r"policy 'random' takes no option 'q'; it takes: p"):
        make_policy("random", q=0.5)
    with pytest.raises(ValueError, match=r"policy 'nobody' is not known; allowed: fedavg, random"):
        make_policy("nobody")
    with pytest.raises(ValueError, match=r"select_fraction=0 must be in \(0, 1\]"):
        make_policy("fastest", select_fraction=0)


def test_a_factory_taking_any_keyword_gets_every_option():
    def flexible(**options):
        return FastestPolicy(**options)

    POLICIES.register("flexible", flexible)
    try:
        assert policy_options("flexible") is None
        assert options_for("flexible", select_fraction=0.4) == {"select_fraction": 0.4}
        assert make_policy("flexible", select_fraction=0.4).select_fraction == 0.4
    finally:
        POLICIES.unregister("flexible")


class Recorder(Policy):
    """Wraps a policy and records the candidates it was offered each round."""

    def __init__(self, inner):
        self.inner, self.name, self.env_overrides, self.seen = inner, inner.name, inner.env_overrides, []
        self.looks_ahead = inner.looks_ahead

    def reset(self, seed):
        self.inner.reset(seed)

    def look_ahead(self, round_s):
        self.inner.look_ahead(round_s)

    def act(self, observations, infos):
        self.seen.append(sorted(a for a, o in observations.items() if o["action_mask"][1]))
        return self.inner.act(observations, infos)

    def observe(self, infos):
        self.inner.observe(infos)


def test_identical_seeds_give_identical_partitions_traces_and_candidates_across_policies():
    base = fedenv.EnvConfig(num_clients=6, clients_per_round=4, num_rounds=3)
    seen = {}
    for name in POLICIES.names():
        policy = Recorder(make_policy(name))
        env = fedenv.parallel_env(base, **policy.env_overrides)
        record = run_episode(env, policy, seed=1003)
        simulator = env.simulator
        seen[name] = ([i.tolist() for i in simulator.client_indices], simulator.replay.assignment.tolist(),
                      simulator.replay.offset, policy.seen, record.test_accuracy[0])
    first = seen["fedavg"]
    assert all(value == first for value in seen.values())
    assert len({tuple(map(tuple, value[3])) for value in seen.values()}) == 1


@pytest.mark.parametrize("name", POLICIES.names())
def test_every_baseline_runs_and_reports_its_aggregation(name):
    policy = make_policy(name, **options_for(name, select_fraction=0.5))
    env = fedenv.parallel_env(num_clients=4, clients_per_round=4, num_rounds=3, **policy.env_overrides)
    record = run_episode(env, policy, seed=5)
    assert len(record.test_accuracy) == 4 and all(np.isfinite(record.reward))
    if "select_fraction" in (policy_options(name) or ()):
        assert max(record.num_selected) <= 2
    env.reset(seed=5)
    _, _, _, _, infos = env.step({a: 1 for a in env.agents})
    weights = [i["aggregation_weight"] for i in infos.values() if i["kept"]]
    assert weights and all(w > 0 for w in weights)
    if env.config.aggregation in ("fedavg", "fedadp"):
        assert sum(weights) == pytest.approx(1.0)


def test_fixed_ratio_policies_default_to_fedcms_eight_of_twenty_clients():
    for name in ("fedcm-ucb", "fedcm-ts", "oort", "fastest"):
        assert make_policy(name).select_fraction == 8 / 20, name  # Kim et al., arXiv 2012.03270, Tables 3-5


def test_a_policy_spec_is_a_name_and_literal_options():
    assert parse_policy_spec("fastest") == ("fastest", {})
    assert parse_policy_spec("stale-fastest:k=2, drop=0") == ("stale-fastest", {"k": 2, "drop": 0})
    assert parse_policy_spec("oort:select_fraction=0.25,name='o'") == ("oort", {"select_fraction": 0.25, "name": "o"})
    for spec, part in (("stale-fastest:k", "k"), ("stale-fastest:=2", "=2"), ("random:p=half", "p=half")):
        with pytest.raises(ValueError, match=rf"policy '{spec}': option '{part}' is not OPTION=VALUE"):
            parse_policy_spec(spec)


def test_a_policy_built_from_a_spec_takes_its_options_and_the_rounds_and_is_named_by_the_spec():
    policy = policy_from_spec("stale-fastest:k=2", num_rounds=7)
    assert isinstance(policy, StaleFastestPolicy) and (policy.k, policy.num_rounds) == (2, 7)
    assert policy.name == "stale-fastest:k=2"
    with pytest.raises(ValueError, match=r"num_rounds=9 is not the federation's 7"):  # the federation's, not a choice
        policy_from_spec("stale-fastest:num_rounds=9", num_rounds=7)
    assert policy_from_spec("fastest:select_fraction=0.5", select_fraction=0.25).select_fraction == 0.5  # spec's wins
    assert "name" not in policy_options("stale-fastest")  # named by its spec, never by an option
    assert policy_from_spec("fastest", num_rounds=7).name == "fastest"  # fastest takes no num_rounds
    with pytest.raises(ValueError, match=r"policy 'fastest' takes no option 'k'"):
        policy_from_spec("fastest:k=2", num_rounds=7)
