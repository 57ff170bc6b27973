"""Each policy is evaluated in its own probing mode (``Policy.probes``) unless overridden, and the table,
results.csv and results.json say which."""

from __future__ import annotations

import csv
import json

import pytest

import evaluate
from agents.policy import GreedyPolicy
from fedenv.baselines import FedAvgPolicy, make_policy
from fedenv.config import EnvConfig
from fedenv.evaluation import policy_config
from fedenv.registry import POLICIES

TINY_FLAGS = ["--num-clients", "4", "--clients-per-round", "4", "--num-rounds", "2", "--device", "cpu", "--seeds",
              "3", "--no-progress"]


class ProbingFedAvg(FedAvgPolicy):
    """FedAvg declared as deciding on the probing epoch (stands in for a learned policy)."""

    name = "probing-fedavg"
    probes = True


@pytest.fixture
def probing_fedavg_registered():
    POLICIES.register("probing-fedavg", ProbingFedAvg)
    yield
    POLICIES.unregister("probing-fedavg")


@pytest.mark.parametrize("trained_probing", [True, False])
def test_a_learned_policy_plays_in_the_mode_it_was_trained_in_and_baselines_do_not_probe(trained_probing):
    from agents.networks import QNetwork

    trained_in = EnvConfig(probing=trained_probing)
    greedy = GreedyPolicy(QNetwork(17, (8,)), [f"f{i}" for i in range(17)], trained_in)
    assert greedy.probes is trained_probing
    assert policy_config(EnvConfig(probing=not trained_probing), greedy).probing is trained_probing
    assert not any(make_policy(name).probes for name in POLICIES.names())


@pytest.mark.parametrize("checkpoint_probing", [True, False])
def test_each_policy_runs_in_its_own_mode_whatever_the_base_config_says(checkpoint_probing):
    base = EnvConfig(probing=checkpoint_probing)
    assert policy_config(base, FedAvgPolicy()).probing is False
    assert policy_config(base, ProbingFedAvg()).probing is True
    assert policy_config(base, FedAvgPolicy(), probing=True).probing is True
    assert policy_config(base, ProbingFedAvg(), probing=False).probing is False
    assert policy_config(base, make_policy("fedprox")).fedprox_mu == 0.1  # the policy's overrides apply (FedCM)


def test_table_and_results_show_each_policys_mode(probing_fedavg_registered, tmp_path, capsys):
    assert evaluate.main(["--policies", "fedavg,probing-fedavg", *TINY_FLAGS, "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("policy"))
    assert lines[start].split()[:2] == ["policy", "probing"]
    table = lines[start:lines.index("", start)]  # the summary table, not the paired tables under it
    modes = {line.split()[0]: line.split()[1] for line in table if line.startswith(("fedavg ", "probing-fedavg "))}
    assert modes == {"fedavg": "off", "probing-fedavg": "on"}
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert {row["policy"]: row["probing"] for row in rows} == {"fedavg": "False", "probing-fedavg": "True"}
    document = json.loads((tmp_path / "results.json").read_text())
    assert {row["policy"]: row["probing"] for row in document["summary"]} == {"fedavg": False, "probing-fedavg": True}
    latency = {row["policy"]: float(row["total_latency_s"]) for row in rows}
    assert latency["fedavg"] <= latency["probing-fedavg"]  # the same clients, not charged for probing


@pytest.mark.parametrize("flag,mode", [(("--probing", "on"), "True"), (("--probing", "off"), "False")])
def test_the_flag_sets_every_policys_mode(probing_fedavg_registered, tmp_path, capsys, flag, mode):
    assert evaluate.main(["--policies", "fedavg,probing-fedavg", *TINY_FLAGS, *flag, "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert [row["probing"] for row in rows] == [mode, mode]
