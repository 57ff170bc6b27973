"""benchmarks/paper_checks.py: each figure computed by its paper's definition on hand-made records, and the
``--quick`` run producing every row of the closing table."""

from __future__ import annotations

import contextlib
import importlib.util
import io
from pathlib import Path

import pytest

from fedenv.baselines import ConfiguredPolicy
from fedenv.config import EnvConfig
from fedenv.evaluation.compare import policy_config
from fedenv.evaluation.rollout import EpisodeRecord

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "paper_checks.py"


def load_script():
    spec = importlib.util.spec_from_file_location("paper_checks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pc = load_script()


def record(accuracy: list[float], seed: int = 0, policy: str = "p") -> EpisodeRecord:
    return EpisodeRecord(policy, seed, test_accuracy=accuracy)


@pytest.fixture(scope="module")
def quick_run():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rows = pc.main(["--quick"])
    return rows, out.getvalue()


def test_speedup_is_fedavg_rounds_to_its_final_accuracy_over_the_methods_rounds():
    # FedAvg ends at 0.8 and first reaches it in round 4; the method reaches 0.8 in round 2: 4 / 2 = 2.
    # On seed 1 FedAvg first reaches its final 0.6 in round 3; the method in round 1: 3 / 1 = 3.
    records = {
        "fedavg": [record([0.1, 0.3, 0.5, 0.6, 0.8]), record([0.1, 0.2, 0.4, 0.6, 0.6], seed=1)],
        "fast": [record([0.1, 0.5, 0.8, 0.9, 0.9]), record([0.1, 0.6, 0.5, 0.5, 0.5], seed=1)],
        "slow": [record([0.1, 0.2, 0.3, 0.4, 0.79]), record([0.1, 0.2, 0.3, 0.4, 0.5], seed=1)],
    }
    speed = pc.speedups(records)
    assert speed["fedavg"] == [1.0, 1.0]
    assert speed["fast"] == [2.0, 3.0]
    assert speed["slow"] == [None, None]
    assert pc.rounds_to_reference(records) == {"fedavg": [4, 3], "fast": [2, 1], "slow": [None, None]}


def test_round_reduction_is_one_minus_method_rounds_over_fedavg_rounds():
    fedavg = [record([0.0] * 10 + [0.86]), record([0.0] * 4 + [0.9]), record([0.0, 0.1])]
    fedadp = [record([0.0] * 4 + [0.85]), record([0.0, 0.0, 0.88]), record([0.0, 0.9])]
    # seed 0: 1 - 4/10; seed 1: 1 - 2/4; seed 2: FedAvg never reaches 0.85.
    assert pc.round_reductions(fedavg, fedadp, 0.85) == pytest.approx([0.6, 0.5, None])
    assert pc.round_reductions(fedavg, fedadp, 0.95) == [None, None, None]


def test_relative_gain_and_paired_differences():
    method, reference = [record([0.5]), record([0.6])], [record([0.4]), record([0.4])]
    assert pc.relative_gain(method, reference) == pytest.approx(0.55 / 0.40 - 1)   # 37.5 %, relative
    assert pc.paired_differences(method, reference) == pytest.approx([0.1, 0.2])


def test_mean_text_counts_the_seeds_that_gave_a_value():
    assert pc.mean_text([1.0, 2.0, None]) == "1.50 (2/3 seeds)"
    assert pc.mean_text([None, None], "{:.1%}") == "never (0/2 seeds)"


def test_configured_policy_carries_its_overrides_into_the_env_config():
    policy = ConfiguredPolicy("fedprox-1", {"aggregation": "fedavg", "fedprox_mu": 1.0})
    config = policy_config(EnvConfig(), policy)
    assert (policy.name, config.fedprox_mu, config.probing) == ("fedprox-1", 1.0, False)


def test_settings_follow_the_papers():
    args = pc.parse_args(["--data-root", "somewhere"])
    adp, cm = pc.fedadp_config(args), pc.fedcm_config(args)
    samples = adp.component_options("partition").samples
    assert (adp.num_clients, adp.clients_per_round, samples, adp.batch_size, adp.local_epochs,
            adp.lr, adp.lr_decay) == (10, 10, 600, 32, 1, 0.01, 0.995)
    assert (cm.num_clients, cm.clients_per_round) == (20, 8)
    fedca, fedpdp = cm.component_options("aggregation", "fedca"), cm.component_options("aggregation", "fedpdp")
    assert (fedca.score, fedca.unnormalised, fedpdp.unnormalised) == ("ce", True, True)
    assert pc.FEDPROX_MUS == (0.001, 0.01, 0.1, 1.0)


def test_full_run_needs_a_data_root():
    with pytest.raises(SystemExit) as error, contextlib.redirect_stderr(io.StringIO()):
        pc.parse_args([])
    assert error.value.code == 2


def test_quick_run_has_every_row_of_the_closing_table(quick_run):
    rows, output = quick_run
    checks = [row["check"] for row in rows]
    assert checks == [
        "FedAdp: fewer rounds than FedAvg to a target accuracy", "fedcm-ts: speed-up vs FedAvg",
        "fedca: speed-up vs FedAvg", "fedpdp: speed-up vs FedAvg", "FedCM: accuracy gain (relative)",
        "FedProx: best mu of {0.001, 0.01, 0.1, 1}",
    ]
    assert all(row["paper"] and row["ours"] and row["differs"] for row in rows)
    assert "51 rounds, 1.96x (Table 5" in rows[1]["paper"]
    assert pc.closing_table(rows) in output
    for target in pc.QUICK["targets"]:
        assert f"target {target:.2f}" in rows[0]["ours"]


def test_quick_run_fedavg_against_itself_is_one(quick_run):
    _, output = quick_run
    fedavg_line = next(line for line in output.splitlines() if line.startswith("fedavg "))
    assert fedavg_line.endswith("1.00x (2/2 seeds)")


def test_fedprox_sweep_runs_its_own_fedavg_when_none_is_given():
    args = pc.parse_args(["--quick", "--only", "fedprox"])
    args.seeds = 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rows = pc.run_fedprox(args)
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines[-5:]] == ["0.001", "0.01", "0.1", "1", "fedavg"]
    assert rows[0]["ours"].startswith("mu = ")
