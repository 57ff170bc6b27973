"""The oracle diagnostic: the simulator's look-ahead of each candidate's round time is what the round then takes,
and ``oracle-fastest`` ranks by it where ``stale-fastest`` ranks by the server's estimates."""

import numpy as np
import pytest

import fedenv
from agents.demonstrations import make_demonstrator
from fedenv.baselines import OracleFastestPolicy, make_policy
from fedenv.evaluation import run_episode
from fedenv.simulator import FederationSimulator, run_alone
from tests.helpers import tiny_config
from tests.test_baselines_stale_fastest import infos, observations, selected


@pytest.mark.parametrize("probing", [False, True])
def test_the_look_ahead_is_what_the_selected_clients_then_add_to_the_round(probing):
    simulator = FederationSimulator(tiny_config(num_clients=6, clients_per_round=4, num_rounds=4, local_epochs=2,
                                                probing=probing))
    run_alone(simulator.reset_process(7))
    replay, data_size = simulator.replay, simulator.clients.data_size
    for pick in ([0], [1, 3], [0, 1, 2, 3], [2]):
        candidates, t = simulator.candidates, simulator.round
        ahead_s = simulator.candidate_round_s()
        # each candidate's own time recomputed from the trace (an MLP trains every sample each epoch): the remaining
        # epochs and the upload after probing, the download, every epoch and the upload without it
        upload_kbps, download_kbps = replay.bandwidth_kbps(t)
        upload_s = replay.transfer_s(upload_kbps[candidates])
        epochs = 1 if probing else 2
        by_hand = replay.compute_s(candidates, data_size[candidates] * epochs, t) + upload_s
        if not probing:
            by_hand = by_hand + replay.transfer_s(download_kbps[candidates])
        assert ahead_s == pytest.approx(by_hand)
        # the probing phase waits for the slowest candidate's probe (download + first epoch), reported after reset
        probing_s = simulator.clients.probe_latency_hist_s[candidates, 0].max() if probing else 0.0
        chosen = np.zeros(6, dtype=bool)
        chosen[candidates[pick]] = True
        outcome = run_alone(simulator.play_round_process(chosen))
        assert outcome.latency_s == pytest.approx(probing_s + ahead_s[pick].max())
        run_alone(simulator.begin_round_process())


def test_the_oracle_ranks_by_the_look_ahead_where_stale_fastest_ranks_by_the_reports():
    # the reports (tests.test_baselines_stale_fastest.DURATIONS) rank b, d, c, a; the round's true times do not
    truth = {"a": 1.0, "b": 9.0, "c": 2.0, "d": 8.0}
    oracle = OracleFastestPolicy(k=1, last_rounds=1, drop=1, num_rounds=2)
    oracle.reset(0)
    oracle.look_ahead(truth)
    # round 1: nobody selected yet, so the stalest half (2 of 4) is the two fastest by the true times, a and c
    assert selected(oracle.act(observations(), infos())) == ["a"]
    assert selected(make_policy("stale-fastest", k=1, last_rounds=1, num_rounds=2).act(observations(), infos())) == [
        "b"]
    oracle.observe(infos(["a"]))
    oracle.look_ahead(truth)
    assert selected(oracle.act(observations(), infos())) == ["a", "c", "d"]  # the last round drops b, truly slowest


def test_the_oracle_refuses_a_round_without_its_look_ahead_and_cannot_demonstrate():
    with pytest.raises(ValueError, match=r"^oracle-fastest k=0"):
        make_policy("oracle-fastest", k=0)
    oracle = make_policy("oracle-fastest", num_rounds=3)
    assert (oracle.looks_ahead, oracle.compared, oracle.probes) == (True, False, False)
    oracle.reset(0)
    with pytest.raises(ValueError, match=r"oracle-fastest was not given this round's look-ahead"):
        oracle.act(observations(), infos())
    oracle.look_ahead({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0})
    oracle.act(observations(), infos())
    with pytest.raises(ValueError, match="look-ahead"):  # each look-ahead serves one round
        oracle.act(observations(), infos())
    oracle.look_ahead({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0})
    oracle.reset(1)
    with pytest.raises(ValueError, match="look-ahead"):  # nor does it outlive its episode
        oracle.act(observations(), infos())
    with pytest.raises(ValueError, match=r"'oracle-fastest:k=2' is an oracle"):
        make_demonstrator("oracle-fastest:k=2", fedenv.EnvConfig())


def test_run_episode_gives_the_oracle_each_rounds_look_ahead():
    config = tiny_config(num_clients=6, clients_per_round=4, num_rounds=3, probing=False)
    seen = []

    class Watching(OracleFastestPolicy):
        def look_ahead(self, round_s):
            seen.append(dict(round_s))
            super().look_ahead(round_s)

    record = run_episode(fedenv.parallel_env(config), Watching(k=1, last_rounds=0, num_rounds=3), seed=2)
    assert len(seen) == 3
    # with k = 1 and no last rounds one client uploads a round: the round takes its look-ahead time; in the first,
    # nobody selected yet, the stalest half is everyone's fastest half, so the round takes the least of them
    for ahead, latency_s in zip(seen, record.round_latency_s):
        assert any(latency_s == pytest.approx(seconds) for seconds in ahead.values())
    assert record.round_latency_s[0] == pytest.approx(min(seen[0].values()))
