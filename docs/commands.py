"""Every shell command of README.md and of the guides, and how the tests run it.

    python docs/commands.py            # list each documented command with what the tests run for it

A command in a ```` ```bash ```` block of :data:`PAGES` is run as written by ``tests/test_docs_commands.py``
(in a fresh folder per page, in page order, after the page's :data:`SETUP`), with the placeholders of
:data:`PLACEHOLDERS` filled in, unless it is listed here:

- :data:`LONG`: it takes more than a minute (the main job trains for 12 minutes); its quick form is run
  instead, the same command at a small size;
- :data:`NOT_RUN`: it needs what a test cannot have (data to download, a Ray cluster, a GPU, files of
  your own, package installs); the reason says which, and where the code it calls is tested.

The test fails for a documented command that is in neither list and does not run, and for an entry here
that no page documents any more.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/getting-started.md", "docs/extending.md", "docs/guides/training.md",
         "docs/guides/evaluation.md", "docs/guides/transfer.md", "docs/guides/traces.md", "docs/guides/presets.md",
         "docs/guides/third-party-rl.md", "docs/guides/ray.md")
"""The pages whose commands are tested: README and every page a user follows step by step."""

TINY_RUN = "python train_agents.py --episodes 4 --num-rounds 4 --eval-interval 2 --val-seeds 500 --run-dir runs/short"
"""A four-episode run with validation (so it writes best.pt), for the pages that start from a run."""
SETUP = {page: [TINY_RUN] for page in ("docs/guides/evaluation.md", "docs/guides/transfer.md",
                                       "docs/guides/training.md", "docs/guides/ray.md")}
"""Commands run before a page's own (in its fresh folder)."""
PLACEHOLDERS = {"runs/<run>": "runs/short", "runs/X": "runs/short", "results/<run>": "results/short"}
"""Placeholders of the guides and what the tests put in their place."""

QUICK_TRAINING = "--episodes 2 --num-rounds 2 --eval-seeds"
LONG = {
    "python train_agents.py": f"python train_agents.py {QUICK_TRAINING}",
    "python train_agents.py --resume runs/X --episodes 800": "python train_agents.py --resume runs/short --episodes 6",
    "python train_agents.py --seeds 0 1 2 --run-dir runs/s": f"python train_agents.py --seeds 0 1 {QUICK_TRAINING} "
                                                             "--run-dir runs/s",
    "python train_agents.py --init-from runs/X/best.pt --num-rounds 40":
        f"python train_agents.py --init-from runs/short/best.pt {QUICK_TRAINING} --run-dir runs/ft",
    "python train_agents.py > train.log 2>&1": f"python train_agents.py {QUICK_TRAINING} > train.log 2>&1",
    "python train_agents.py --init-from runs/<run>/best.pt --num-rounds 40 --run-dir runs/finetuned":
        f"python train_agents.py --init-from runs/short/best.pt {QUICK_TRAINING} --run-dir runs/finetuned",
    "python train_agents.py --init-from runs/<run>/best.pt --num-clients 80 --episodes 10 "
    "--vdn-exploration-initial-eps 0.05 --vdn-learning-starts 20 --run-dir runs/finetuned-8x":
        f"python train_agents.py --init-from runs/short/best.pt --num-clients 20 {QUICK_TRAINING} "
        "--vdn-exploration-initial-eps 0.05 --vdn-learning-starts 2 --run-dir runs/finetuned-8x",
    "python evaluate.py --checkpoint runs/<run>/checkpoint.pt --policies all --out results/<run>":
        "python evaluate.py --checkpoint runs/short/checkpoint.pt --policies all --episodes 1 --out results/short",
    "python evaluate.py --checkpoint 'runs/seed*/checkpoint.pt' --policies all":
        f"python train_agents.py --seeds 0 1 {QUICK_TRAINING} --run-dir runs && "
        "python evaluate.py --checkpoint 'runs/seed*/checkpoint.pt' --policies fedavg,random --episodes 1",
    "python evaluate.py --checkpoint runs/seed0/checkpoint.pt runs/seed1/checkpoint.pt --policies all":
        f"python train_agents.py --seed 0 {QUICK_TRAINING} --run-dir runs/seed0 && "
        f"python train_agents.py --seed 1 {QUICK_TRAINING} --run-dir runs/seed1 && "
        "python evaluate.py --checkpoint runs/seed0/checkpoint.pt runs/seed1/checkpoint.pt --policies fedavg "
        "--episodes 2",
    "python train_agents.py --no-probing --observation-context --observation-estimates --episodes 200 "
    "--vdn-demonstrator stale-fastest:k=2 --vdn-demonstration-weight 10 --eval-interval 20 --val-seeds 500 501 502 "
    "503 504 505 506 507 --seeds 0 1 2 3 4 --run-dir runs/np-val8-demo-k2":
        "python train_agents.py --no-probing --observation-context --observation-estimates --episodes 2 "
        "--num-rounds 4 --vdn-demonstrator stale-fastest:k=2 --vdn-demonstration-weight 10 --eval-interval 2 "
        "--val-seeds 500 --seeds 0 1 --eval-seeds --run-dir runs/np-val8-demo-k2",
    "python -m fedenv.traces generate": "python -m fedenv.traces generate --out my_trace.json",
    "python examples/sb3_ppo.py --episodes 20 --out results/sb3_ppo":
        "python examples/sb3_ppo.py --episodes 2 --num-rounds 3 --num-clients 3 --eval-episodes 1 "
        "--out results/sb3_ppo",
    "python examples/sb3_dqn.py --episodes 20 --out results/sb3_dqn":
        "python examples/sb3_dqn.py --episodes 2 --num-rounds 3 --num-clients 3 --eval-episodes 1 "
        "--out results/sb3_dqn",
    "python examples/benchmarl_vdn.py --frames 2000 --out results/bm_vdn":
        "python examples/benchmarl_vdn.py --frames 60 --num-rounds 3 --num-clients 3 --eval-episodes 1 "
        "--out results/bm_vdn",
    "python evaluate.py --sb3 results/sb3_ppo/policy --policies all --episodes 5":
        "python evaluate.py --sb3 results/sb3_ppo/policy --policies fedavg --episodes 1",
    "python train_agents.py --trace my.json --round-deadline-s 60 --trace-mode replay":
        f"python -m fedenv.traces generate --out my.json && python train_agents.py --trace my.json "
        f"--round-deadline-s 60 --trace-mode replay {QUICK_TRAINING}",
    "python evaluate.py --checkpoint runs/<run>/checkpoint.pt --episodes 20 --ray-address local --num-workers 4":
        "python evaluate.py --checkpoint runs/short/checkpoint.pt --episodes 2 --ray-address local --num-workers 2",
    "python -m fedenv.calibrate --ray-address local --num-workers 4":
        "python -m fedenv.calibrate --seeds 10000 --num-rounds 2 --ray-address local --num-workers 2",
    "python train_agents.py --episodes 500 --num-envs 4 --ray-address local --num-workers 3":
        "python train_agents.py --episodes 4 --num-rounds 2 --num-envs 2 --ray-address local --num-workers 2 "
        "--eval-seeds --run-dir runs/ray",
}
"""Documented commands that take more than a minute -> the quick form the tests run."""

