"""benchmarks/readme_results.py: the quick run's markdown has a row per policy with the numbers of the
results.json it came from, and --write replaces only the text between the markers."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from fedenv.baselines import compared_policies

ROOT = Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("readme_results", ROOT / "benchmarks" / "readme_results.py")
readme_results = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(readme_results)

POLICIES = [*compared_policies(), "vdn"]
"""The rows of the tables: what ``evaluate.py --policies all`` compares with a checkpoint."""


def table_rows(block: str, header: str) -> dict[str, list[str]]:
    """``policy -> cells`` of the markdown table whose header line starts with ``header``."""
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_quick_run_prints_a_row_per_policy_with_the_numbers_of_its_results_json(tmp_path, capsys):
    page, readme = tmp_path / "default.md", tmp_path / "README.md"
    page.write_text(f"before\n{readme_results.START}\nold tables\n{readme_results.END}\nafter\n")
    readme.write_text(f"intro\n{readme_results.HEADLINE_START}\nold headline\n{readme_results.HEADLINE_END}\nlinks\n")
    assert readme_results.main(["--quick", "--out", str(tmp_path / "out"), "--write", "--page", str(page),
                                "--readme", str(readme)]) == 0
    block = capsys.readouterr().out
    document = json.loads((tmp_path / "out" / "eval" / "results.json").read_text())
    summary = table_rows(block, "| policy | probing | final test accuracy")
    assert list(summary) == POLICIES
    for row in document["summary"]:
        cells = summary[row["policy"]]
        assert cells[0] == ("on" if row["probing"] else "off")
        accuracy_mean, accuracy_std = (float(x) for x in cells[1].split(" (runs")[0].split(" +- "))
        assert accuracy_mean == pytest.approx(row["final_accuracy_mean"], abs=5e-5)
        assert accuracy_std == pytest.approx(row["final_accuracy_std"], abs=5e-5)
        if "final_accuracy_runs_std" in row:  # the learned policy pooled from two training runs
            runs_std = float(cells[1].split("(runs +- ")[1].rstrip(")"))
            assert runs_std == pytest.approx(row["final_accuracy_runs_std"], abs=5e-5)
        assert float(cells[3].split(" +- ")[0]) == pytest.approx(row["total_upload_mb_mean"], abs=0.05)
        assert float(cells[4].split(" +- ")[0]) == pytest.approx(row["total_download_mb_mean"], abs=0.05)
        assert float(cells[5].split(" +- ")[0]) == pytest.approx(row["total_upload_mb_mean"]
                                                                 + row["total_download_mb_mean"], abs=0.1)
        assert row["total_download_mb_mean"] > 0
        assert float(cells[6].split(" +- ")[0]) == pytest.approx(row["team_return_mean"], abs=5e-5)
    per_seed = table_rows(block, "| policy | probing | 1000 | 1001 |")
    assert list(per_seed) == POLICIES
    for name, episodes in document["episodes"].items():
        seeds = list(dict.fromkeys(e["seed"] for e in episodes))
        assert len(per_seed[name][1:]) == len(seeds) == 2
        for seed, cell in zip(seeds, per_seed[name][1:]):
            mine = [e for e in episodes if e["seed"] == seed]  # two training runs for vdn, one episode otherwise
            assert len(mine) == (2 if name == "vdn" else 1)
            accuracy, team_return = (float(x) for x in cell.split(" / "))
            assert accuracy == pytest.approx(sum(e["final_accuracy"] for e in mine) / len(mine), abs=5e-4)
            assert team_return == pytest.approx(sum(e["team_return"] for e in mine) / len(mine), abs=5e-4)
    written = page.read_text()
    assert written.startswith("before\n") and written.endswith(f"{readme_results.END}\nafter\n")
    assert "old tables" not in written and "| fastest | off |" in written and "| policy | probing | 1000 |" in written
    # the paired differences: a row per policy but the references, each cell the results.json numbers
    references = document["references"]
    paired = table_rows(block, "| policy | return - ")
    # every policy is compared with FedAvg, and FedAvg with the best fixed policy unless it is the best
    assert set(paired) == set(POLICIES) - ({"fedavg"} if references["best_fixed"] == "fedavg" else set())
    columns = [(role, metric) for role in references for metric in ("team_return", "final_accuracy")]
    for row in document["paired_differences"]:
        cell = paired[row["policy"]][columns.index((row["role"], row["metric"]))]
        assert float(cell.split()[0]) == pytest.approx(row["difference"], abs=5e-5)
        low, high = (float(x) for x in cell.split("[")[1].split("]")[0].split(", "))
        assert (low, high) == (pytest.approx(row["ci_low"], abs=5e-5), pytest.approx(row["ci_high"], abs=5e-5))
        assert cell.endswith(row["label"])
    # two training runs pooled: the learned row's interval resamples them too
    assert {r["runs"] for r in document["paired_differences"] if r["policy"] == "vdn"} == {2}
    # README's headline: the summary and paired tables, the same rows as the page's, without the per-seed table
    headline = readme.read_text()
    assert headline.startswith("intro\n") and headline.endswith(f"{readme_results.HEADLINE_END}\nlinks\n")
    assert "old headline" not in headline and "| policy | probing | 1000 |" not in headline
    assert table_rows(headline, "| policy | probing | final test accuracy") == summary
    assert table_rows(headline, "| policy | return - ") == paired


def test_write_refuses_before_writing_anything_when_a_file_lacks_its_markers(tmp_path):
    page, readme = tmp_path / "default.md", tmp_path / "README.md"
    page.write_text(f"{readme_results.START}\nold\n{readme_results.END}\n")
    readme.write_text("no headline markers\n")
    args = readme_results.build_parser().parse_args(["--checkpoint", "unused.pt", "--write", "--page", str(page),
                                                     "--readme", str(readme)])
    document = {"summary": [], "episodes": {}}
    with pytest.raises(ValueError, match=r"README\.md has no <!-- headline:start --> marker"):
        readme_results.write_blocks(args, "new block", document)
    assert page.read_text() == f"{readme_results.START}\nold\n{readme_results.END}\n"


def test_the_reading_says_only_what_each_interval_says():
    def row(role, reference, metric, label, policy="vdn", runs=5):
        return {"policy": policy, "role": role, "reference": reference, "metric": metric, "label": label,
                "runs": runs}

    document = {"paired_differences": [
        row("fedavg", "fedavg", "team_return", "better"), row("fedavg", "fedavg", "final_accuracy", "worse"),
        row("best_fixed", "oort", "team_return", "level"), row("best_fixed", "oort", "final_accuracy", "better"),
        row("fedavg", "fedavg", "team_return", "better", policy="oort", runs=1),  # a fixed policy: no sentence
    ]}
    assert readme_results.reading(document) == (
        "Read from the intervals, vdn is better in team return and worse in final test accuracy against FedAvg; "
        "level in team return and better in final test accuracy against the best fixed policy, oort.")
