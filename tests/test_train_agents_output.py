"""What train_agents.py prints: a progress bar on a terminal, plain lines in a log file (agents.progress)."""

import csv
import io
import json

import pytest

import train_agents
from agents.episodes import EpisodeSummary
from agents.progress import Progress, format_duration, progress_mode

TINY_FLAGS = ["--num-clients", "3", "--clients-per-round", "3", "--num-rounds", "2", "--local-epochs", "1",
              "--batch-size", "64", "--val-fraction", "0.9", "--partition", "iid", "--eval-seeds"]


class Terminal(io.StringIO):
    def isatty(self):
        return True


def summary(team_return: float) -> EpisodeSummary:
    return EpisodeSummary(team_return=team_return, final_accuracy=0.5, total_latency_s=10.0, total_upload_mb=1.0,
                          participation_rate=1.0, epsilon=0.25)


def test_the_mode_follows_the_terminal():
    assert progress_mode(True, Terminal()) == progress_mode("auto", Terminal()) == "bar"
    assert progress_mode(True, io.StringIO()) == "lines"
    assert progress_mode(False, Terminal()) == "off" and progress_mode("lines", Terminal()) == "lines"
    with pytest.raises(ValueError, match="progress='loud' must be"):
        progress_mode("loud")


def test_without_a_terminal_one_plain_line_every_10_episodes_and_at_the_end(capsys):
    progress = Progress(total=25, initial=0)  # capsys' stdout is not a terminal
    for episode in range(1, 26):
        progress.update(episode, summary(float(episode)), rounds_per_s=4.0)
    progress.close()
    out = capsys.readouterr().out
    assert "\r" not in out
    lines = out.splitlines()
    assert [line.split()[1] for line in lines] == ["10/25", "20/25", "25/25"]
    assert "return 10.000  accuracy 0.500  epsilon 0.25  4.00 rounds/s  ETA" in lines[0]
    assert lines[-1].endswith("ETA 0s")


def test_a_resumed_run_counts_on_from_its_checkpoint(capsys):
    progress = Progress(total=25, initial=12, mode="lines")
    for episode in range(13, 26):
        progress.update(episode, summary(1.0), rounds_per_s=1.0)
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()] == ["20/25", "25/25"]


def test_off_prints_nothing_and_a_bar_redraws_on_stdout(capsys):
    silent = Progress(total=3, initial=0, mode="off")
    silent.update(3, summary(1.0), 1.0)
    assert capsys.readouterr().out == ""
    bar = Progress(total=3, initial=0, mode="bar")
    bar.update(1, summary(1.0), 1.0)
    bar.close()
    out = capsys.readouterr().out
    assert "\r" in out and "VDN" in out and "1/3" in out


@pytest.mark.parametrize("seconds,text", [(3725.0, "1h02m05s"), (65.0, "1m05s"), (7.2, "7s"), (0.0, "0s")])
def test_durations_read_as_hours_minutes_seconds(seconds, text):
    assert format_duration(seconds) == text


def test_train_agents_prints_plain_lines_into_a_log(tmp_path, capsys):
    assert train_agents.main(["--episodes", "2", "--run-dir", str(tmp_path), "--eval-interval", "0",
                              *TINY_FLAGS]) == 0
    out = capsys.readouterr().out
    assert "\r" not in out
    assert any(line.startswith("episode 2/2  return ") for line in out.splitlines())


def test_the_final_comparison_is_written_into_the_run_folder(tmp_path, capsys):
    assert train_agents.main(["--episodes", "1", "--run-dir", str(tmp_path), "--eval-interval", "0",
                              *TINY_FLAGS, "1000", "1001"]) == 0  # TINY_FLAGS ends with --eval-seeds
    out = capsys.readouterr().out
    assert "mean +- std over these 2 seeds; README's table is every policy on more seeds" in out
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert [(row["policy"], row["seed"]) for row in rows] == [
        (policy, seed) for policy in ("fedavg", "random", "vdn") for seed in ("1000", "1001")]
    document = json.loads((tmp_path / "results.json").read_text())
    assert [row["policy"] for row in document["summary"]] == ["fedavg", "random", "vdn"]
    for name in ("summary.png", "learning_curves.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {tmp_path / 'results.csv'}" in out


def test_a_folder_holding_an_earlier_comparison_is_refused_without_overwrite(tmp_path, capsys):
    (tmp_path / "results.csv").write_text("policy\n")  # what an earlier run's final comparison left
    with pytest.raises(SystemExit) as stop:
        train_agents.main(["--episodes", "1", "--run-dir", str(tmp_path), *TINY_FLAGS])
    assert stop.value.code == 2 and "holds another run" in capsys.readouterr().err
    assert (tmp_path / "results.csv").read_text() == "policy\n"


@pytest.mark.parametrize("learning_starts, warned", [(200, True), (1, False)])
def test_a_run_too_short_for_a_gradient_step_says_so(tmp_path, capsys, learning_starts, warned):
    # 2 episodes x 2 rounds: 4 environment steps, none of them past 200
    assert train_agents.main(["--episodes", "2", "--run-dir", str(tmp_path), "--eval-interval", "0",
                              "--no-progress", "--vdn-learning-starts", str(learning_starts), *TINY_FLAGS]) == 0
    err = capsys.readouterr().err
    assert ("warning: the learner took no gradient step (the first comes after --vdn-learning-starts 200 "
            "environment steps; this run played 4)" in err) is warned
    assert ("no gradient step" in err) is warned
