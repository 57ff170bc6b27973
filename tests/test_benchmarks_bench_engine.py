"""benchmarks/bench_engine.py: the idiomatic loop it measures trains what the reference loop trains, and
a tiny run prints rows whose ratio is the ratio of the times it measured."""

import re

from benchmarks import bench_engine
from fedenv.engine import make_schedule, train_reference
from tests.test_engine_local_sgd import CONFIGS, generators, round_inputs


def test_idiomatic_loop_trains_what_the_reference_loop_trains_from_the_global_model_and_from_a_start():
    fed, _, params, momentum = round_inputs("lenet5-classic", CONFIGS[0], num_clients=4)
    config = CONFIGS[0]
    schedule = make_schedule(fed.client_indices, 2, config.batch_size, generators(4))
    reference = train_reference(fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y, schedule,
                                config)
    looped, buffers = bench_engine.idiomatic_loop(bench_engine.global_model(fed), fed.train_x, fed.train_y,
                                                  fed.client_indices, [(2, generators(4))], config.lr,
                                                  config.batch_size)
    assert buffers == {}
    assert bench_engine.max_difference(looped, reference.params) < 1e-6
    assert bench_engine.max_difference(looped, params) > 1e-3  # it did train
    again = make_schedule(fed.client_indices, 1, config.batch_size, generators(4, base=9))
    continued = train_reference(fed.model, reference.params, momentum, fed.global_params, fed.train_x, fed.train_y,
                                again, config)
    looped_on, _ = bench_engine.idiomatic_loop(bench_engine.global_model(fed), fed.train_x, fed.train_y,
                                               fed.client_indices, [(1, generators(4, base=9))], config.lr,
                                               config.batch_size, starts=reference.params)
    assert bench_engine.max_difference(looped_on, continued.params) < 1e-6


def test_a_row_prints_the_ratio_fractions_of_the_matmul_rate_and_least_time_by_hand():
    row = bench_engine.Measured("setting", batched_s=0.5, loop_s=2.0, batched_train_s=0.4, loop_train_s=1.6,
                                train_flops=4e9, difference=2e-7)
    # ratio 2.0 / 0.5; 4e9 FLOP in 0.4 s = 1e10 FLOP/s = the whole matmul rate; the loop a quarter of it
    assert row.line(rate=1e10).split() == ["setting", "0.500", "2.000", "4.00x", "100.0%", "25.0%", "0.400",
                                           "2.0e-07"]


def test_targets_are_judged_on_the_classic_row_and_the_episode_row():
    classic = bench_engine.Measured("c", batched_s=0.5, loop_s=2.0, batched_train_s=0.4, loop_train_s=1.6,
                                    train_flops=1.6e9, difference=0.0)  # 4x; 4e9 FLOP/s
    episode = bench_engine.Measured("e", batched_s=1.0, loop_s=3.0, batched_train_s=1.0, loop_train_s=3.0,
                                    train_flops=5e9, difference=0.0)  # 5e9 FLOP/s
    assert bench_engine.target_lines(classic, episode, rate=1e10) == [
        "target ratio: >= 4, measured 4: met",
        "target lenet5-classic of matmul: >= 0.4, measured 0.4: met",
        "target episode of matmul: >= 0.55, measured 0.5: NOT met",
    ]


def test_tiny_round_row_runs_and_the_two_implementations_agree(capsys):
    bench_engine.main(["--model", "mlp", "--clients", "3", "--samples", "40", "--repeats", "1", "--test-samples",
                       "100", "--matmul-size", "64"])
    out = capsys.readouterr().out
    assert re.search(r"torch threads \d+; \d+ CPUs; load average [\d.]+", out)
    row = next(line for line in out.splitlines() if line.startswith("mlp, 3 x 40 samples x 2 epochs"))
    assert float(row.split()[-1]) < 1e-6



def test_profile_names_the_operators_of_a_batched_round(capsys):
    bench_engine.main(["--profile", "--model", "lenet5-classic", "--clients", "2", "--samples", "20", "--test-samples",
                       "50"])
    out = capsys.readouterr().out
    assert "Self CPU time total" in out
    assert "convolution" in out  # the grouped convolutions of the lenet5-classic round are profiled
