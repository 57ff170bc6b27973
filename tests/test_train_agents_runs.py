"""train_agents.py runs: several seeds, extending a run, fine-tuning from a checkpoint, threads."""

import json

import pytest
import torch

import train_agents
from agents.checkpoint import load_checkpoint
from tests.helpers import strict_json_loads

TINY_FLAGS = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--local-epochs", "1",
              "--batch-size", "64", "--val-fraction", "0.9", "--partition", "iid", "--eval-seeds",
              "--eval-interval", "0", "--vdn-learning-starts", "1", "--vdn-batch-size", "4", "--vdn-hidden", "8"]


def error_line(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if ": error: " in line)


@pytest.fixture(scope="module")
def seed_runs(tmp_path_factory):
    """``--seeds 0 1``: one 1-episode run per seed."""
    run_dir = tmp_path_factory.mktemp("seeds")
    assert train_agents.main(["--episodes", "1", "--seeds", "0", "1", "--run-dir", str(run_dir), *TINY_FLAGS]) == 0
    return run_dir


def test_one_run_per_seed_in_its_own_folder(seed_runs):
    configs = {s: json.loads((seed_runs / f"seed_{s}" / "config.json").read_text()) for s in (0, 1)}
    assert [configs[s]["seed"] for s in (0, 1)] == [0, 1]
    weights = [load_checkpoint(seed_runs / f"seed_{s}" / "checkpoint.pt")["q_state"] for s in (0, 1)]
    assert not all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])  # seeded apart


def test_resume_with_episodes_extends_the_run(seed_runs, capsys):
    run_dir = seed_runs / "seed_1"
    assert train_agents.main(["--resume", str(run_dir), "--episodes", "2", "--eval-seeds"]) == 0
    config = json.loads((run_dir / "config.json").read_text())
    assert (config["episodes"], config["schedule_episodes"], config["seed"]) == (2, 1, 1)
    assert load_checkpoint(run_dir / "checkpoint.pt")["episodes"] == 2
    with pytest.raises(SystemExit):
        train_agents.main(["--resume", str(run_dir), "--episodes", "1", "--eval-seeds"])
    assert "--episodes=1: the run has played 2 episodes already" in error_line(capsys.readouterr().err)


def test_config_json_records_the_batching_and_checkpointing_a_resumed_run_keeps(tmp_path):
    run_dir = tmp_path / "run"
    assert train_agents.main(["--episodes", "2", "--num-envs", "2", "--checkpoint-interval", "3",
                              "--run-dir", str(run_dir), *TINY_FLAGS]) == 0
    assert train_agents.main(["--resume", str(run_dir), "--episodes", "4", "--eval-seeds"]) == 0
    config = json.loads((run_dir / "config.json").read_text())
    assert (config["num_envs"], config["checkpoint_interval"]) == (2, 3)
    assert train_agents.read_run_plan(run_dir).num_envs == 2


