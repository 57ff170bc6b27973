"""Check the seed papers' headline figures on the papers' own terms, at the scale a CPU affords.

Three checks; within each, every method runs the same seeds (identical partitions, initial models and
candidate draws), each policy in its own probing mode (the baselines select before training):

fedadp   FedAdp vs FedAvg (Wu and Wang, arXiv 2012.00661). Paper: "up to 54.1 %" fewer communication
         rounds than FedAvg on MNIST (abstract), with 10 nodes of 600 samples, B = 32, E = 1, lr 0.01
         decayed by 0.995 per round (Sec. III-IV), MLR and CNN models. The reduction
         1 - rounds(FedAdp) / rounds(FedAvg) is reported at the targets of :data:`FEDADP_TARGETS`.
fedcm    FedCM-TS, FedCA and FedPdp vs FedAvg (Kim et al., arXiv 2012.03270) under client heterogeneity
         (Dirichlet over clients), 8 of 20 clients per round, FedCA's classification-loss (ce) score, with
         both weight forms (:data:`WEIGHT_FORMS`) and against both FedAvgs: ours (``fedavg``, the uploads
         averaged) and the paper's (``fedavg-eq3``, Eq. 3: clients not sampled keep the global model).
         Paper, Table 5 (client heterogeneity, W/ FedCA, classification loss): FedCM-TS 51 rounds
         (1.96x), FedPdp with FedCA 49 (2.04x); W/O FedCA: FedPdp 52 (1.92x). Both speed-up definitions
         (:func:`speedup_to_target`, :func:`speedup_over_total_rounds`) at :data:`FEDCM_TARGET`.
         Accuracy: "up to 37.25 %" better (abstract, Sec. 1), a relative gain whose baseline the paper
         leaves unstated (most likely FedAvg, class heterogeneity, Table 4).
fedprox  FedProx's mu over its candidate set {0.001, 0.01, 0.1, 1} (Li et al., MLSys 2020, Sec. 5.3.2;
         FedCM gives its FedProx baseline mu = 0.1, App. D) vs FedAvg in the fedcm check's federation:
         final accuracy per mu and its paired difference to FedAvg.

Every figure is judged by a rule stated here (:func:`speedup_verdict`, :func:`reduction_verdict`,
:func:`gain_verdict`), and the sentences stating a result are generated from the numbers.

    python benchmarks/paper_checks.py --data-root <folder with MNIST/raw>   # full MNIST, ~30 min on one thread
    python benchmarks/paper_checks.py --data-root <folder> --write          # ... and rewrite the results page
    python benchmarks/paper_checks.py --quick                                # seconds: embedded mnist5k

``--write`` replaces the text between ``<!-- paper-checks:start -->`` and ``<!-- paper-checks:end -->`` of
docs/results/paper-checks.md with the tables, stamped with the commit and the command;
``--records FILE`` saves every episode's accuracy curve (JSON), and ``--from-records FILE`` renders the
tables from such a file without running anything.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import dataclasses
import json
import os
import shlex
import time

import numpy as np
import torch

from benchmarks.pages import git_commit, write_between_markers
from fedenv.baselines import ConfiguredPolicy, FedAdpPolicy, FedAvgPolicy, FedCAPolicy, FedCMTSPolicy
from fedenv.config import EnvConfig
from fedenv.evaluation import evaluate_policies
from fedenv.evaluation.rollout import EpisodeRecord
from fedenv.fileio import atomic_write_text

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "results" / "paper-checks.md"
START, END = "<!-- paper-checks:start -->", "<!-- paper-checks:end -->"
CHECKS = ("fedadp", "fedcm", "fedprox")

FEDPROX_MUS = (0.001, 0.01, 0.1, 1.0)
"""FedProx's candidate set for mu (Li et al., MLSys 2020, Sec. 5.3.2, "Choosing mu")."""

FEDADP_TARGETS = {
    0.95: "the paper's: FedAdp's MNIST experiments train \"until the model achieves 95% test accuracy\" "
          "(arXiv 2012.00661, Sec. II, Fig. 1, its CNN); the table behind \"up to 54.1 %\" is not in the text we "
          "hold, so this is the only MNIST target the paper gives us",
    0.90: "ours, fixed before the run: a round number below the paper's 95 %, which is its CNN's (our MLP is the "
          "smaller model); the highest of the targets the earlier release reported",
}
"""Check (a)'s target test accuracies, fixed in the code before the run, each with its source."""

