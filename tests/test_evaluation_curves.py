"""The training curve: episodes and values read back from event files as written, the reference lines
from results.json's means (recomputed by hand), the moving average by hand, and clear errors."""

import json

import numpy as np
import pytest
from torch.utils.tensorboard import SummaryWriter

from agents.config import VDNConfig
from agents.trainer import train_vdn
from fedenv.evaluation import EpisodeRecord, write_results
from fedenv.evaluation.curves import (
    Curve,
    describe_reaching,
    first_episode_reaching,
    first_episode_staying,
    main,
    moving_average,
    plot_training_curve,
    read_training_curves,
    reference_means,
)
from tests.helpers import tiny_config

PNG = b"\x89PNG\r\n\x1a\n"


def write_events(run_dir, training: list[tuple[int, float, float]], validation=(), purge_step=None) -> None:
    """``training``: (FL rounds, team return, final accuracy) per episode; ``validation``: the same per
    validation. Values are exact in float32, so they read back equal."""
    writer = SummaryWriter(str(run_dir), purge_step=purge_step)
    for step, team_return, accuracy in training:
        writer.add_scalar("charts/episodic_return", team_return, step)
        writer.add_scalar("fl/final_accuracy", accuracy, step)
    for step, team_return, accuracy in validation:
        writer.add_scalar("eval/team_return", team_return, step)
        writer.add_scalar("eval/final_accuracy", accuracy, step)
    writer.close()


def test_curves_are_the_values_written_against_episodes_counted_from_the_events(tmp_path):
    write_events(tmp_path, [(2, -1.5, 0.25), (4, 0.5, 0.5), (6, 1.25, 0.625), (8, 2.0, 0.75)],
                 validation=[(4, 1.0, 0.5), (8, 3.0, 0.875)])
    curves = read_training_curves(tmp_path)
    assert curves.training["team_return"].episodes.tolist() == [1, 2, 3, 4]
    assert curves.training["team_return"].values.tolist() == [-1.5, 0.5, 1.25, 2.0]
    assert curves.training["final_accuracy"].values.tolist() == [0.25, 0.5, 0.625, 0.75]
    # validated after 4 FL rounds = after episode 2, after 8 rounds = after episode 4
    assert curves.validation["team_return"].episodes.tolist() == [2, 4]
    assert curves.validation["team_return"].values.tolist() == [1.0, 3.0]
    assert curves.validation["final_accuracy"].values.tolist() == [0.5, 0.875]


def test_episodes_follow_the_log_order_when_federations_end_out_of_round_order(tmp_path):
    # two federations side by side: the first-numbered episode ended after the second (early termination)
    write_events(tmp_path, [(5, 1.0, 0.5), (3, 2.0, 0.25), (8, 3.0, 0.75)], validation=[(5, 0.5, 0.5)])
    curves = read_training_curves(tmp_path)
    assert curves.training["team_return"].values.tolist() == [1.0, 2.0, 3.0]
    assert curves.validation["team_return"].episodes.tolist() == [2]


def test_a_resumed_run_drops_the_purged_events_and_counts_on(tmp_path):
    write_events(tmp_path, [(2, 1.0, 0.25), (4, 2.0, 0.5), (6, 3.0, 0.625), (8, 4.0, 0.75)])
    write_events(tmp_path, [(6, 30.0, 0.125), (8, 40.0, 0.875)], purge_step=5)  # resumed after round 4
    curves = read_training_curves(tmp_path)
    assert curves.training["team_return"].values.tolist() == [1.0, 2.0, 30.0, 40.0]
    assert curves.training["final_accuracy"].episodes.tolist() == [1, 2, 3, 4]
    assert curves.validation == {}


def test_the_curves_of_a_vdn_run_are_its_episode_summaries(tmp_path):
    config = VDNConfig(hidden=(8,), batch_size=4, learning_starts=1)
    _, summaries = train_vdn(tiny_config(), config, episodes=3, run_dir=tmp_path, progress=False, eval_interval=2,
                             val_seeds=(500,))
    curves = read_training_curves(tmp_path)
    assert curves.training["team_return"].episodes.tolist() == [1, 2, 3]
    np.testing.assert_allclose(curves.training["team_return"].values, [s.team_return for s in summaries], rtol=1e-6)
    np.testing.assert_allclose(curves.training["final_accuracy"].values, [s.final_accuracy for s in summaries],
                               rtol=1e-6)
    assert curves.validation["final_accuracy"].episodes.tolist() == [2]


def test_moving_average_by_hand():
    np.testing.assert_allclose(moving_average([1.0, 2.0, 6.0, 4.0], 2), [1.0, 1.5, 4.0, 5.0])
    np.testing.assert_allclose(moving_average([1.0, 2.0, 6.0, 4.0], 3), [1.0, 1.5, 3.0, 4.0])
    np.testing.assert_allclose(moving_average([1.0, 2.0, 6.0], 1), [1.0, 2.0, 6.0])
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"window=.* must be an integer >= 1"):
            moving_average([1.0], bad)


def test_first_episode_reaching():
    curve = Curve(np.array([1, 2, 3, 4]), np.array([0.1, 0.5, 0.4, 0.9]))
    assert first_episode_reaching(curve, 0.5) == 2
    assert first_episode_reaching(curve, 0.6) == 4
    assert first_episode_reaching(curve, 1.0) is None


