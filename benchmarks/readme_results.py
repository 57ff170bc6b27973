"""Regenerate the results tables of the default federation from scratch: the documentation's results page
(docs/results/default.md) and README's headline tables.

    python benchmarks/readme_results.py                 # train 5 seeds of the main job (about 5 min each), evaluate
    python benchmarks/readme_results.py --checkpoint runs/r/seed_*/checkpoint.pt --write
    python benchmarks/readme_results.py --quick         # CI-sized: 2 seeds of 3 episodes, 2 rounds, 2 eval seeds

Trains the main job on training seeds 0-4 (``python train_agents.py --seeds 0 1 2 3 4 --run-dir OUT/run``)
unless ``--checkpoint`` is given, evaluates the runs pooled as one learned policy next to every fixed policy
(``python evaluate.py --checkpoint ... --policies all --episodes 10 --out OUT/eval``, held-out seeds
1000-1009) and prints the results markdown: the summary table (mean +- std over evaluation seeds and
training runs, with each policy's probing mode, upload, download and both), the paired differences to
FedAvg and to the best fixed policy with their 95 % bootstrap intervals (over evaluation seeds and training
runs, :mod:`fedenv.evaluation.paired`) and the per-seed table (final test accuracy / team return), with the
git commit that produced them. ``--write`` replaces the results page's text between the markers
``<!-- results:start -->`` and ``<!-- results:end -->`` with it, and README's text between
``<!-- headline:start -->`` and ``<!-- headline:end -->`` with the summary and paired tables.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import json
import subprocess
import tempfile

from benchmarks.pages import git_commit, write_between_markers

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- results:start -->", "<!-- results:end -->"
HEADLINE_START, HEADLINE_END = "<!-- headline:start -->", "<!-- headline:end -->"
FORMATS = {"final_accuracy": "{:.4f}", "total_latency_s": "{:.1f}", "total_upload_mb": "{:.1f}",
           "total_download_mb": "{:.1f}", "total_traffic_mb": "{:.1f}", "team_return": "{:.4f}"}
"""The summary table's columns (results.json metric names) and their number formats."""
QUICK_TRAINING = ["--episodes", "3", "--num-rounds", "2", "--vdn-learning-starts", "2", "--test-samples", "300"]
QUICK_EPISODES = 2
TRAINING_SEEDS = ("0", "1", "2", "3", "4")
"""Training seeds of the headline: five runs of the main job (Agarwal et al., NeurIPS 2021, ask for several)."""
QUICK_SEEDS = ("0", "1")
EPISODES = 10
"""Held-out evaluation seeds of the headline (1000-1009)."""


def run(command: list[str]) -> None:
    """Run ``command`` in the repository root (printing it first); raise ``RuntimeError`` if it fails."""
    print("$ " + " ".join(command[1:] if command[0] == sys.executable else command), flush=True)
    completed = subprocess.run(command, cwd=ROOT)
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with status {completed.returncode}")


def _cell(row: dict, metric: str) -> str:
    fmt = FORMATS[metric]
    cell = f"{fmt.format(row[f'{metric}_mean'])} +- {fmt.format(row[f'{metric}_std'])}"
    if f"{metric}_runs_std" in row:
        cell += f" (runs +- {fmt.format(row[f'{metric}_runs_std'])})"
    return cell