FEDCM_TARGET = 0.90
"""Check (b)'s target test accuracy, fixed in the code before the run: FedCM's speed-up is measured at
FedAvg's final accuracy (Table 5 caption), and FedAvg's mean final accuracy in this federation at the earlier
release was 0.9005 (seeds 1000-1002, 40 rounds, docs/results/paper-checks.md of that release), rounded to
0.90. A fixed target stands in for "FedAvg's final accuracy" so that neither definition follows one run's
last-round swing (FedAvg's test accuracy moves by up to 0.04 from round to round here)."""

WEIGHT_FORMS = {"Table 1": True, "renormalised": False}
"""FedPdp / FedCA weight forms -> the rules' option ``unnormalised``: FedCM's Table 1 weights
``p_k |S| / |S_t|`` as written (they sum to 1 only in expectation), or renormalised to sum to 1 (fedenv's
default). Renormalised FedPdp weights are FedAvg's exactly (:func:`fedenv.aggregation.fedpdp_weights`),
so FedPdp runs in the Table 1 form only."""

REFERENCES = {"fedavg": "ours: the uploads averaged", "fedavg-eq3": "the paper's Eq. 3: non-sampled keep w_t"}
"""Check (b)'s two FedAvgs, each a reference of the speed-ups."""

PAPER_SPEEDUPS = {"fedcm-ts": (51, 1.96, "Table 5: client heterogeneity, W/ FedCA, classification loss, FedCM-TS"),
                  "fedca": (49, 2.04, "Table 5: same row, FedPdp column, i.e. FedPdp sampling with FedCA"),
                  "fedpdp": (52, 1.92, "Table 5: client heterogeneity, W/O FedCA")}
"""The paper's rounds and speed-up over FedAvg (100 rounds) per method (Kim et al., arXiv 2012.03270)."""


# ---------------------------------------------------------------- figures, each by its paper's definition
def speedup_to_target(method: EpisodeRecord, reference: EpisodeRecord, target: float) -> float | None:
    """README's speed-up: the reference's rounds to ``target`` test accuracy over the method's rounds to it
    (first round at or above it); None when either never reaches it (or the method does before any round)."""
    ours, theirs = method.rounds_to(target), reference.rounds_to(target)
    return theirs / ours if ours and theirs is not None else None


def speedup_over_total_rounds(method: EpisodeRecord, reference: EpisodeRecord, target: float) -> float | None:
    """The paper's speed-up (Kim et al., Table 5 caption): the reference's total rounds over the method's
    rounds to the reference's final accuracy, here the fixed ``target`` that stands in for it
    (:data:`FEDCM_TARGET`); None when the method never reaches it (or does before any round)."""
    ours = method.rounds_to(target)
    return (len(reference.test_accuracy) - 1) / ours if ours else None


def round_reductions(fedavg: list[EpisodeRecord], method: list[EpisodeRecord], target: float) -> list[float | None]:
    """FedAdp's figure per seed: ``1 - rounds(method) / rounds(FedAvg)`` to reach ``target`` test accuracy
    (None when either never reaches it)."""
    values = []
    for a, b in zip(fedavg, method):
        ra, rb = a.rounds_to(target), b.rounds_to(target)
        values.append(1 - rb / ra if ra and rb is not None else None)
    return values


def relative_gain(method: list[EpisodeRecord], reference: list[EpisodeRecord]) -> float:
    """Relative accuracy gain ``mean final acc(method) / mean final acc(reference) - 1`` (FedCM's 37.25 %
    read as relative)."""
    return float(np.mean([e.final_accuracy for e in method]) / np.mean([e.final_accuracy for e in reference]) - 1)


def paired_differences(method: list[EpisodeRecord], reference: list[EpisodeRecord]) -> list[float]:
    """Final accuracy of ``method`` minus ``reference``'s, seed by seed (fractions)."""
    return [e.final_accuracy - r.final_accuracy for e, r in zip(method, reference)]


# ---------------------------------------------------------------- the rules that say "reproduced"
def speedup_verdict(values: list[float | None]) -> str:
    """A speed-up is *reproduced* when the method reaches the target on every seed and is faster than the
    reference on every seed (speed-up > 1, the direction of the paper's claim); otherwise *not
    reproduced*, with the reason."""
    missed = sum(v is None for v in values)
    if missed:
        return f"not reproduced (no speed-up on {missed} of {len(values)} seeds: the target is not reached)"
    slower = sum(v <= 1 for v in values)
    if slower:
        return f"not reproduced (not faster on {slower} of {len(values)} seeds)"
    return f"reproduced (faster on {len(values)} of {len(values)} seeds)"


