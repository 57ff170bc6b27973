"""benchmarks/gpu_check.py: what ``--device cpu --quick`` reports, and that its ratio and determinism
check are computed from what it measured."""

import os

import torch

from benchmarks import gpu_check
from benchmarks.bench_engine import TOLERANCE, Measured


def test_compare_runs_calls_twice_and_compares_bit_for_bit():
    outputs = iter([{"w": torch.tensor([1.0, 2.0])}, {"w": torch.tensor([1.0, 2.0])},
                    {"w": torch.tensor([1.0, 2.0])}, {"w": torch.tensor([1.0, 2.5])}])
    assert gpu_check.compare_runs(lambda: next(outputs)) == (True, 0.0)
    assert gpu_check.compare_runs(lambda: next(outputs)) == (False, 0.5)


def test_quick_cpu_run_reports_the_measured_ratio_and_a_real_determinism_check(monkeypatch, capsys):
    measured = Measured("lenet5", batched_s=0.5, loop_s=2.0, batched_train_s=0.4, loop_train_s=1.6, train_flops=1.0,
                        difference=3e-8)
    monkeypatch.setattr(gpu_check, "measure_round", lambda setting, model, device: measured)
    [report] = gpu_check.main(["--device", "cpu", "--quick", "--preset", "mnist-lenet"])
    out = capsys.readouterr().out
    assert (report.batched_s, report.loop_s, report.ratio) == (0.5, 2.0, 4.0)
    assert "mnist-lenet: round batched 0.500 s, loop 2.000 s, ratio 4.00x (max |diff| 3.0e-08)" in out
    assert report.deterministic and report.determinism_difference == 0.0
    assert (report.most_candidates, report.stopped_by) == (2, "search capped at --max-candidates 2")
    assert "determinism: two seeded rounds bitwise equal" in out

    calls = iter(range(100))  # a round whose result changes with every call is reported as not deterministic
    monkeypatch.setattr(gpu_check, "batched_round",
                        lambda fed, clients, epochs, seed: (0.0, 0.0, {"w": torch.full((2,), float(next(calls)))}))
    [report] = gpu_check.main(["--device", "cpu", "--quick", "--preset", "mnist-lenet"])
    assert not report.deterministic and report.determinism_difference == 1.0
    assert "two seeded rounds NOT equal (max |diff| 1.0e+00)" in capsys.readouterr().out


def test_quick_cpu_run_of_both_presets_trains_both_models_alike(capsys):
    """The batched engine and the loop train the same weights: LeNet-5 within the benchmark's float32
    tolerance; ResNet-18 within 1e-2, because on some CPUs (seen: an AMD EPYC, one thread) float32
    convolutions round its batched and looped runs apart by about 1e-3 after a round, BatchNorm over small
    batches amplifying the rounding. Its exact agreement is tested in float64 in
    ``tests/test_presets.py::test_preset_models_train_batched_as_the_reference_loop``."""
    reports = gpu_check.main(["--device", "cpu", "--quick"])
    assert [r.preset for r in reports] == ["mnist-lenet", "fmnist-resnet18"]
    for report, bound in zip(reports, (TOLERANCE, 1e-2)):
        assert report.batched_s > 0 and report.loop_s > 0 and report.deterministic
        assert report.difference < bound, report.preset
    assert "fmnist-resnet18: round batched" in capsys.readouterr().out


def test_deterministic_flag_asks_for_deterministic_algorithms_without_tf32(monkeypatch, capsys):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           cudnn.allow_tf32, matmul.allow_tf32, cudnn.benchmark)
    cudnn.allow_tf32 = matmul.allow_tf32 = cudnn.benchmark = True
    try:
        gpu_check.main(["--device", "cpu", "--quick", "--preset", "mnist-lenet", "--deterministic"])
        assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
        assert not cudnn.allow_tf32 and not matmul.allow_tf32 and not cudnn.benchmark
    finally:  # process-wide flags: put back as they were
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        cudnn.allow_tf32, matmul.allow_tf32, cudnn.benchmark = was[2:]
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert "; deterministic algorithms, no TF32" in capsys.readouterr().out.splitlines()[0]
