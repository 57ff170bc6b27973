"""Both directions of traffic: downloads counted by hand per round with and without probing, charged by
the reward only when asked, and present in every result file and table."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from fedenv.baselines import make_policy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import evaluate_policies, format_table, per_episode_metrics, summarise, write_results
from fedenv.reward import charged_traffic_mb
from tests.helpers import tiny_config


def choose(agents, round_index):
    """Every other agent, shifting each round."""
    return {a: int((round_index + i) % 2 == 0) for i, a in enumerate(agents)}


@pytest.mark.parametrize("probing", [True, False])
def test_downloads_per_round_counted_by_hand(probing):
    env = ClientSelectionEnv(tiny_config(num_clients=6, clients_per_round=4, num_rounds=4, probing=probing))
    size_mb = env.simulator.model_size_mb
    observations, infos = env.reset(seed=2)
    assert (infos["client_0"]["upload_mb"], infos["client_0"]["download_mb"], infos["client_0"]["traffic_mb"]) == (
        0.0, 0.0, 0.0)
    t = 0
    while env.agents:
        candidates = [a for a in env.possible_agents if observations[a]["action_mask"][1]]
        actions = choose(env.possible_agents, t)
        selected = [a for a in candidates if actions[a]]
        observations, _, _, _, infos = env.step(actions)
        downloaders = candidates if probing else selected  # probing: every candidate downloads to probe
        for info in infos.values():
            assert info["download_mb"] == pytest.approx(len(downloaders) * size_mb)
            assert info["upload_mb"] == pytest.approx(len(selected) * size_mb)
            assert info["traffic_mb"] == pytest.approx((len(downloaders) + len(selected)) * size_mb)
        t += 1
    assert t == 4


def test_without_probing_a_straggler_past_the_deadline_downloaded_but_uploaded_nothing():
    env = ClientSelectionEnv(tiny_config(probing=False, round_deadline_s=1e-3))
    env.reset(seed=0)
    _, _, _, _, infos = env.step({a: 1 for a in env.possible_agents})
    assert all(i["dropped"] for i in infos.values())
    assert infos["client_0"]["upload_mb"] == 0.0
    assert infos["client_0"]["download_mb"] == pytest.approx(3 * env.simulator.model_size_mb)


def test_charged_traffic_by_hand():
    assert charged_traffic_mb(2.0, 5.0) == 2.0 and charged_traffic_mb(2.0, 5.0, "upload") == 2.0
    assert charged_traffic_mb(2.0, 5.0, "upload+download") == 7.0
    with pytest.raises(ValueError, match="reward_traffic='both' is not known; allowed: upload, upload\\+download"):
        charged_traffic_mb(2.0, 5.0, "both")
    with pytest.raises(ValueError, match="reward_traffic='both' is not known; allowed: upload, upload\\+download"):
        EnvConfig(reward_traffic="both").validate()


def test_the_reward_charges_downloads_only_when_asked():
    upload_only = ClientSelectionEnv(tiny_config(num_rounds=3))
    both = ClientSelectionEnv(tiny_config(num_rounds=3, reward_traffic="upload+download"))
    w3 = upload_only.config.comm_weight
    assert EnvConfig().reward_traffic == "upload"  # FedMarl's upload-only term by default
    upload_only.reset(seed=4)
    both.reset(seed=4)
    for t in range(3):
        actions = choose(upload_only.possible_agents, t)
        _, reward_u, _, _, infos_u = upload_only.step(actions)
        _, reward_b, _, _, infos_b = both.step(actions)
        download_mb = infos_u["client_0"]["download_mb"]
        assert download_mb > 0 and infos_b["client_0"]["download_mb"] == download_mb
        assert reward_b["client_0"] == pytest.approx(reward_u["client_0"] - w3 * download_mb, abs=1e-12)


def test_downloads_appear_in_the_records_results_files_and_table(tmp_path):
    config = tiny_config(num_clients=4, clients_per_round=3, num_rounds=2)
    records = evaluate_policies(config, [make_policy("fedavg"), make_policy("random")], [3, 4], progress=False)
    env = ClientSelectionEnv(config)
    size_mb = env.simulator.model_size_mb
    for record in records["random"]:  # random selects without probing: only the selected download
        assert record.download_mb == pytest.approx([n * size_mb for n in record.num_selected])
    for record in records["fedavg"]:  # fedavg probes: every candidate (3 each round) downloads
        assert record.download_mb == pytest.approx([3 * size_mb] * 2)
    paths = write_results(tmp_path, records, config)
    rows = list(csv.DictReader(paths["csv"].open()))
    document = json.loads(paths["json"].read_text())
    summary = {row["policy"]: row for row in summarise(per_episode_metrics(records))}
    for row, (name, record) in zip(rows, [(n, r) for n, rs in records.items() for r in rs], strict=True):
        assert row["policy"] == name
        assert float(row["total_download_mb"]) == pytest.approx(sum(record.download_mb))
        assert float(row["total_upload_mb"]) == pytest.approx(sum(record.upload_mb))
        assert float(row["total_traffic_mb"]) == pytest.approx(sum(record.download_mb) + sum(record.upload_mb))
    for row in document["summary"]:
        expected = np.mean([sum(r.download_mb) for r in records[row["policy"]]])
        assert row["total_download_mb_mean"] == pytest.approx(expected)
    assert all("download_mb" in r for rs in document["records"].values() for r in rs)
    table = format_table(list(summary.values())).splitlines()
    header = [h.strip() for h in table[0].split("  ") if h.strip()]
    assert header.index("download (MB)") == header.index("upload (MB)") + 1
    assert header.index("traffic (MB)") == header.index("download (MB)") + 1
    for line in table[2:]:
        name = line.split()[0]
        assert f"{summary[name]['total_download_mb_mean']:.1f} +-" in line
        assert f"{summary[name]['total_traffic_mb_mean']:.1f} +-" in line
    assert not math.isnan(summary["fedavg"]["total_traffic_mb_mean"])