def reduction_verdict(values: list[float | None]) -> str:
    """FedAdp's fewer rounds are *reproduced* at a target when both methods reach it on every seed and
    FedAdp needs fewer rounds on every seed; otherwise *not reproduced* (or *cannot be measured* when a
    method never reaches the target on some seed)."""
    missed = sum(v is None for v in values)
    if missed:
        return f"cannot be measured on {missed} of {len(values)} seeds (target not reached)"
    fewer = sum(v > 0 for v in values)
    if fewer == len(values):
        return f"reproduced (fewer rounds on {fewer} of {len(values)} seeds)"
    return f"not reproduced (fewer rounds on {fewer} of {len(values)} seeds)"


def higher_text(differences: list[float]) -> str:
    """``"higher on 2 of 3 seeds"``: how many paired differences are above 0."""
    return f"higher on {sum(d > 0 for d in differences)} of {len(differences)} seeds"


def gain_verdict(differences: list[float]) -> str:
    """An accuracy gain is *reproduced* in direction when the method's final accuracy is above the
    reference's on every seed; otherwise *not reproduced*."""
    above = sum(d > 0 for d in differences)
    word = "reproduced in direction" if above == len(differences) else "not reproduced"
    return f"{word} ({higher_text(differences)})"


# ---------------------------------------------------------------- formatting
def mean_text(values: list[float | None], fmt: str = "{:.2f}") -> str:
    """Mean of the values that are not None, with how many seeds gave one: ``"1.52 (3/3 seeds)"``."""
    reached = [v for v in values if v is not None]
    mean = fmt.format(float(np.mean(reached))) if reached else "never"
    return f"{mean} ({len(reached)}/{len(values)} seeds)"


def per_seed_text(values: list, fmt: str = "{}") -> str:
    """Values seed by seed, ``"1.20 / never / 0.95"`` (None: never)."""
    return " / ".join("never" if v is None else fmt.format(v) for v in values)


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def closing_table(rows: list[dict]) -> str:
    """The closing table in Markdown: check, paper figure (with its place), ours, verdict, settings that differ."""
    return table(["check", "paper", "ours", "verdict", "settings that differ"],
                 [[r["check"], r["paper"], r["ours"], r["verdict"], r["differs"]] for r in rows])


# ---------------------------------------------------------------- settings
def fedadp_config(args) -> EnvConfig:
    """FedAdp's setting (Wu and Wang, Sec. III-IV): 10 nodes of 600 samples, 5 IID + 5 x-class non-IID,
    all nodes every round, B = 32, E = 1, lr 0.01 decayed by 0.995 per round (for FedAvg too). The setting
    has no server validation split, so the (unreported) reward scores the test split: no policy here learns
    from it."""
    return EnvConfig(
        dataset=args.dataset, data_root=args.data_root, model=args.fedadp_model, partition="xclass",
        num_clients=10, clients_per_round=10, val_fraction=0.0, reward_accuracy_split="test",
        partition_options={"xclass": {"classes": args.x, "noniid_clients": 5, "samples": args.samples}},
        num_rounds=args.fedadp_rounds, local_epochs=1,
        batch_size=32, lr=0.01, lr_decay=0.995, latency_weight=0.0, comm_weight=0.0, device=args.device)


def fedcm_config(args, unnormalised: bool = True) -> EnvConfig:
    """FedCM's client heterogeneity (Kim et al., Sec. 3): 20 clients, Dirichlet shares per class, 8 drawn
    uniformly per round; FedPdp / FedCA weights as the paper's Table 1 writes them (``unnormalised``) or
    renormalised (fedenv's default)."""
    return EnvConfig(
        dataset=args.dataset, data_root=args.data_root, model=args.fedcm_model, partition="dirichlet",
        partition_options={"dirichlet": {"alpha": args.alpha}}, num_clients=20, clients_per_round=8, val_fraction=0.1,
        num_rounds=args.fedcm_rounds, local_epochs=args.fedcm_epochs, batch_size=32, lr=0.05,
        aggregation_options={"fedca": {"score": "ce", "unnormalised": unnormalised},
                             "fedpdp": {"unnormalised": unnormalised}},
        latency_weight=0.0, comm_weight=0.0, device=args.device)


def seeds_of(args) -> list[int]:
    return list(range(args.first_seed, args.first_seed + args.seeds))


def fedcm_differences(args) -> str:
    """The fedcm and fedprox checks' settings that differ from FedCM's (Kim et al., Sec. 3, App. D)."""
    return (f"{args.dataset} + {args.fedcm_model} (paper: CIFAR-10, VGG-11); E={args.fedcm_epochs} (paper 5); "
            f"{args.fedcm_rounds} rounds (paper 100); Dirichlet alpha {args.alpha} (the paper's digits are lost in "
            f"its text); {args.seeds} seeds (paper 2); lr 0.05 (ours); validation split 10 % of each class (paper: "
            f"500 per class); target {args.fedcm_target:.2f} fixed in the code (paper: FedAvg's final accuracy)")


