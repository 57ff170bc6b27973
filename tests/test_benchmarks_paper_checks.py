"""benchmarks/paper_checks.py: each figure computed by its paper's definition on hand-made records, the
rules that say "reproduced", the page writer (markers replaced, prose kept), and the ``--quick`` run
producing every row of the closing table."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
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
def quick_run(tmp_path_factory):
    records = tmp_path_factory.mktemp("quick") / "records.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        block = pc.main(["--quick", "--records", str(records)])
    return block, out.getvalue(), records


# Hand-made curves (round 0 is the initial model): FedAvg swings round to round around 0.8.
SWINGING_FEDAVG = record([0.1, 0.5, 0.81, 0.76, 0.83, 0.79, 0.78])   # first at >= 0.8 in round 2, ends at 0.78
FAST = record([0.1, 0.82, 0.85, 0.86, 0.88, 0.9, 0.9])                # first at >= 0.8 in round 1
SLOW = record([0.1, 0.3, 0.5, 0.6, 0.7, 0.75, 0.8])                   # first at >= 0.8 in round 6, the last
NEVER = record([0.1, 0.3, 0.5, 0.6, 0.7, 0.75, 0.79])                 # never reaches 0.8


def test_readme_speedup_is_reference_rounds_to_the_target_over_the_methods():
    # FedAvg first reaches 0.8 in round 2 (it then drops to 0.76 and ends at 0.78: the first crossing counts).
    assert pc.speedup_to_target(FAST, SWINGING_FEDAVG, 0.8) == 2.0       # 2 / 1
    assert pc.speedup_to_target(SLOW, SWINGING_FEDAVG, 0.8) == pytest.approx(2 / 6)
    assert pc.speedup_to_target(SWINGING_FEDAVG, SWINGING_FEDAVG, 0.8) == 1.0
    assert pc.speedup_to_target(NEVER, SWINGING_FEDAVG, 0.8) is None      # the method never reaches it
    assert pc.speedup_to_target(FAST, NEVER, 0.8) is None                 # the reference never does
    assert pc.speedup_to_target(FAST, SWINGING_FEDAVG, 0.05) is None      # reached before any round


def test_paper_speedup_is_reference_total_rounds_over_the_methods_rounds_to_the_target():
    # Six rounds in FedAvg's run, whether or not it needed them: 6 / 1, 6 / 6, 6 / 2.
    assert pc.speedup_over_total_rounds(FAST, SWINGING_FEDAVG, 0.8) == 6.0
    assert pc.speedup_over_total_rounds(SLOW, SWINGING_FEDAVG, 0.8) == 1.0
    assert pc.speedup_over_total_rounds(SWINGING_FEDAVG, SWINGING_FEDAVG, 0.8) == 3.0
    # Defined even when the reference never reaches the target; not when the method never does.
    assert pc.speedup_over_total_rounds(FAST, NEVER, 0.8) == 6.0
    assert pc.speedup_over_total_rounds(NEVER, SWINGING_FEDAVG, 0.8) is None


def test_speedup_verdict_needs_every_seed_to_reach_the_target_and_be_faster():
    assert pc.speedup_verdict([2.0, 1.5, 1.1]) == "reproduced (faster on 3 of 3 seeds)"
    assert pc.speedup_verdict([2.0, 1.0, 3.0]) == "not reproduced (not faster on 1 of 3 seeds)"
    assert pc.speedup_verdict([2.0, None, 3.0]).startswith("not reproduced (no speed-up on 1 of 3 seeds")


def test_round_reduction_is_one_minus_method_rounds_over_fedavg_rounds():
    fedavg = [record([0.0] * 10 + [0.86]), record([0.0] * 4 + [0.9]), record([0.0, 0.1])]
    fedadp = [record([0.0] * 4 + [0.85]), record([0.0, 0.0, 0.88]), record([0.0, 0.9])]
    # seed 0: 1 - 4/10; seed 1: 1 - 2/4; seed 2: FedAvg never reaches 0.85.
    reductions = pc.round_reductions(fedavg, fedadp, 0.85)
    assert reductions == pytest.approx([0.6, 0.5, None])
    assert pc.round_reductions(fedavg, fedadp, 0.95) == [None, None, None]
    assert pc.reduction_verdict(reductions).startswith("cannot be measured on 1 of 3 seeds")
    assert pc.reduction_verdict([0.6, 0.5]) == "reproduced (fewer rounds on 2 of 2 seeds)"
    assert pc.reduction_verdict([0.6, -0.5]) == "not reproduced (fewer rounds on 1 of 2 seeds)"


def test_relative_gain_paired_differences_and_their_verdict():
    method, reference = [record([0.5]), record([0.6])], [record([0.4]), record([0.4])]
    assert pc.relative_gain(method, reference) == pytest.approx(0.55 / 0.40 - 1)   # 37.5 %, relative
    assert pc.paired_differences(method, reference) == pytest.approx([0.1, 0.2])
    assert pc.gain_verdict([0.1, 0.2]) == "reproduced in direction (higher on 2 of 2 seeds)"
    assert pc.gain_verdict([0.1, 0.0]) == "not reproduced (higher on 1 of 2 seeds)"


def test_mean_text_counts_the_seeds_that_gave_a_value():
    assert pc.mean_text([1.0, 2.0, None]) == "1.50 (2/3 seeds)"
    assert pc.mean_text([None, None], "{:.1%}") == "never (0/2 seeds)"
    assert pc.per_seed_text([1.0, None], "{:.2f}x") == "1.00x / never"


def test_configured_policy_carries_its_overrides_into_the_env_config():
    policy = ConfiguredPolicy("fedprox-1", {"aggregation": "fedavg", "fedprox_mu": 1.0})
    config = policy_config(EnvConfig(), policy)
    assert (policy.name, config.fedprox_mu, config.probing) == ("fedprox-1", 1.0, False)


def test_settings_follow_the_papers_and_the_targets_are_fixed_in_the_code():
    args = pc.parse_args(["--data-root", "somewhere"])
    adp = pc.fedadp_config(args)
    samples = adp.component_options("partition").samples
    assert (adp.num_clients, adp.clients_per_round, samples, adp.batch_size, adp.local_epochs,
            adp.lr, adp.lr_decay) == (10, 10, 600, 32, 1, 0.01, 0.995)
    for unnormalised in (True, False):
        cm = pc.fedcm_config(args, unnormalised)
        fedca, fedpdp = cm.component_options("aggregation", "fedca"), cm.component_options("aggregation", "fedpdp")
        assert (cm.num_clients, cm.clients_per_round) == (20, 8)
        assert (fedca.score, fedca.unnormalised, fedpdp.unnormalised) == ("ce", unnormalised, unnormalised)
    assert pc.FEDPROX_MUS == (0.001, 0.01, 0.1, 1.0)
    assert 0.95 in pc.FEDADP_TARGETS   # the paper's MNIST target (Sec. II)
    assert (args.fedadp_targets, args.fedcm_target) == (pc.FEDADP_TARGETS, pc.FEDCM_TARGET)


def test_full_run_needs_a_data_root():
    with pytest.raises(SystemExit) as error, contextlib.redirect_stderr(io.StringIO()):
        pc.parse_args([])
    assert error.value.code == 2


def test_write_refuses_a_page_without_markers_before_running(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# no markers\n")
    with pytest.raises(SystemExit) as error, contextlib.redirect_stderr(io.StringIO()) as err:
        pc.parse_args(["--quick", "--write", "--page", str(page)])
    assert error.value.code == 2 and "paper-checks:start" in err.getvalue()


def test_records_file_is_not_overwritten(tmp_path):
    existing = tmp_path / "records.json"
    existing.write_text("{}")
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        pc.parse_args(["--quick", "--records", str(existing)])
    assert existing.read_text() == "{}"


def test_quick_run_has_every_row_of_the_closing_table(quick_run):
    block, output, _ = quick_run
    assert block in output
    for name in ("fedavg", "fedavg-eq3", "fedpdp [Table 1]", "fedca [Table 1]", "fedca [renormalised]",
                 "fedcm-ts [Table 1]", "fedcm-ts [renormalised]"):
        assert f"| {name} |" in block, name
    for check in ("FedAdp: fewer rounds than FedAvg to a target accuracy", "fedcm-ts [Table 1]: speed-up vs FedAvg",
                  "fedca [renormalised]: speed-up vs FedAvg", "fedpdp [Table 1]: speed-up vs FedAvg",
                  "fedcm-ts [Table 1]: accuracy gain (relative)", "FedProx: best mu of {0.001, 0.01, 0.1, 1}"):
        assert f"| {check}" in block, check
    assert "51 rounds, 1.96x (Table 5" in block
    assert "In short" in block and "`python benchmarks/paper_checks.py --quick" in block
    for definition in ("README's", "the paper's"):   # the tally of verdicts: 5 methods x 2 references
        assert f"FedCM's speed-ups by {definition} definition at 0.20: reproduced (faster on every seed) for " in block
        assert "of 10 method-reference pairs" in block


def test_the_page_writer_replaces_the_block_and_keeps_the_prose(quick_run, tmp_path):
    _, _, records = quick_run
    page = tmp_path / "paper-checks.md"
    page.write_text(f"# Title\n\nProse that stays.\n\n{pc.START}\nold numbers 0.94x\n{pc.END}\n\nAfter.\n")
    with contextlib.redirect_stdout(io.StringIO()):
        block = pc.main(["--from-records", str(records), "--write", "--page", str(page)])
    text = page.read_text()
    assert text.startswith("# Title\n\nProse that stays.\n\n" + pc.START + "\n")
    assert text.endswith(pc.END + "\n\nAfter.\n")
    assert "old numbers 0.94x" not in text and block in text


def test_records_round_trip_renders_the_same_tables(quick_run):
    block, _, records = quick_run
    document = json.loads(records.read_text())
    assert set(document["records"]) == set(pc.CHECKS)
    with contextlib.redirect_stdout(io.StringIO()):
        again = pc.main(["--from-records", str(records)])
    assert again == block


def test_fedprox_sweep_runs_its_own_fedavg_when_none_is_given():
    args = pc.parse_args(["--quick", "--only", "fedprox"])
    args.seeds = 1
    records = pc.run_fedprox(args)
    assert sorted(records) == sorted([f"fedprox-{mu:g}" for mu in pc.FEDPROX_MUS] + ["fedavg"])