_INSTALL = "creates a virtual environment and installs packages; CI runs the test command verbatim (.ci/run)"
_DATA = "needs full MNIST or Fashion-MNIST in ~/data (not shipped); the idx reader is tested in tests/test_data_idx.py"
NOT_RUN = {
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e . && python train_agents.py': _INSTALL,
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && python -m pytest -q': _INSTALL,
    "python3 -m venv .venv && . .venv/bin/activate": _INSTALL,
    "pip install torch torchvision --index-url https://download.pytorch.org/whl/cpu": _INSTALL,
    "pip install -e .": _INSTALL,
    "python train_agents.py --dataset mnist --data-root ~/data --episodes 2": _DATA,
    "python train_agents.py --preset mnist-lenet --data-root ~/data": _DATA,
    "python evaluate.py --checkpoint runs/<run>/checkpoint.pt --dataset fashion-mnist --data-root ~/data": _DATA,
    "python -m fedenv.calibrate --preset mnist-lenet --data-root DIR > weights.yaml": _DATA,
    "python train_agents.py --preset mnist-lenet --data-root DIR --config weights.yaml": _DATA,
    "python train_agents.py --config run.yaml --seed 1":
        "needs your run.yaml; --config files are tested in tests/test_cli.py",
    "python train_agents.py --config run.yaml --train-samples none":
        "needs your run.yaml; none after a --config file is tested in tests/test_cli.py",
    "python -m fedenv.traces import --fedscale client_device_capacity --behave client_behave_trace --out my.json":
        "needs FedScale's pickles; the importer is tested in tests/test_traces_importers.py",
    "python -m fedenv.traces import --csv my_devices.csv --out my.json":
        "needs your CSV; the importer is tested in tests/test_traces_importers.py",
    "ray start --head --port=6379": "starts a Ray cluster head; the local-cluster forms above are run",
    "ray start --address=HEAD_IP:6379": "joins a Ray cluster; the local-cluster forms above are run",
    "python train_agents.py --preset mnist-lenet --data-root ~/data --ray-address auto "
    "--num-workers 16 --worker-gpus 0.25": "needs a Ray cluster with GPUs and full MNIST",
}
"""Documented commands the tests cannot run -> why, and where what they call is tested."""

_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)


def documented_commands(page: str) -> list[str]:
    """The commands of ``page``'s ``bash`` blocks, in order: continuation lines joined, comments after two
    spaces and ``#`` dropped, runs of spaces collapsed."""
    commands = []
    for block in _BLOCK.findall((ROOT / page).read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            command = " ".join(line.split("  #")[0].split())
            if command:
                commands.append(command)
    return commands


def command_to_run(command: str) -> str | None:
    """What the tests run for documented ``command``: its quick form, itself with the placeholders filled
    in, or None (:data:`NOT_RUN`)."""
    if command in NOT_RUN:
        return None
    command = LONG.get(command, command)
    for placeholder, value in PLACEHOLDERS.items():
        command = command.replace(placeholder, value)
    return command


def main() -> int:
    for page in PAGES:
        print(f"{page}:")
        for command in documented_commands(page):
            run = command_to_run(command)
            note = f"not run: {NOT_RUN[command]}" if run is None else ("" if run == command else f"runs: {run}")
            print(f"  {command}" + (f"\n      {note}" if note else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