# ---------------------------------------------------------------- running
def evaluate(config: EnvConfig, policies: list, seeds: list[int]) -> dict[str, list[EpisodeRecord]]:
    """:func:`~fedenv.evaluation.evaluate_policies` one policy at a time, printing when each is done (a full
    run takes CPU-minutes per policy)."""
    records = {}
    for policy in policies:
        started = time.perf_counter()
        records.update(evaluate_policies(config, [policy], seeds, progress=True))
        print(f"{policy.name}: {len(seeds)} seeds in {time.perf_counter() - started:.0f} s", flush=True)
    return records


def run_fedadp(args) -> dict[str, list[EpisodeRecord]]:
    """Check (a)'s episodes: FedAvg and FedAdp on every seed."""
    return evaluate(fedadp_config(args), [FedAvgPolicy(), FedAdpPolicy()], seeds_of(args))


def run_fedcm(args) -> dict[str, list[EpisodeRecord]]:
    """Check (b)'s episodes: both FedAvgs (:data:`REFERENCES`), then FedPdp (Table 1 form), FedCA and FedCM-TS
    in each weight form (:data:`WEIGHT_FORMS`), keyed ``"fedca [Table 1]"``. FedCM-TS ranks all 20 clients
    and picks 8 (select_fraction 0.4 of a budget of 20)."""
    seeds = seeds_of(args)
    records = evaluate(fedcm_config(args), [FedAvgPolicy(), ConfiguredPolicy("fedavg-eq3", {
        "aggregation": "fedavg-eq3"})], seeds)
    for form, unnormalised in WEIGHT_FORMS.items():
        print(f"weights {form}:", flush=True)
        uniform = fedcm_config(args, unnormalised)   # 8 of 20 drawn uniformly, all upload
        policies = [ConfiguredPolicy("fedpdp", {"aggregation": "fedpdp"})] * unnormalised + [FedCAPolicy()]
        got = evaluate(uniform, policies, seeds)
        got.update(evaluate(dataclasses.replace(uniform, clients_per_round=20), [FedCMTSPolicy(select_fraction=0.4)],
                            seeds))
        records.update({f"{name} [{form}]": episodes for name, episodes in got.items()})
    return records


def run_fedprox(args, fedavg: list[EpisodeRecord] | None = None) -> dict[str, list[EpisodeRecord]]:
    """Check (c)'s episodes in the fedcm check's federation: one per mu of :data:`FEDPROX_MUS`, and FedAvg
    unless check (b)'s ``fedavg`` records are given."""
    policies = [ConfiguredPolicy(f"fedprox-{mu:g}", {"aggregation": "fedavg", "fedprox_mu": mu}) for mu in FEDPROX_MUS]
    records = evaluate(fedcm_config(args), policies + [FedAvgPolicy()] * (fedavg is None), seeds_of(args))
    if fedavg is not None:
        records["fedavg"] = fedavg
    return records


