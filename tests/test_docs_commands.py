"""Every command of README.md and of the guides runs (docs/commands.py says how: as written, its quick form,
or not at all, with the reason), and README starts with the two set-up commands CI relies on."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("doc_commands", ROOT / "docs" / "commands.py")
doc_commands = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(doc_commands)

LINKED = ("train_agents.py", "evaluate.py", "examples", "benchmarks")
"""Files of the repository the commands name by relative path, linked into each page's folder."""


def shell_command(command: str) -> str:
    """``command`` with every ``python`` that starts a command replaced by this interpreter."""
    return re.sub(r"(^|&& |; )python ", lambda m: f"{m[1]}{sys.executable} ", command)


def run_in(folder: Path, command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "COLUMNS": "120",
           "WANDB_MODE": "disabled"}
    return subprocess.run(["bash", "-c", shell_command(command)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", doc_commands.PAGES)
def test_every_command_of_the_page_runs(page, tmp_path):
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    commands = doc_commands.documented_commands(page)
    assert commands, f"{page} has no bash commands"
    for command in [*doc_commands.SETUP.get(page, []), *commands]:
        to_run = doc_commands.command_to_run(command) if command in commands else command
        if to_run is None:
            continue
        completed = run_in(tmp_path, to_run)
        assert completed.returncode == 0, f"{page}: `{to_run}` failed:\n{completed.stderr[-3000:]}"


def test_every_listed_command_is_still_documented():
    documented = {c for page in doc_commands.PAGES for c in doc_commands.documented_commands(page)}
    stale = (set(doc_commands.LONG) | set(doc_commands.NOT_RUN)) - documented
    assert not stale, f"docs/commands.py lists commands no page documents: {sorted(stale)}"
    assert not set(doc_commands.LONG) & set(doc_commands.NOT_RUN)


def test_no_placeholder_is_left_in_a_command_the_tests_run():
    for page in doc_commands.PAGES:
        for command in doc_commands.documented_commands(page):
            to_run = doc_commands.command_to_run(command)
            assert to_run is None or not re.search(r"<\w+>|~/data|\bDIR\b", to_run), (page, to_run)


def test_readme_starts_with_the_two_set_up_commands_and_ci_runs_the_second_verbatim():
    commands = doc_commands.documented_commands("README.md")
    assert commands[:2] == [
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && python train_agents.py",
        'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && python -m pytest -q']
    text = (ROOT / "README.md").read_text()
    assert text.index("```bash") < text.index("\n## "), "README's first section is the set-up commands"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == "python -m pytest -q" and 'pip install -e ".[test,docs]"' in ci
    assert len(text.splitlines()) <= 250