def test_resume_refuses_every_configuration_flag_but_episodes(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_agents.main(["--resume", str(tmp_path), "--episodes", "20", "--num-rounds", "3", "--seed", "0",
                           "--init-from", "x.pt"])
    assert exit_info.value.code == 2
    assert "drop --seed, --init-from, --num-rounds (start a new run" in error_line(capsys.readouterr().err)


def test_fine_tuning_from_the_command_line_names_a_layout_mismatch(seed_runs, tmp_path, capsys):
    checkpoint = seed_runs / "seed_0" / "checkpoint.pt"
    assert train_agents.main(["--episodes", "1", "--init-from", str(checkpoint), "--run-dir", str(tmp_path / "ok"),
                              *TINY_FLAGS, "--num-rounds", "3"]) == 0
    assert json.loads((tmp_path / "ok" / "config.json").read_text())["init_from"] == str(checkpoint)
    with pytest.raises(SystemExit):
        train_agents.main(["--episodes", "1", "--init-from", str(checkpoint), "--run-dir", str(tmp_path / "bad"),
                           *TINY_FLAGS, "--history-length", "1"])
    assert "observation layout differs from this env's" in error_line(capsys.readouterr().err)


@pytest.mark.parametrize("argv,message", [
    (["--seed", "1", "--seeds", "2", "3"], "give --seed or --seeds, not both"),
    (["--eval-interval", "-1"], "--eval-interval=-1 must be >= 0"),
    (["--threads", "0"], "--threads=0 must be >= 1"),
    (["--num-envs", "0"], "--num-envs=0 must be >= 1"),
    (["--checkpoint-interval", "0"], "--checkpoint-interval=0 must be >= 1"),
    (["--val-seeds", "10000"], "validation seeds [10000] must be in [0, 10000)"),
    (["--val-seeds", "1000", "--eval-seeds", "1000"], "validation seeds [1000] are also test seeds"),
])
def test_bad_run_options_are_one_line_errors(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_agents.main([*argv, "--run-dir", str(tmp_path / "run")])
    assert exit_info.value.code == 2 and message in error_line(capsys.readouterr().err)
    assert not (tmp_path / "run").exists()


def test_threads_sets_torch_intra_op_threads():
    before = torch.get_num_threads()
    try:
        train_agents.set_threads(2)
        assert torch.get_num_threads() == 2
        train_agents.set_threads(1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def run_files(run_dir):
    """Every file of a run folder and its bytes."""
    return {path.relative_to(run_dir): path.read_bytes() for path in sorted(run_dir.rglob("*")) if path.is_file()}


def test_a_new_run_into_a_folder_holding_a_run_is_refused_and_the_first_run_kept(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert train_agents.main(["--episodes", "1", "--run-dir", str(run_dir), *TINY_FLAGS]) == 0
    first = run_files(run_dir)
    with pytest.raises(SystemExit) as exit_info:
        train_agents.main(["--episodes", "1", "--seed", "1", "--run-dir", str(run_dir), *TINY_FLAGS])
    assert exit_info.value.code == 2
    assert error_line(capsys.readouterr().err).startswith(
        f"train_agents.py: error: --run-dir {run_dir} holds another run: continue it with --resume {run_dir}, or "
        f"give --overwrite to clear it first (it holds checkpoint.pt, config.json, events.out.tfevents.")
    assert run_files(run_dir) == first  # nothing of the first run lost
    (run_dir / "notes.txt").write_text("mine")
    assert train_agents.main(["--episodes", "1", "--seed", "1", "--run-dir", str(run_dir), "--overwrite",
                              *TINY_FLAGS]) == 0
    assert json.loads((run_dir / "config.json").read_text())["seed"] == 1
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 1  # TensorBoard sees one run, not two
    assert (run_dir / "notes.txt").read_text() == "mine"  # --overwrite deletes the run's files only


def test_overwrite_does_not_go_with_resume(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train_agents.main(["--resume", str(tmp_path), "--overwrite"])
    assert "--overwrite starts a new run in --run-dir; it does not go with --resume" in error_line(
        capsys.readouterr().err)


def test_a_resumed_run_keeps_the_empty_eval_seeds_of_the_original_run(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert train_agents.main(["--episodes", "1", "--run-dir", str(run_dir), *TINY_FLAGS]) == 0  # "--eval-seeds"
    assert json.loads((run_dir / "config.json").read_text())["eval_seeds"] == []
    capsys.readouterr()
    assert train_agents.main(["--resume", str(run_dir), "--episodes", "2"]) == 0
    assert "held-out seeds" not in capsys.readouterr().out  # no comparison, as the original run asked
    assert train_agents.read_run_plan(run_dir).eval_seeds == ()


def test_config_json_is_standard_json_and_reads_back_the_run_configuration_with_infinities(tmp_path):
    run_dir = tmp_path / "run"
    flags = [*TINY_FLAGS, "--round-deadline-s", "inf", "--vdn-max-grad-norm", "inf"]
    assert train_agents.main(["--episodes", "1", "--run-dir", str(run_dir), *flags]) == 0
    saved = strict_json_loads((run_dir / "config.json").read_text())
    assert saved["env"]["round_deadline_s"] is None and saved["vdn"]["max_grad_norm"] is None
    [planned] = train_agents.new_plans(train_agents.build_parser().parse_args(["--run-dir", str(run_dir), *flags]))
    assert planned.vdn_config.max_grad_norm == float("inf")
    read_back = train_agents.read_run_plan(run_dir)
    assert (read_back.env_config, read_back.vdn_config) == (planned.env_config, planned.vdn_config)


def test_overlap_learner_is_recorded_and_kept_on_resume(tmp_path, monkeypatch):
    seen = []
    original = train_agents.train_vdn

    def recording(*args, **kwargs):
        seen.append(kwargs["overlap_learner"])
        return original(*args, **kwargs)

    monkeypatch.setattr(train_agents, "train_vdn", recording)
    runs = {}
    for name, flags in (("overlap", ["--overlap-learner"]), ("default", [])):
        runs[name] = tmp_path / name
        assert train_agents.main(["--episodes", "2", "--run-dir", str(runs[name]), *flags, *TINY_FLAGS]) == 0
    assert json.loads((runs["overlap"] / "config.json").read_text())["overlap_learner"] is True
    assert json.loads((runs["default"] / "config.json").read_text())["overlap_learner"] is False
    assert train_agents.main(["--resume", str(runs["overlap"]), "--episodes", "3", "--eval-seeds"]) == 0
    assert seen == [True, False, True]  # the resumed run keeps the setting its config.json records