# ---------------------------------------------------------------- rendering: tables and the sentences of a result
def fedadp_section(args, records: dict[str, list[EpisodeRecord]]) -> tuple[str, list[dict], list[str]]:
    """Check (a)'s Markdown, closing-table row and result sentences."""
    fedavg, fedadp = records["fedavg"], records["fedadp"]
    rows, findings, ours, verdicts = [], [], [], []
    for target, source in args.fedadp_targets.items():
        reductions = round_reductions(fedavg, fedadp, target)
        verdict = reduction_verdict(reductions)
        rows.append([f"{target:.2f}", per_seed_text([e.rounds_to(target) for e in fedavg]),
                     per_seed_text([e.rounds_to(target) for e in fedadp]), per_seed_text(reductions, "{:.1%}"),
                     mean_text(reductions, "{:.1%}"), verdict, source])
        ours.append(f"target {target:.2f}: {mean_text(reductions, '{:.1%}')}")
        verdicts.append(f"{target:.2f}: {verdict}")
        if any(r is None for r in reductions):
            best = {name: max(max(e.test_accuracy) for e in episodes) for name, episodes in records.items()}
            findings.append(f"At the target {target:.2f}, FedAdp's fewer rounds cannot be measured on every seed: "
                            f"in {args.fedadp_rounds} rounds the best test accuracy any seed reaches is "
                            f"{best['fedavg']:.4f} for FedAvg and {best['fedadp']:.4f} for FedAdp "
                            f"({args.fedadp_model}; the paper's 95 % is a CNN's).")
        else:
            findings.append(f"At the target {target:.2f}, FedAdp's fewer rounds are {verdict}: "
                            f"{mean_text(reductions, '{:.1%}')} fewer on average (paper: up to 54.1 %).")
    differences = paired_differences(fedadp, fedavg)
    findings.append(f"FedAdp's final test accuracy after {args.fedadp_rounds} rounds against FedAvg's: "
                    f"{higher_text(differences)} (paired differences {per_seed_text(differences, '{:+.4f}')}).")
    finals = table(["method", "final test accuracy (mean +- std)", "per seed", "best accuracy reached (per seed)"],
                   [[name, f"{np.mean([e.final_accuracy for e in eps]):.4f} +- "
                     f"{np.std([e.final_accuracy for e in eps]):.4f}",
                     per_seed_text([e.final_accuracy for e in eps], "{:.4f}"),
                     per_seed_text([max(e.test_accuracy) for e in eps], "{:.4f}")] for name, eps in records.items()])
    text = "\n".join([
        f"**(a) FedAdp vs FedAvg**: {args.dataset}, 10 clients of {args.samples} samples, 5 IID + 5 {args.x}-class "
        f"non-IID, {args.fedadp_model}, E=1, B=32, lr 0.01 x 0.995^t, {args.fedadp_rounds} rounds, seeds "
        f"{seeds_text(args)}. Rounds to each target (per seed) and FedAdp's reduction "
        "`1 - rounds(FedAdp) / rounds(FedAvg)`:", "",
        table(["target", "FedAvg rounds", "FedAdp rounds", "fewer rounds", "mean", "verdict", "target's source"], rows),
        "", finals])
    differs = (f"{args.dataset}, {args.fedadp_model} (paper: MLR and a CNN); {args.fedadp_rounds} rounds; "
               f"{args.seeds} seeds")
    row = {"check": "FedAdp: fewer rounds than FedAvg to a target accuracy",
           "paper": "up to 54.1 % on MNIST (arXiv 2012.00661, abstract)", "ours": "; ".join(ours),
           "verdict": "; ".join(verdicts), "differs": differs}
    return text, [row], findings


def seeds_text(args) -> str:
    seeds = seeds_of(args)
    return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])