def test_first_episode_staying_is_the_one_after_the_last_below():
    curve = Curve(np.array([1, 2, 3, 4]), np.array([0.6, 0.5, 0.4, 0.9]))
    assert first_episode_staying(curve, 0.5) == 4    # first reached at episode 1, below at episode 3
    assert first_episode_staying(curve, 0.3) == 1    # never below
    assert first_episode_staying(curve, 0.95) is None  # below at the end
    assert describe_reaching(curve, 0.5) == "first at episode 1, at or above from episode 4 on"
    assert describe_reaching(curve, 0.7) == "first at episode 4, at or above from episode 4 on"
    assert describe_reaching(Curve(np.array([1, 2]), np.array([0.9, 0.1])), 0.5) == \
        "first at episode 1, below it at the last episode"
    assert describe_reaching(curve, 0.95) == "never"


def results_json(tmp_path):
    """An evaluate.py results.json of fedavg, random and vdn on two seeds, with known per-episode values."""
    def record(policy, seed, rewards, final_accuracy, checkpoint=None):
        return EpisodeRecord(policy, seed, [0.1, final_accuracy], [0.1, 0.5], [0.0, 1.0], [1.0], [2.0], [4.0],
                             rewards, [3], checkpoint=checkpoint)

    records = {"fedavg": [record("fedavg", 1, [1.0, 0.5], 0.8), record("fedavg", 2, [2.0, 0.25], 0.9)],
               "random": [record("random", 1, [0.25], 0.5), record("random", 2, [0.75], 0.7)],
               "vdn": [record("vdn", 1, [3.0], 0.95, "run/checkpoint.pt"),
                       record("vdn", 2, [4.0], 0.85, "run/checkpoint.pt")]}
    return write_results(tmp_path / "eval", records, tiny_config())["json"]


def test_reference_lines_are_the_fixed_policies_held_out_means(tmp_path):
    path = results_json(tmp_path)
    means = reference_means(path)
    assert list(means) == ["fedavg", "random"]  # vdn is learned: no reference line
    assert means["fedavg"]["team_return"] == pytest.approx((1.0 + 0.5 + 2.0 + 0.25) / 2)
    assert means["fedavg"]["final_accuracy"] == pytest.approx((0.8 + 0.9) / 2)
    assert means["random"]["team_return"] == pytest.approx((0.25 + 0.75) / 2)
    assert means["random"]["final_accuracy"] == pytest.approx((0.5 + 0.7) / 2)
    assert list(reference_means(path, ["random"])) == ["random"]
    with pytest.raises(ValueError, match="has no policy oort; it has: fedavg, random, vdn"):
        reference_means(path, ["oort"])


def test_bad_reference_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing\.json does not exist"):
        reference_means(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match=r"other\.json is not an evaluate\.py results\.json"):
        reference_means(tmp_path / "other.json")
    (tmp_path / "learned.json").write_text(json.dumps({"summary": [{"policy": "vdn"}]}))
    with pytest.raises(ValueError, match=r"learned\.json holds no fixed policy"):
        reference_means(tmp_path / "learned.json")


def test_a_folder_without_events_or_tags_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"run folder .*nowhere does not exist"):
        read_training_curves(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match=r"no TensorBoard event files \(events.out.tfevents.\*\) in "):
        read_training_curves(tmp_path)
    writer = SummaryWriter(str(tmp_path))
    writer.add_scalar("charts/episodic_return", 1.0, 2)
    writer.close()
    with pytest.raises(ValueError, match=r"lack the tags fl/final_accuracy \(found: charts/episodic_return\)"):
        read_training_curves(tmp_path)


def test_the_command_writes_the_figure_and_says_when_each_baseline_is_reached(tmp_path, capsys):
    run = tmp_path / "run"
    write_events(run, [(2, 1.0, 0.5), (4, 2.0, 0.75), (6, 3.0, 0.875)], validation=[(4, 2.5, 0.75)])
    reference = results_json(tmp_path)
    out = tmp_path / "figures" / "curve.png"
    assert main([str(run), "--reference", str(reference), "--smooth", "2", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG
    printed = capsys.readouterr().out
    # fedavg's mean return is 1.875: the moving average over 2 episodes (1.0, 1.5, 2.5) reaches it at episode 3
    assert "fedavg team return 1.875: training (moving average over 2) first at episode 3, at or above from " \
           "episode 3 on; validation first at episode 2, at or above from episode 2 on" in printed
    assert "fedavg final test accuracy 0.85: training (moving average over 2) never; " \
           "validation never" in printed  # (0.5, 0.625, 0.8125) and 0.75
    assert "random final test accuracy 0.6: training (moving average over 2) first at episode 2, at or above " \
           "from episode 2 on" in printed
    assert not list(out.parent.glob(".*.tmp"))  # written atomically: no temporary file left


def test_the_command_defaults_to_the_run_folder_and_rejects_bad_flags(tmp_path, capsys):
    write_events(tmp_path, [(2, 1.0, 0.5)])
    assert main([str(tmp_path)]) == 0
    assert (tmp_path / "training_curve.png").read_bytes()[:8] == PNG
    for argv, message in ((["--smooth", "0"], "--smooth=0 must be >= 1"),
                          (["--reference-policies", "fedavg"], "--reference-policies needs --reference")):
        with pytest.raises(SystemExit) as stop:
            main([str(tmp_path), *argv])
        assert stop.value.code == 2 and message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path / "empty")])
    assert "run folder" in capsys.readouterr().err


def test_plot_without_references_or_validation(tmp_path):
    write_events(tmp_path, [(2, 1.0, 0.5), (4, 2.0, 0.75)])
    path = plot_training_curve(read_training_curves(tmp_path), tmp_path / "plain.png")
    assert path.read_bytes()[:8] == PNG
