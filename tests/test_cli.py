import argparse
import csv
import dataclasses
import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import evaluate
import train_agents
from agents.config import VDNConfig
from fedenv.baselines import compared_policies
from fedenv.calibrate import build_parser as build_calibrate_parser
from fedenv.cli import (
    FlagParser,
    add_dataclass_arguments,
    dataclass_from_args,
    env_config_from_args,
    field_help,
    parse_with_config_file,
)
from fedenv.config import EnvConfig
from fedenv.registry import AGGREGATION_RULES

ROOT = Path(__file__).resolve().parents[1]
ENV_FLAGS = {"--" + f.name.replace("_", "-"): f for f in dataclasses.fields(EnvConfig)
             if not f.name.endswith("_options")}
"""One flag per EnvConfig field but the components' options, which are one flag per option (--dirichlet-alpha)."""
TINY_FLAGS = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--local-epochs", "1",
              "--batch-size", "64", "--val-fraction", "0.9", "--partition", "iid"]


def error_line(stderr: str) -> str:
    """The ``PROG: error: MESSAGE`` line of a usage error."""
    return next(line for line in stderr.splitlines() if ": error: " in line)


def description(action: argparse.Action) -> str:
    """An action's help without the ``(default: ...)`` it ends with."""
    return (action.help or "").split("(default:")[0].strip()


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    completed = subprocess.run(
        [sys.executable, "train_agents.py", "--episodes", "3", "--run-dir", str(run_dir), "--eval-seeds", "1000",
         "--no-progress", "--vdn-learning-starts", "2", *TINY_FLAGS],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    return run_dir, completed.stdout


def test_train_agents_writes_checkpoint_logs_and_compares_policies(trained_run):
    run_dir, stdout = trained_run
    assert (run_dir / "checkpoint.pt").is_file()
    assert list(run_dir.glob("events.out.tfevents.*"))
    config = json.loads((run_dir / "config.json").read_text())
    assert config["env"]["num_clients"] == 3 and config["episodes"] == 3
    table = stdout[stdout.index("held-out seeds"):]
    for policy in ("fedavg", "random", "vdn"):
        assert f"\n{policy} " in table


def test_tensorboard_holds_the_documented_tags(trained_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir, _ = trained_run
    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    tags = set(accumulator.Tags()["scalars"])
    assert {"charts/episodic_return", "charts/epsilon", "charts/SPS", "losses/td_loss", "fl/final_accuracy",
            "fl/total_latency_s", "fl/total_upload_mb", "fl/participation_rate"} <= tags
    assert not {"losses/margin_loss", "charts/demonstration_weight"} & tags  # no demonstrator in this run
    steps = [event.step for event in accumulator.Scalars("charts/episodic_return")]
    assert steps == [2, 4, 6]  # x-axis in FL rounds


def test_evaluate_with_checkpoint_prints_table_and_writes_files(trained_run, tmp_path, capsys):
    run_dir, _ = trained_run
    out = tmp_path / "eval"
    assert evaluate.main(["--checkpoint", str(run_dir / "checkpoint.pt"), "--episodes", "2", "--out", str(out),
                          "--no-progress"]) == 0
    printed = capsys.readouterr().out
    for policy in ("fedavg", "random", "vdn"):
        assert f"\n{policy} " in printed
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [(r["policy"], r["seed"]) for r in rows] == [
        (p, s) for p in ("fedavg", "random", "vdn") for s in ("1000", "1001")]
    assert all(float(r["rounds_to_fedavg"]) <= 2 for r in rows if r["policy"] == "fedavg")
    document = json.loads((out / "results.json").read_text())
    assert [row["policy"] for row in document["summary"]] == ["fedavg", "random", "vdn"]
    assert document["env_config"]["num_clients"] == 3  # rebuilt from the checkpoint
    for plot in ("summary", "learning_curves"):
        assert (out / f"{plot}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_all_policies_next_to_the_learned_one(trained_run, tmp_path, capsys):
    run_dir, _ = trained_run
    out = tmp_path / "all"
    assert evaluate.main(["--checkpoint", str(run_dir / "checkpoint.pt"), "--policies", "all", "--episodes", "1",
                          "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    expected = [*compared_policies(), "vdn"]
    rows = [line.split()[0] for line in printed[printed.index("policy "):].splitlines()[2:] if line.strip()]
    rows = rows[:len(expected)]
    assert rows == expected
    document = json.loads((out / "results.json").read_text())
    assert [row["policy"] for row in document["summary"]] == expected


def test_a_checkpoint_with_policies_that_leave_out_vdn_warns_that_its_agent_is_not_evaluated(trained_run, tmp_path,
                                                                                              capsys):
    run_dir, _ = trained_run
    for policies, warned in (("fedavg", True), ("fedavg,vdn", False)):
        assert evaluate.main(["--checkpoint", str(run_dir / "checkpoint.pt"), "--policies", policies, "--episodes",
                              "1", "--out", str(tmp_path / policies), "--no-progress"]) == 0
        captured = capsys.readouterr()
        assert ("warning: --policies leaves out vdn" in captured.err) is warned
        assert ("\nvdn " in captured.out) is not warned


def config_args(tmp_path, text: str, *flags: str) -> argparse.Namespace:
    """train_agents.py's flags parsed with a --config file holding ``text``, then ``flags``."""
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return parse_with_config_file(train_agents.build_parser(), ["--config", str(path), *flags])


def test_config_file_sets_defaults_and_flags_win(tmp_path):
    args = config_args(tmp_path, "num-rounds: 7\nnum_clients: 4\nvdn-gamma: 0.5\n", "--num-clients", "6")
    assert (args.num_rounds, args.num_clients, args.vdn_gamma) == (7, 6, 0.5)
    with pytest.raises(SystemExit):
        config_args(tmp_path, "num-roundz: 7\n")


def test_config_file_values_are_parsed_as_their_flags(tmp_path):
    text = ('download: "false"\nvdn-double-q: "no"\nno_progress: "true"\nvdn_hidden: 32\n'
            'eval_seeds: 1000\nlr: 1e-3\nnum-rounds: "4"\n')
    args = config_args(tmp_path, text)
    assert (args.download, args.vdn_double_q, args.no_progress) == (False, False, True)
    assert (args.vdn_hidden, args.eval_seeds, args.lr, args.num_rounds) == ([32], [1000], 0.001, 4)
    assert env_config_from_args(args).download is False
    args = config_args(tmp_path, text, "--download", "--eval-seeds", "7", "8")
    assert (args.download, args.eval_seeds) == (True, [7, 8])  # flags win over the file


def test_none_unsets_an_optional_field_that_a_config_file_set(tmp_path):
    text = ("train_samples: 600\nround_deadline_s: 5\nvdn_demonstrator: stale-fastest\n"
            "vdn_demonstration_final_weight: 0\n")
    args = config_args(tmp_path, text)
    assert (env_config_from_args(args).train_samples, env_config_from_args(args).round_deadline_s) == (600, 5.0)
    assert dataclass_from_args(VDNConfig, args, prefix="vdn-").demonstration_final_weight == 0.0
    # the reviewer's case: the file's fading teacher dropped on the command line, with its demonstrator
    args = config_args(tmp_path, text, "--train-samples", "None", "--round-deadline-s", "none",
                       "--vdn-demonstrator", "", "--vdn-demonstration-final-weight", "none")
    config = env_config_from_args(args)
    assert (config.train_samples, config.round_deadline_s) == (None, None)
    assert dataclass_from_args(VDNConfig, args, prefix="vdn-").validate() == VDNConfig()
    # in a config file, an optional field's null (or empty entry) is its unset value, not a refusal
    config = env_config_from_args(config_args(tmp_path, "test_samples:\nround_deadline_s: null\nnum_rounds: 4\n"))
    assert (config.test_samples, config.round_deadline_s, config.num_rounds) == (None, None, 4)
    # a field that is not optional does not take it
    with pytest.raises(SystemExit):
        train_agents.build_parser().parse_args(["--num-rounds", "none"])


@pytest.mark.parametrize("text,message", [
    ("download: maybe\n", "key 'download': 'maybe' is not a boolean"),
    ("num_rounds: many\n", "key 'num_rounds': 'many' is not a valid int for --num-rounds"),
    ("num_rounds: [3, 4]\n", "key 'num_rounds': [3, 4] is not one value; --num-rounds takes one"),
    ("vdn_hidden: [32, wide]\n", "key 'vdn_hidden': 'wide' is not a valid int for --vdn-hidden"),
    ("eval_seeds: {first: 1000}\n", "key 'eval_seeds': {'first': 1000} is not one value"),
    ("preset: mnist-huge\n", "key 'preset': 'mnist-huge' is not allowed for --preset; allowed: "),
    ("device: true\n", "key 'device': True is not a valid str for --device"),
    ("lr:\n", "key 'lr': no value (an empty entry or null); give --lr a value or remove the key"),
    ("num_rounds: null\n", "key 'num_rounds': no value (an empty entry or null); give --num-rounds a value or "
                           "remove the key"),
    ("round_deadline_s: soon\n", "key 'round_deadline_s': 'soon' is not a valid float or none for "
                                 "--round-deadline-s"),
])
def test_bad_config_file_values_fail_before_training_with_one_line(text, message, tmp_path, capsys):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(SystemExit) as exit_info:
        train_agents.main(["--config", str(path), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert exit_info.value.code == 2
    error = error_line(capsys.readouterr().err)
    assert f"config file {path}: {message}" in error
    assert not (tmp_path / "run").exists()


def test_evaluate_into_a_folder_holding_another_evaluation_is_refused_and_keeps_it(tmp_path, capsys):
    out = tmp_path / "eval"
    argv = ["--policies", "fedavg", "--episodes", "1", "--out", str(out), "--no-progress", *TINY_FLAGS]
    assert evaluate.main(argv) == 0
    first = {path.name: path.read_bytes() for path in out.iterdir()}
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main([*argv, "--seeds", "1001"])
    assert exit_info.value.code == 2
    assert error_line(capsys.readouterr().err) == (
        f"evaluate.py: error: --out {out} holds another evaluation: choose another folder, or give --overwrite to "
        f"clear it first (it holds learning_curves.png, results.csv, results.json, summary.png)")
    assert {path.name: path.read_bytes() for path in out.iterdir()} == first
    assert evaluate.main([*argv, "--seeds", "1001", "--overwrite"]) == 0
    assert [row["seed"] for row in csv.DictReader((out / "results.csv").open())] == ["1001"]


def test_evaluate_builds_policies_with_their_options_and_the_federations_rounds(tmp_path):
    policies, checkpoints = evaluate.build_policies(
        evaluate.policy_specs(["fastest,late-rounds", "stale-fastest:k=2,drop=0", "fastest:select_fraction=0.5"],
                              learned=False), [], [], select_fraction=0.25, num_rounds=4)
    assert [p.name for p in policies] == ["fastest", "late-rounds", "stale-fastest:k=2,drop=0",
                                          "fastest:select_fraction=0.5"]
    assert checkpoints == [None] * 4
    assert [policies[0].select_fraction, policies[3].select_fraction] == [0.25, 0.5]  # the spec's own wins
    assert [policies[1].num_rounds, policies[2].num_rounds] == [4, 4]  # not their default 20
    assert (policies[2].k, policies[2].drop) == (2, 0)
    # end to end: with 2 rounds, stale-fastest's last 2 rounds upload every candidate (drop=0), as FedAvg does;
    # built with its default 20 rounds it would upload one client a round
    out = tmp_path / "eval"
    assert evaluate.main(["--policies", "fedavg", "stale-fastest:last_rounds=2,drop=0", "--episodes", "1", "--out",
                          str(out), "--no-progress", *TINY_FLAGS]) == 0
    summary = json.loads((out / "results.json").read_text())["summary"]
    uploads = {row["policy"]: row["total_upload_mb_mean"] for row in summary}
    assert uploads["stale-fastest:last_rounds=2,drop=0"] == uploads["fedavg"] > 0


def test_evaluate_policy_items_lose_stray_spaces_and_empty_parts():
    assert evaluate.policy_specs(["fedavg, random,", " stale-fastest: k=2,,drop=0 ", "oort:"], learned=False) == [
        "fedavg", "random", "stale-fastest:k=2,drop=0", "oort"]


def test_an_evaluation_of_references_alone_says_that_nothing_is_paired(tmp_path, capsys):
    assert evaluate.main(["--policies", "late-rounds:last_rounds=1", "--episodes", "1", "--out", str(tmp_path / "e"),
                          "--no-progress", *TINY_FLAGS]) == 0
    assert "no paired differences: neither fedavg nor a baseline that --policies all compares ran" in (
        capsys.readouterr().out)


def test_a_yaml_mapping_among_the_policies_of_a_config_file_is_refused_naming_the_key(tmp_path, capsys):
    path = tmp_path / "eval.yaml"
    path.write_text("policies:\n  - fedavg\n  - oort: select_fraction=0.5\n")
    with pytest.raises(SystemExit):
        evaluate.main(["--config", str(path), "--out", str(tmp_path / "e")])
    assert (f"config file {path}: key 'policies': {{'oort': 'select_fraction=0.5'}} is not one value for --policies "
            "(YAML reads 'a: b' as a mapping: quote it)") in error_line(capsys.readouterr().err)
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("argv,message", [
    (["--clients-per-round", "20"], "clients_per_round=20 must be <= num_clients=10"),
    (["--policies", "fedavg,oracle"], "policy 'oracle' is not known; allowed: fedavg"),
    (["--policies", "vdn"], "policy vdn needs --checkpoint"),
    (["--checkpoint", "missing.pt"], "no checkpoint at missing.pt"),
    (["--policies", "fedavg,oort", "fedavg"], "--policies names one policy twice: fedavg and fedavg"),
    (["--policies", "all", "fedavg"], "--policies all fedavg: 'all' stands alone"),
    (["--policies", "stale-fastest:k"], "policy 'stale-fastest:k': option 'k' is not OPTION=VALUE"),
    (["--policies", "fastest:k=2"], "policy 'fastest' takes no option 'k'; it takes: select_fraction"),
    (["--policies", "stale-fastest:k=0"], "stale-fastest k=0, last_rounds=3, drop=1: need k >= 1"),
    (["--policies", "late-rounds:last_rounds=3", "--num-rounds", "2"], "need k >= 0 and 0 <= last_rounds <= "
                                                                       "num_rounds=2"),
    (["--policies", "stale-fastest", "--num-rounds", "2"], "(its default options; give others as "
                                                           "stale-fastest:OPTION=VALUE,...)"),
    (["--policies", "fedavg, fedavg"], "--policies names one policy twice: fedavg and fedavg"),
    (["--policies", "oort:select_fraction=0.5", "oort:select_fraction=0.50"],
     "names one policy twice: oort:select_fraction=0.5 and oort:select_fraction=0.50"),
    (["--policies", "fedavg,all"], "--policies fedavg,all: 'all' stands alone"),
    (["--policies", "fedavg,oort:select_fraction=0.5"], "an item with options holds one policy; give the names "
                                                        "before it as an item of their own (fedavg oort:"),
    (["--policies", "late-rounds:k=1.5"], "--policies late-rounds:k=1.5: late-rounds k=1.5 must be an integer"),
    (["--policies", "stale-fastest:drop=True"], "stale-fastest drop=True must be an integer"),
    (["--policies", "oort:select_fraction='half'"], "select_fraction='half' must be a number"),
    (["--policies", "late-rounds:num_rounds=10"],
     "--policies late-rounds:num_rounds=10: late-rounds num_rounds=10 is not the federation's 20"),
    (["--policies", "late-rounds:name='x'"], "policy 'late-rounds' takes no option 'name'; it takes: k, "
                                             "last_rounds, num_rounds"),
])
def test_bad_evaluate_flags_exit_with_a_one_line_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--dataset", "mnist", "--data-root", "/nonexistent/data"], "data_root='/nonexistent/data': no train-images"),
    (["--num-clients", "0"], "num_clients=0 must be an integer >= 1"),
    (["--vdn-gamma", "1.5"], "vdn gamma=1.5 must be in [0, 1]"),
    (["--partition", "shards"], "partition='shards' is not known; allowed: fedmarl, dirichlet, iid, xclass"),
    (["--model", "vgg6"], "vgg6 expects (channels, 32, 32) input (cifar10), got (1, 28, 28)"),
    (["--partition", "natural"], "partition='natural' needs a dataset that records users"),
])
def test_bad_train_flags_fail_before_training_with_one_line(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_agents.main([*argv, "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert exit_info.value.code == 2
    error = error_line(capsys.readouterr().err)
    assert message in error
    assert not (tmp_path / "run").exists()  # nothing written for a configuration that cannot run


def test_resume_refuses_configuration_flags(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_agents.main(["--resume", str(tmp_path), "--episodes", "20", "--num-rounds", "3", "--seed", "0"])
    assert exit_info.value.code == 2
    error = error_line(capsys.readouterr().err)
    assert "--resume takes the configuration from" in error
    assert "drop --seed, --num-rounds" in error


def test_calibrate_prints_weights_that_config_files_read(tmp_path, capsys):
    from fedenv import calibrate, calibration

    calibrate.main(["--seeds", "10000", "--num-rounds", "2", "--num-clients", "4", "--clients-per-round", "4"])
    path = tmp_path / "weights.yaml"
    path.write_text(capsys.readouterr().out)
    args = parse_with_config_file(train_agents.build_parser(), ["--config", str(path)])
    measured = calibration.calibrate_weights(EnvConfig(num_rounds=2, num_clients=4, clients_per_round=4), [10000])
    assert args.latency_weight == pytest.approx(measured["latency_weight"], rel=1e-5)
    assert args.comm_weight == pytest.approx(measured["comm_weight"], rel=1e-5)
    with pytest.raises(SystemExit):
        calibrate.main(["--share", "-1"])


@pytest.mark.parametrize("build", [train_agents.build_parser, evaluate.build_parser, build_calibrate_parser])
def test_help_describes_every_envconfig_flag_in_its_group(build, monkeypatch):
    monkeypatch.setenv("COLUMNS", "10000")  # one line per flag: argparse would wrap "--data-root" at its hyphen
    parser = build()
    actions = {a.option_strings[0]: a for a in parser._actions if a.option_strings}
    assert set(ENV_FLAGS) <= set(actions)
    groups = {a.dest: g.title for g in parser._action_groups for a in g._group_actions}
    # evaluate.py replaces --probing by its own three-way flag (each policy's own mode by default)
    own = {flag for flag, a in actions.items() if flag in ENV_FLAGS and a.dest != ENV_FLAGS[flag].name}
    assert own <= {"--probing"}
    hints = typing.get_type_hints(EnvConfig)
    for flag, f in ENV_FLAGS.items():
        if flag in own:
            continue
        action = actions[flag]
        assert description(action).startswith(f.metadata["help"].replace("%", "%%")), flag
        optional = type(None) in typing.get_args(hints[f.name])  # X | None: the word none unsets it
        assert action.help.endswith(f"(default: {f.default}{'; none unsets it' if optional else ''})"), flag
        assert groups[action.dest] == f.metadata["group"], flag
    text = parser.format_help()
    for flag, f in ENV_FLAGS.items():
        assert flag in own or f.metadata["help"] in text, f.name


@pytest.mark.parametrize("build", [train_agents.build_parser, evaluate.build_parser, build_calibrate_parser])
def test_every_option_of_every_registered_component_is_a_flag_in_its_components_group(build):
    from fedenv.cli import component_flags
    from fedenv.config import COMPONENTS

    parser = build()
    groups = {a.dest: g.title for g in parser._action_groups for a in g._group_actions}
    actions = {a.dest: a for a in parser._actions}
    for dest, (kind, name, f) in component_flags().items():
        assert actions[dest].option_strings[0] == "--" + dest.replace("_", "-"), dest
        assert actions[dest].help.startswith(f.metadata["help"].replace("%", "%%")), dest
        assert groups[dest] == f"{COMPONENTS[kind].kind} {name} options", dest


def test_every_train_agents_flag_has_a_description_in_words():
    parser = train_agents.build_parser()
    own = [a for a in parser._actions if a.option_strings and not a.dest.startswith("vdn_") and a.dest != "help"]
    assert {"--episodes", "--seed", "--run-dir", "--resume", "--config", "--checkpoint-interval", "--num-envs",
            "--eval-seeds", "--no-progress", "--preset"} <= {a.option_strings[0] for a in own}
    for action in own:
        assert len(description(action).split()) >= 4, action.option_strings[0]


def test_every_evaluate_flag_has_a_description_in_words():
    parser = evaluate.build_parser()
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            assert len(description(action).split()) >= 4, action.option_strings[0]


def test_help_lists_the_registered_names_of_registry_valued_fields():
    AGGREGATION_RULES.register("trimmed-mean-test", object)
    try:
        action = next(a for a in train_agents.build_parser()._actions if a.dest == "aggregation")
    finally:
        AGGREGATION_RULES.unregister("trimmed-mean-test")
    assert f"allowed: {', '.join(AGGREGATION_RULES)}, trimmed-mean-test (default: fedavg)" in action.help


def test_dataclass_flags_without_metadata_fall_back_to_the_default():
    @dataclasses.dataclass
    class Knobs:
        """Test knobs."""

        width: int = 3
        depth: float = dataclasses.field(default=0.5, metadata={"help": "share in 100 % of the depth"})
        layers: tuple[int, ...] = (8, 8)

    parser = FlagParser(prog="knobs")
    add_dataclass_arguments(parser, Knobs, prefix="k-")
    helps = {a.option_strings[0]: a.help for a in parser._actions if a.option_strings}
    assert helps["--k-width"] == "(default: 3)"
    assert helps["--k-depth"] == "share in 100 %% of the depth (default: 0.5)"  # argparse prints "%%" as "%"
    assert helps["--k-layers"] == "(default: 8 8)"
    assert "share in 100 % of the depth" in parser.format_help()
    group = next(g for g in parser._action_groups if g.title == "Knobs fields")
    assert group.description == "Test knobs."
    assert parser.parse_args(["--k-layers", "4", "2"]).k_layers == [4, 2]
    assert field_help(dataclasses.fields(Knobs)[0], allowed=("a", "b")) == "allowed: a, b (default: 3)"


@pytest.mark.parametrize("main,prog", [(train_agents.main, "train_agents.py"), (evaluate.main, "evaluate.py")])
def test_usage_error_prints_usage_error_and_pointer_to_help(main, prog, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--num-clients", "many"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"usage: {prog} [options]",
        f"{prog}: error: argument --num-clients: invalid int value: 'many'",
        f"Try '{prog} --help' for more information.",
    ]


def test_help_runs_as_a_script_and_exits_cleanly():
    completed = subprocess.run([sys.executable, "train_agents.py", "--help"], cwd=ROOT, capture_output=True,
                               text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("usage: train_agents.py [options]\n")
    for title in ("federation and data:", "local training:", "aggregation:", "traces:", "observation and reward:",
                  "engine:"):
        assert f"\n{title}\n" in completed.stdout


@pytest.mark.parametrize("flags,candidates", [
    (["--num-clients", "5"], 5),                              # not given: follows num_clients down
    (["--num-clients", "5", "--clients-per-round", "3"], 3),  # given: kept
    (["--num-clients", "20"], 10),                            # the default 10 fits 20 clients: kept
    ([], 10),
])
def test_clients_per_round_follows_num_clients_down_when_not_given(flags, candidates):
    args = train_agents.build_parser().parse_args(flags)
    assert env_config_from_args(args).clients_per_round == candidates


def test_clients_per_round_given_above_num_clients_is_still_refused():
    args = train_agents.build_parser().parse_args(["--num-clients", "5", "--clients-per-round", "7"])
    with pytest.raises(ValueError, match="clients_per_round=7 must be <= num_clients=5"):
        env_config_from_args(args)


def test_help_lists_config_flags_by_name_and_help_all_describes_them(capsys):
    parser = train_agents.build_parser()
    brief = parser.format_brief_help()
    for action in parser._actions:
        if action.option_strings:
            assert action.option_strings[0] in brief, action.option_strings[0]
    # the run's own flags keep their descriptions; the EnvConfig and VDNConfig fields' are left to --help-all
    assert "held-out env seeds of the final comparison" in brief
    assert ENV_FLAGS["--num-clients"].metadata["help"].split(",")[0] not in brief
    assert len(brief.splitlines()) < len(parser.format_help().splitlines()) / 2
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["--help-all"])
    assert stop.value.code == 0 and capsys.readouterr().out == parser.format_help()
