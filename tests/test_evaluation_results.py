"""The result files: CSV rows, JSON without NaN, and the plots."""

import csv
import json
import math

from fedenv.config import EnvConfig
from fedenv.evaluation import EpisodeRecord, json_safe, write_results
from tests.helpers import strict_json_loads


def test_json_safe_replaces_nan_and_infinity_in_nested_values():
    assert json_safe({"a": [1.0, float("nan")], "b": {"c": float("inf")}, "d": "x"}) == {
        "a": [1.0, None], "b": {"c": None}, "d": "x"}


def test_write_results_writes_one_csv_row_per_episode_json_and_two_plots(tmp_path):
    records = {name: [EpisodeRecord(name, seed, [0.1, 0.5, final], [0.1, 0.4, 0.5], [0.0, 1.0, 2.0], [1.0, 1.0],
                                    [2.0, 2.0], [3.0, 1.5], [0.1, 0.2], [3, 3]) for seed, final in ((1, 0.6), (2, 0.8))]
               for name in ("fedavg", "random")}
    records["random"][1].test_accuracy[-1] = 0.55  # never reaches fedavg's 0.8 on seed 2
    paths = write_results(tmp_path, records, EnvConfig(num_clients=3, clients_per_round=3))
    assert set(paths) == {"csv", "json", "summary", "learning_curves"}
    rows = list(csv.DictReader(paths["csv"].open()))
    assert [(r["policy"], r["seed"]) for r in rows] == [("fedavg", "1"), ("fedavg", "2"), ("random", "1"),
                                                        ("random", "2")]
    assert float(rows[3]["total_upload_mb"]) == 4.0 and math.isnan(float(rows[3]["rounds_to_fedavg"]))
    assert float(rows[3]["total_download_mb"]) == 4.5 and float(rows[3]["total_traffic_mb"]) == 8.5
    document = json.loads(paths["json"].read_text())
    assert document["episodes"]["random"][1]["rounds_to_fedavg"] is None
    assert document["env_config"]["num_clients"] == 3 and document["records"]["random"][1]["test_accuracy"][-1] == 0.55
    assert all(paths[kind].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for kind in ("summary", "learning_curves"))
    assert rows[0]["checkpoint"] == "" and document["summary_per_checkpoint"] == [] and "transfer" not in document


def test_results_json_is_standard_json_and_reads_back_the_env_config(tmp_path):
    records = {"fedavg": [EpisodeRecord("fedavg", 1, [0.1, math.nan], [0.1, math.nan], [0.0, 1.0], [1.0], [2.0], [4.0],
                                        [0.1], [3])]}
    config = EnvConfig(num_clients=3, clients_per_round=3, latency_weight=math.inf)
    paths = write_results(tmp_path, records, config)
    document = strict_json_loads(paths["json"].read_text())
    assert document["records"]["fedavg"][0]["test_accuracy"] == [0.1, None]
    assert document["records"]["fedavg"][0]["validation_accuracy"] == [0.1, None]
    assert EnvConfig.from_dict(document["env_config"]) == config
