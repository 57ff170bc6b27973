"""benchmarks/time_to_score.py: the first validation reaching the score, the --quick rows, refusals."""

import json

import pytest

from benchmarks import time_to_score


def test_the_first_validation_at_or_above_the_score_counts():
    points = [(25, 10.0, 0.05), (50, 21.0, 0.20), (75, 30.0, 0.35), (100, 41.0, 0.20)]
    assert time_to_score.first_reaching(points, 0.2) == (50, 21.0)
    assert time_to_score.first_reaching(points, 0.3) == (75, 30.0)
    assert time_to_score.first_reaching(points, 0.4) is None


def test_quick_rows_reference_first_then_every_variant(tmp_path, capsys):
    out = tmp_path / "rows.json"
    rows = time_to_score.main(["--quick", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(rows))
    assert [r["variant"] for r in rows] == [time_to_score.REFERENCE] + [
        n for n in time_to_score.VARIANTS if n != time_to_score.REFERENCE]
    episodes = {r["variant"]: r["episodes"] for r in rows}
    assert episodes["fewer-episodes"] == 1 and episodes[time_to_score.REFERENCE] == time_to_score.QUICK_EPISODES
    for row in rows:
        # validation every episode; the quick score -1 is below any return of 2 rounds: reached at the first
        assert [v[0] for v in row["validations"]] == list(range(1, row["episodes"] + 1))
        assert (row["episodes_to_score"], row["time_to_score_s"]) == tuple(row["validations"][0][:2])
        assert 0 < row["time_to_score_s"] <= row["training_s"] == row["validations"][-1][1]
        assert row["best_return"] == max(v[2] for v in row["validations"])
        assert row["threads"] == 1 and row["load_before"] >= 0
    printed = capsys.readouterr().out
    assert all(f"load {r['load_before']:.2f}->{r['load_after']:.2f}" in printed for r in rows)


def test_unknown_variants_missing_scores_and_existing_outputs_are_refused(tmp_path, capsys):
    for argv, message in ((["--quick", "--variants", "turbo"], "variant 'turbo' is not known; allowed: default"),
                          ([], "--score is required"),
                          (["--quick", "--out", str(tmp_path)], "exists")):
        with pytest.raises(SystemExit):
            time_to_score.main(argv)
        assert message in capsys.readouterr().err
