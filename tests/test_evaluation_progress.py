"""The evaluation's progress: rare plain lines without a terminal."""

import io

from fedenv.evaluation import progress_bar
from fedenv.evaluation.progress import PlainProgress


def test_without_a_terminal_it_prints_plain_lines_only_every_interval_and_at_the_end():
    stream = io.StringIO()
    bar = progress_bar(5, "evaluate", "episode", stream=stream)
    assert isinstance(bar, PlainProgress)
    for _ in range(5):
        bar.update()
    bar.set_postfix(policy="fedavg")
    bar.close()
    assert stream.getvalue().splitlines() == [stream.getvalue().splitlines()[0]]  # one line, at close
    assert stream.getvalue().startswith("evaluate: 5/5 episodes, ") and stream.getvalue().rstrip().endswith(
        "policy=fedavg")
    assert "\r" not in stream.getvalue()


def test_with_no_interval_every_update_prints_a_line_and_disabled_prints_nothing():
    stream = io.StringIO()
    bar = PlainProgress(3, "evaluate", "episode", stream, interval_s=0.0)
    for _ in range(3):
        bar.update()
    assert [line.split(",")[0] for line in stream.getvalue().splitlines()] == [
        "evaluate: 1/3 episodes", "evaluate: 2/3 episodes", "evaluate: 3/3 episodes"]
    quiet = io.StringIO()
    disabled = progress_bar(3, "evaluate", "episode", enabled=False, stream=quiet)
    disabled.update()
    disabled.close()
    assert quiet.getvalue() == ""


def test_nothing_to_do_prints_nothing():  # e.g. a study that evaluates no fixed policy
    stream = io.StringIO()
    bar = progress_bar(0, "evaluate", "episode", stream=stream)
    bar.close()
    assert stream.getvalue() == ""