def fedcm_section(args, records: dict[str, list[EpisodeRecord]]) -> tuple[str, list[dict], list[str]]:
    """Check (b)'s Markdown, closing-table rows and result sentences."""
    target = args.fedcm_target
    accuracy = table(
        ["method", "final test accuracy (mean +- std)", "per seed", f"rounds to {target:.2f} (per seed)"],
        [[name, f"{np.mean([e.final_accuracy for e in eps]):.4f} +- {np.std([e.final_accuracy for e in eps]):.4f}",
          per_seed_text([e.final_accuracy for e in eps], "{:.4f}"), per_seed_text([e.rounds_to(target) for e in eps])]
         for name, eps in records.items()])
    speed_rows, closing, findings = [], [], []
    reproduced: dict[str, list[str]] = {"README's": [], "the paper's": []}
    methods = [name for name in records if name not in REFERENCES] + ["fedavg-eq3"]
    for name in methods:
        base = name.split(" [")[0]
        for reference in REFERENCES:
            if reference == name:
                continue
            pairs = list(zip(records[name], records[reference]))
            readme = [speedup_to_target(m, r, target) for m, r in pairs]
            paper = [speedup_over_total_rounds(m, r, target) for m, r in pairs]
            paper_figure = PAPER_SPEEDUPS.get(base)
            if paper_figure:
                for definition, values in (("README's", readme), ("the paper's", paper)):
                    if speedup_verdict(values).startswith("reproduced"):
                        reproduced[definition].append(f"{name} vs {reference}")
            speed_rows.append([name, reference, per_seed_text(readme, "{:.2f}x"), mean_text(readme, "{:.2f}x"),
                               speedup_verdict(readme), per_seed_text(paper, "{:.2f}x"), mean_text(paper, "{:.2f}x"),
                               speedup_verdict(paper), f"{paper_figure[1]:.2f}x" if paper_figure else "-"])
            if paper_figure and reference == "fedavg-eq3":
                closing.append({
                    "check": f"{name}: speed-up vs FedAvg (Eq. 3)",
                    "paper": f"{paper_figure[0]} rounds, {paper_figure[1]:.2f}x ({paper_figure[2]})",
                    "ours": f"rounds to {target:.2f}: {mean_text([m.rounds_to(target) for m, _ in pairs], '{:.1f}')}; "
                            f"README's {mean_text(readme, '{:.2f}x')}; the paper's {mean_text(paper, '{:.2f}x')}",
                    "verdict": f"README's: {speedup_verdict(readme)}; the paper's: {speedup_verdict(paper)}",
                    "differs": "see the settings above"})
            if paper_figure:
                findings.append(f"{name} against {reference} ({REFERENCES[reference]}): README's speed-up "
                                f"{mean_text(readme, '{:.2f}x')}, {speedup_verdict(readme)}; the paper's "
                                f"{mean_text(paper, '{:.2f}x')}, {speedup_verdict(paper)} (paper: "
                                f"{paper_figure[1]:.2f}x).")
    speeds = table(["method", "reference", "README's speed-up (per seed)", "mean", "verdict",
                    "the paper's speed-up (per seed)", "mean", "verdict", "paper"], speed_rows)
    gains = []
    for name in [n for n in records if n.startswith("fedcm-ts")]:
        for reference in REFERENCES:
            differences = paired_differences(records[name], records[reference])
            gain = relative_gain(records[name], records[reference])
            gains.append([name, reference, f"{gain:+.1%}", per_seed_text(differences, "{:+.4f}"),
                          gain_verdict(differences)])
            findings.append(f"{name}'s final accuracy against {reference}: {gain:+.1%} relative, "
                            f"{gain_verdict(differences)}.")
            if reference == "fedavg-eq3":
                closing.append({"check": f"{name}: accuracy gain (relative) vs FedAvg (Eq. 3)",
                                "paper": "up to 37.25 % (abstract, Sec. 1; relative, baseline unstated: most likely "
                                         "FedAvg under class heterogeneity, Table 4)",
                                "ours": f"{gain:+.1%}", "verdict": gain_verdict(differences),
                                "differs": "see the settings above; client, not class, heterogeneity"})
    pairs_count = 2 * sum(name.split(" [")[0] in PAPER_SPEEDUPS for name in methods)
    findings[:0] = [f"FedCM's speed-ups by {definition} definition at {target:.2f}: reproduced (faster on every seed) "
                    f"for {len(names)} of {pairs_count} method-reference pairs" + (f" ({', '.join(names)})" if names
                                                                                  else "") + "."
                    for definition, names in reproduced.items()]
    for reference in REFERENCES:
        episodes = records[reference]
        reached = per_seed_text([e.rounds_to(target) for e in episodes])
        itself = per_seed_text([speedup_over_total_rounds(e, e, target) for e in episodes], "{:.2f}x")
        findings.append(f"{reference} first reaches {target:.2f} in round {reached} (per seed) of {args.fedcm_rounds}: "
                        f"the paper's definition counts all {args.fedcm_rounds} rounds, so by it {reference} scores "
                        f"{itself} against itself (it agrees with README's only when the reference reaches the target "
                        "in its last round).")
    differences = paired_differences(records["fedavg-eq3"], records["fedavg"])
    findings.append(f"The paper's FedAvg (Eq. 3) minus ours in final accuracy: {per_seed_text(differences, '{:+.4f}')} "
                    f"(per seed).")
    text = "\n".join([
        f"**(b) FedCM-TS, FedCA, FedPdp vs FedAvg**: {args.dataset}, Dirichlet alpha={args.alpha} over 20 clients, 8 "
        f"per round, {args.fedcm_model}, E={args.fedcm_epochs}, {args.fedcm_rounds} rounds, FedCA score ce, seeds "
        f"{seeds_text(args)}; `[Table 1]`: FedPdp / FedCA weights as FedCM's Table 1 writes them, `[renormalised]`: "
        "renormalised to sum to 1 (fedenv's default; FedPdp renormalised is `fedavg` exactly); `fedavg`: the uploads "
        "averaged (ours), `fedavg-eq3`: FedCM's Eq. 3 (clients not sampled keep the global model).", "",
        f"Settings that differ from the paper: {fedcm_differences(args)}.", "", accuracy, "",
        f"Speed-ups at the target {target:.2f} (fixed in the code). README's: the reference's rounds to the target "
        f"over the method's; the paper's (Table 5 caption): the reference's total rounds ({args.fedcm_rounds}) over "
        "the method's rounds to the target. Verdict rule: *reproduced* when the method reaches the target on every "
        "seed and is faster than the reference on every seed.", "", speeds, "",
        "FedCM-TS's final accuracy against each FedAvg (relative gain of the means; paired differences per seed):", "",
        table(["method", "reference", "relative gain", "minus reference (per seed)", "verdict"], gains)])
    return text, closing, findings


