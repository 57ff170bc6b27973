"""The summary table's cells: mean +- std, 'never', and how many episodes reached the target."""

from fedenv.evaluation import format_table


def row(policy, rounds_mean, reached):
    values = {"final_accuracy": (0.91234, 0.01), "rounds_to_fedavg": (rounds_mean, 0.5),
              "total_latency_s": (120.04, 3.0), "total_upload_mb": (12.0, 0.0), "total_download_mb": (30.5, 1.25),
              "total_traffic_mb": (42.5, 1.25), "team_return": (-0.5, 0.125)}
    out = {"policy": policy, "probing": False, "episodes": 2, "reached": reached}
    for metric, (mean, std) in values.items():
        out[f"{metric}_mean"], out[f"{metric}_std"] = mean, std
    return out


def test_cells_show_mean_and_std_and_the_reached_count():
    lines = format_table([row("fedavg", 4.0, 2), row("oort", 3.0, 1), row("random", float("nan"), 0)]).split("\n")
    assert lines[0].split("  ")[0] == "policy" and set(lines[1].replace(" ", "")) == {"-"}
    assert "0.9123 +- 0.0100" in lines[2] and "4.0 +- 0.5" in lines[2] and "(2/2)" not in lines[2]
    assert "120.0 +- 3.0" in lines[2] and "12.0 +- 0.0" in lines[2] and "-0.5000 +- 0.1250" in lines[2]
    assert "30.5 +- 1.2" in lines[2] and "42.5 +- 1.2" in lines[2]
    assert lines[2].index("30.5") == lines[0].index("download (MB)")
    assert "3.0 +- 0.5 (1/2)" in lines[3]
    assert "never" in lines[4]
    assert lines[2].index("0.9123") == lines[0].index("final test acc")  # columns line up with the headers


def test_a_policy_from_several_runs_shows_the_spread_over_runs_and_a_note():
    vdn = {**row("vdn", 2.0, 2), "checkpoints": 3, "final_accuracy_runs_std": 0.02}
    lines = format_table([row("fedavg", 4.0, 2), vdn]).split("\n")
    assert "0.9123 +- 0.0100 (runs +- 0.0200)" in lines[3] and "runs +-" not in lines[2]
    assert lines[4].startswith("vdn: 3 checkpoints")


def test_without_fedavg_the_rounds_to_its_accuracy_are_not_applicable_rather_than_never_reached():
    lines = format_table([row("oort", float("nan"), 0), row("random", float("nan"), 0)]).split("\n")
    column = lines[0].index("rounds to fedavg acc")
    assert [line[column:].split()[0] for line in lines[2:]] == ["n/a", "n/a"]
    assert "never" not in "\n".join(lines)