def summary_table(document: dict) -> str:
    """Markdown table of results.json's ``summary``: one row per policy, mean +- std over evaluation seeds
    (and over training runs, for a policy from several checkpoints); the best team return in bold."""
    rows = document["summary"]
    best = max(row["team_return_mean"] for row in rows)
    lines = ["| policy | probing | final test accuracy | total latency (s) | total upload (MB) | total download (MB) "
             "| total traffic (MB) | team return |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = [_cell(row, metric) for metric in FORMATS]
        if row["team_return_mean"] == best:
            cells[-1] = f"**{cells[-1]}**"
        lines.append(f"| {row['policy']} | {'on' if row['probing'] else 'off'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_seed_table(document: dict) -> str:
    """Markdown table of results.json's ``episodes``: final accuracy / team return of each policy on each
    evaluation seed (the mean over checkpoints for a policy from several)."""
    seeds = sorted({e["seed"] for episodes in document["episodes"].values() for e in episodes})
    lines = ["| policy | probing | " + " | ".join(map(str, seeds)) + " |", "|---|---|" + "---|" * len(seeds)]
    for name, episodes in document["episodes"].items():
        cells = []
        for seed in seeds:
            mine = [e for e in episodes if e["seed"] == seed]
            accuracy = sum(e["final_accuracy"] for e in mine) / len(mine)
            team_return = sum(e["team_return"] for e in mine) / len(mine)
            cells.append(f"{accuracy:.3f} / {team_return:.3f}")
        probing = "on" if any(e["probing"] for e in episodes) else "off"
        lines.append(f"| {name} | {probing} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_table(document: dict) -> str:
    """Markdown table of results.json's ``paired_differences``: per policy, its mean team return and final
    accuracy minus each reference's on the same seeds, with the 95 % interval and the label read from it."""
    rows = document["paired_differences"]
    roles = list(dict.fromkeys(r["role"] for r in rows))
    names = {r["role"]: r["reference"] for r in rows}
    cells: dict[str, dict[tuple[str, str], str]] = {}
    for r in rows:
        fmt = FORMATS[r["metric"]].replace("{:", "{:+")
        cell = fmt.format(r["difference"])
        if r["label"] is not None:
            cell += f" [{fmt.format(r['ci_low'])}, {fmt.format(r['ci_high'])}] {r['label']}"
        cells.setdefault(r["policy"], {})[(r["role"], r["metric"])] = cell
    columns = [(role, metric) for role in roles for metric in ("team_return", "final_accuracy")]
    titles = {"team_return": "return", "final_accuracy": "test accuracy"}
    header = "| policy | " + " | ".join(f"{titles[m]} - {names[role]}" for role, m in columns) + " |"
    lines = [header, "|---|" + "---|" * len(columns)]
    for policy, by_column in cells.items():
        lines.append(f"| {policy} | " + " | ".join(by_column.get(c, "") for c in columns) + " |")
    return "\n".join(lines)


def paired_caption(document: dict) -> str:
    """What the paired table compares: its references, seeds, training runs and bootstrap."""
    rows = document["paired_differences"]
    first = rows[0]
    runs = {r["policy"]: r["runs"] for r in rows if r["runs"] > 1}
    over = f"{first['seeds']} evaluation seeds" + (
        " and training runs (" + ", ".join(f"{p}: {n}" for p, n in runs.items()) + ")" if runs else "")
    references = ", ".join(f"{r['reference']} ({'FedAvg' if role == 'fedavg' else 'the best fixed policy'})"
                           for role, r in {r["role"]: r for r in rows}.items())
    return (f"Paired differences (policy minus reference on the same seeds) to {references}, with "
            f"{first['confidence_level']:.0%} percentile-bootstrap intervals over {over}: *better* / *worse* "
            "when the interval lies above / below 0, *level* when it holds 0.")


def reading(document: dict) -> str:
    """One sentence per learned policy (one from several checkpoints) read from the paired intervals alone:
    better / level / worse than each reference in team return and in final test accuracy."""
    rows = document["paired_differences"]
    words = {"better": "better", "worse": "worse", "level": "level", None: "without an interval"}
    sentences = []
    for policy in dict.fromkeys(r["policy"] for r in rows if r["runs"] > 1):
        parts = []
        for role in dict.fromkeys(r["role"] for r in rows):
            mine = {r["metric"]: r for r in rows if r["policy"] == policy and r["role"] == role}
            if not mine:
                continue
            name = mine["team_return"]["reference"]
            against = "FedAvg" if role == "fedavg" else f"the best fixed policy, {name}"
            parts.append(f"{words[mine['team_return']['label']]} in team return and "
                         f"{words[mine['final_accuracy']['label']]} in final test accuracy against {against}")
        sentences.append(f"Read from the intervals, {policy} is " + "; ".join(parts) + ".")
    return " ".join(sentences)


def results_markdown(document: dict, commit: str, command: str) -> str:
    """The results page's block: where the numbers come from, the summary table and the per-seed table."""
    seeds = sorted({e["seed"] for episodes in document["episodes"].values() for e in episodes})
    return "\n".join([
        f"Made by `python benchmarks/readme_results.py` at commit `{commit}`: `{command}` on held-out seeds "
        f"{seeds[0]}-{seeds[-1]} (mean +- std over those seeds):", "", summary_table(document), "",
        paired_caption(document), "", paired_table(document), "", reading(document), "",
        f"Per seed ({seeds[0]}-{seeds[-1]}), final accuracy / team return:", "", per_seed_table(document)])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", nargs="+", default=None, metavar="PATH",
                        help="evaluate these checkpoints instead of training the default run")
    parser.add_argument("--quick", action="store_true",
                        help="CI-sized: 2 training seeds of 3 episodes of 2 rounds, 2 evaluation seeds")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="folder for the run (OUT/run) and the evaluation (OUT/eval) "
                             "(default: a new temporary folder)")
    parser.add_argument("--write", action="store_true",
                        help="replace the tables of --page and the headline tables of --readme between their markers")
    parser.add_argument("--page", default=str(ROOT / "docs" / "results" / "default.md"), metavar="FILE",
                        help="results page with the results:start / results:end markers (default: %(default)s)")
    parser.add_argument("--readme", default=str(ROOT / "README.md"), metavar="FILE",
                        help="README with the headline:start / headline:end markers (default: %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return regenerate(args)
    except (RuntimeError, ValueError, FileNotFoundError) as error:
        print(f"readme_results.py: error: {error}", file=sys.stderr)
        return 1


def regenerate(args: argparse.Namespace) -> int:
    """Train (unless ``args.checkpoint``), evaluate, print the results block and, with ``args.write``, write it
    to the results page and its summary table to README's headline."""
    out = Path(args.out or tempfile.mkdtemp(prefix="readme-results-"))
    if args.checkpoint:
        checkpoints = [str(Path(p).resolve()) for p in args.checkpoint]  # the commands run in the repository root
        command = "python evaluate.py --checkpoint " + " ".join(args.checkpoint)
    else:
        seeds = QUICK_SEEDS if args.quick else TRAINING_SEEDS
        options = [*QUICK_TRAINING] if args.quick else []
        run([sys.executable, "train_agents.py", "--seeds", *seeds, "--run-dir", str(out / "run"), "--no-progress",
             "--eval-seeds", *options])
        checkpoints = [str(out / "run" / f"seed_{seed}" / "checkpoint.pt") for seed in seeds]
        command = (f"python train_agents.py --seeds {' '.join(seeds)} --run-dir RUN {' '.join(options)}".rstrip()
                   + "`, then `python evaluate.py --checkpoint RUN/seed_*/checkpoint.pt")
    episodes = str(QUICK_EPISODES if args.quick else EPISODES)
    run([sys.executable, "evaluate.py", "--checkpoint", *checkpoints, "--policies", "all", "--episodes", episodes,
         "--out", str(out / "eval"), "--no-progress"])
    document = json.loads((out / "eval" / "results.json").read_text())
    command += f" --policies all --episodes {episodes}"
    block = results_markdown(document, git_commit(), command)
    print(block)
    if args.write:
        write_blocks(args, block, document)
    return 0


def write_blocks(args: argparse.Namespace, block: str, document: dict) -> None:
    """Write ``block`` between the markers of ``args.page`` and ``document``'s summary table between the
    headline markers of ``args.readme``; both files are checked for their markers before either is written.

    Raises:
        ValueError: a file lacks its markers. FileNotFoundError: no such file.
    """
    page, readme = Path(args.page), Path(args.readme)
    for path, marker in ((page, START), (readme, HEADLINE_START)):
        if marker not in path.read_text():
            raise ValueError(f"{path} has no {marker} marker")
    write_between_markers(page, block, START, END)
    headline = "\n".join([summary_table(document), "", paired_caption(document), "", paired_table(document), "",
                          reading(document)])
    write_between_markers(readme, headline, HEADLINE_START, HEADLINE_END)


if __name__ == "__main__":
    sys.exit(main())