def fedprox_section(args, records: dict[str, list[EpisodeRecord]]) -> tuple[str, list[dict], list[str]]:
    """Check (c)'s Markdown, closing-table row and result sentences."""
    fedavg = records["fedavg"]
    fedavg_mean = float(np.mean([e.final_accuracy for e in fedavg]))
    rows, means = [], {}
    for mu in FEDPROX_MUS:
        episodes = records[f"fedprox-{mu:g}"]
        finals, differences = [e.final_accuracy for e in episodes], paired_differences(episodes, fedavg)
        means[mu] = float(np.mean(finals))
        rows.append([f"{mu:g}", f"{means[mu]:.4f} +- {np.std(finals):.4f}",
                     f"{np.mean(differences):+.4f} +- {np.std(differences):.4f}", higher_text(differences)])
    rows.append(["FedAvg", f"{fedavg_mean:.4f} +- {np.std([e.final_accuracy for e in fedavg]):.4f}", "", ""])
    best = max(means, key=means.get)
    best_verdict = higher_text(paired_differences(records[f"fedprox-{best:g}"], fedavg))
    text = "\n".join([f"**(c) FedProx's mu vs FedAvg** in the federation of (b), {args.fedcm_rounds} rounds, seeds "
                      f"{seeds_text(args)} (final test accuracy, mean +- std; paired difference to FedAvg):", "",
                      table(["mu", "final accuracy", "minus FedAvg (paired)", "than FedAvg"], rows)])
    row = {"check": "FedProx: best mu of {0.001, 0.01, 0.1, 1}",
           "paper": "1, 1, 1, 0.001, 0.01 on Figure 1's five datasets (MLSys 2020, Sec. 5.3.2); FedCM uses 0.1 "
                    "(App. D)",
           "ours": f"mu = {best:g}: {means[best]:.4f} vs FedAvg {fedavg_mean:.4f} (mean final accuracy)",
           "verdict": f"mu = {best:g}: {best_verdict} than FedAvg",
           "differs": f"the federation of the fedcm check (paper: its own datasets, 10 devices per round, E = 20, "
                      f"0/50/90 % stragglers, Sec. 5.1); {args.seeds} seeds"}
    finding = (f"FedProx's best mu here is {best:g} ({'FedCM' if best == 0.1 else 'not FedCM'}'s choice of 0.1): "
               f"{best_verdict} than FedAvg.")
    return text, [row], [finding]


SECTIONS = {"fedadp": fedadp_section, "fedcm": fedcm_section, "fedprox": fedprox_section}


def results_markdown(args, records: dict[str, dict[str, list[EpisodeRecord]]], commit: str, command: str,
                     seconds: float) -> str:
    """The page's generated block: the stamp, each check's tables, the closing table and the sentences that
    state a result (*In short*), all from ``records`` (check -> policy -> episodes)."""
    rendered = git_commit()
    parts = [f"Made by `{command}` at commit `{commit}` ({seconds:.0f} s, {args.torch_threads} torch "
             f"thread{'s' * (args.torch_threads != 1)})" + ("" if rendered == commit else
                                                            f"; tables rendered at commit `{rendered}`") + ".", ""]
    rows, findings = [], []
    for check in CHECKS:
        if check in records:
            text, check_rows, check_findings = SECTIONS[check](args, records[check])
            parts += [text, ""]
            rows += check_rows
            findings += check_findings
    parts += ["Closing table (the verdicts follow the rules above):", "", closing_table(rows), "",
              "In short (sentences generated from the numbers above):", ""]
    parts += [f"- {sentence}" for sentence in findings]
    return "\n".join(parts)


# ---------------------------------------------------------------- records on disk
def save_records(path: Path, args, records: dict[str, dict[str, list[EpisodeRecord]]], meta: dict) -> None:
    """Write every episode of ``records`` and the run's settings to ``path`` (JSON, atomically)."""
    settings = {k: v for k, v in vars(args).items() if k in SETTINGS}
    settings["fedadp_targets"] = {str(k): v for k, v in args.fedadp_targets.items()}
    document = {"settings": settings, **meta,
                "records": {check: {name: [e.to_dict() for e in eps] for name, eps in by_name.items()}
                            for check, by_name in records.items()}}
    atomic_write_text(path, json.dumps(document, indent=1))
    print(f"wrote {path}")


def load_records(path: Path, args) -> tuple[dict[str, dict[str, list[EpisodeRecord]]], dict]:
    """The records and run facts (commit, command, seconds, torch threads) of a :func:`save_records` file;
    ``args`` takes the file's settings."""
    document = json.loads(Path(path).read_text())
    settings = dict(document["settings"])
    settings["fedadp_targets"] = {float(k): v for k, v in settings["fedadp_targets"].items()}
    vars(args).update(settings)
    records = {check: {name: [EpisodeRecord(**e) for e in eps] for name, eps in by_name.items()}
               for check, by_name in document["records"].items()}
    return records, {k: document[k] for k in ("commit", "command", "seconds")}


