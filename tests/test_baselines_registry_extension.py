"""A policy added from outside the package (one class, one registration line) is found by name everywhere:
``make_policy``, :func:`fedenv.evaluation.compare` and ``evaluate.py --policies``."""

import csv
from typing import Any, ClassVar

import pytest

import evaluate
from fedenv.baselines import Policy, candidates, make_policy
from fedenv.config import EnvConfig
from fedenv.evaluation import compare
from fedenv.registry import POLICIES

TINY = EnvConfig(num_clients=4, clients_per_round=4, num_rounds=2, device="cpu")


class LowestLoss(Policy):
    """The half of the candidates with the lowest probing loss; keeps what it saw and what was selected."""

    name = "lowest-loss"
    env_overrides: ClassVar[dict[str, Any]] = {"aggregation": "fedavg"}
    probes = True  # it decides on this round's probing loss

    def __init__(self):
        self.rounds = []

    def reset(self, seed):
        self.rounds = []

    def act(self, observations, infos):
        offered = {agent: infos[agent]["probe_loss"] for agent in candidates(observations)}
        self.rounds.append({"probe_loss": offered})
        ranked = sorted(offered, key=offered.get)
        return {agent: 1 for agent in ranked[: len(ranked) // 2]}

    def observe(self, infos):
        self.rounds[-1]["selected"] = {agent for agent, info in infos.items() if info["selected"]}


@pytest.fixture
def lowest_loss_registered():
    POLICIES.register("lowest-loss", LowestLoss)
    yield
    POLICIES.unregister("lowest-loss")


def assert_lowest_half_was_selected(rounds):
    assert len(rounds) == TINY.num_rounds
    for played in rounds:
        losses, selected = played["probe_loss"], played["selected"]
        assert len(losses) == 4 and len(selected) == 2  # every client is a candidate; half of them upload
        others = set(losses) - selected
        assert max(losses[a] for a in selected) < min(losses[a] for a in others)


def test_the_registered_policy_runs_through_make_policy_and_compare(lowest_loss_registered, capsys):
    policy = make_policy("lowest-loss")
    records = compare(TINY, [policy, make_policy("fedavg")], seeds=[3])
    assert_lowest_half_was_selected(policy.rounds)
    assert records["lowest-loss"][0].num_selected == [2, 2] and records["fedavg"][0].num_selected == [4, 4]
    assert "\nlowest-loss " in capsys.readouterr().out
    with pytest.raises(ValueError, match="takes no option 'select_fraction'"):
        make_policy("lowest-loss", select_fraction=0.5)


def test_evaluate_py_accepts_the_registered_name(lowest_loss_registered, tmp_path, capsys):
    assert evaluate.main(["--policies", "lowest-loss,fedavg", "--seeds", "3", "--num-clients", "4",
                          "--clients-per-round", "4", "--num-rounds", "2", "--device", "cpu",
                          "--out", str(tmp_path), "--no-progress"]) == 0
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert [row["policy"] for row in rows] == ["lowest-loss", "fedavg"]
    assert "\nlowest-loss " in capsys.readouterr().out


def test_after_unregistering_the_name_is_unknown_again():
    assert "lowest-loss" not in POLICIES
    with pytest.raises(ValueError, match="policy 'lowest-loss' is not known"):
        make_policy("lowest-loss")