SETTINGS = ("dataset", "data_root", "seeds", "first_seed", "fedadp_model", "fedadp_rounds", "x", "samples",
            "fedcm_model", "fedcm_rounds", "fedcm_epochs", "alpha", "fedcm_target", "fedadp_targets",
            "torch_threads")
"""The arguments a records file keeps: what the tables describe."""

QUICK = {"dataset": "mnist5k", "data_root": None, "seeds": 2, "fedadp_rounds": 3, "fedcm_rounds": 3, "samples": 60,
         "fedadp_targets": {0.15: "quick run's", 0.2: "quick run's"}, "fedcm_target": 0.2}
"""What ``--quick`` sets: a run of seconds on the embedded digits, for CI (figures not comparable to the papers)."""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", help="folder holding MNIST/raw in torchvision's layout (full MNIST)")
    parser.add_argument("--quick", action="store_true", help="seconds-long run on mnist5k: " + ", ".join(
        f"{k}={v}" for k, v in QUICK.items()))
    parser.add_argument("--only", choices=CHECKS, action="append", help="run only this check (repeatable)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--fedadp-model", default="mlp", help="model of check (a): mlp (default, affordable on a "
                        "CPU) or lenet5 (the paper's CNN family, about 10x the cost per round on a CPU)")
    parser.add_argument("--fedadp-rounds", type=int, default=60)
    parser.add_argument("--x", type=int, default=1, help="classes per non-IID client in check (a) (paper: 1 or 2)")
    parser.add_argument("--samples", type=int, default=600, help="samples per client in check (a) (paper: 600)")
    parser.add_argument("--fedcm-model", default="mlp")
    parser.add_argument("--fedcm-rounds", type=int, default=40, help="rounds of checks (b) and (c) (paper: 100)")
    parser.add_argument("--fedcm-epochs", type=int, default=2, help="local epochs of (b) and (c) (paper: 5)")
    parser.add_argument("--alpha", type=float, default=0.1, help="Dirichlet alpha of (b) and (c) (ours)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--write", action="store_true", help=f"replace the text between {START} and {END} of "
                        "--page with the tables, stamped with the commit and the command")
    parser.add_argument("--page", type=Path, default=PAGE, help="the results page (default: %(default)s)")
    parser.add_argument("--records", type=Path, metavar="FILE",
                        help="save every episode's records here (JSON; an existing file is not overwritten)")
    parser.add_argument("--from-records", type=Path, metavar="FILE",
                        help="render the tables from a --records file instead of running the checks")
    args = parser.parse_args(argv)
    args.fedadp_targets, args.fedcm_target = dict(FEDADP_TARGETS), FEDCM_TARGET
    if args.quick:
        vars(args).update(QUICK)
    elif args.from_records is None:
        if args.data_root is None:
            parser.error("--data-root is required (or --quick, or --from-records)")
        args.dataset = "mnist"
    if args.records is not None and args.records.exists():
        parser.error(f"--records {args.records} exists: give a new file (an earlier run is not overwritten)")
    if args.write and not all(marker in args.page.read_text() for marker in (START, END)):
        parser.error(f"--write: {args.page} lacks the {START} / {END} markers")
    return args


def main(argv=None) -> str:
    """Run the checks (or load them, ``--from-records``); print the tables; with ``--write``, write them to
    the page. Returns the generated Markdown block."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.from_records is not None:
        records, meta = load_records(args.from_records, args)
    else:
        args.torch_threads = torch.get_num_threads()
        meta = {"commit": git_commit(), "command": " ".join(["python benchmarks/paper_checks.py",
                                                             *map(shlex.quote, argv)])}
        print(f"torch threads: {args.torch_threads}; load average: {os.getloadavg()[0]:.2f}", flush=True)
        start = time.perf_counter()
        checks, records = args.only or list(CHECKS), {}
        if "fedadp" in checks:
            records["fedadp"] = run_fedadp(args)
        if "fedcm" in checks:
            records["fedcm"] = run_fedcm(args)
        if "fedprox" in checks:
            records["fedprox"] = run_fedprox(args, records.get("fedcm", {}).get("fedavg"))
        meta["seconds"] = time.perf_counter() - start
        if args.records is not None:
            save_records(args.records, args, records, meta)
    block = results_markdown(args, records, meta["commit"], meta["command"], meta["seconds"])
    print(block)
    if args.write:
        write_between_markers(args.page, block, START, END)
    return block


if __name__ == "__main__":
    main()
