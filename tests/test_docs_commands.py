"""Every command of README.md and of the guides runs (docs/commands.py says how: as written, its quick form,
or not at all, with the reason), and README starts with the two set-up commands CI relies on.

A command several pages give (README and the getting-started page share their three; four guides start from
the same short run) runs once per test session: a later page reuses its outcome, the files it wrote, when
every path the command names is as it was for the first run (:func:`named_paths`), so a page that leaves out
the step making a file its command reads still runs that command and fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
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


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    """``relative path -> (size, mtime_ns)`` of every file under ``folder``, not following the links to the
    repository (:data:`LINKED`)."""
    files = {}
    for directory, subdirectories, names in os.walk(folder):
        subdirectories[:] = [d for d in subdirectories if not os.path.islink(os.path.join(directory, d))]
        for name in names:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                stat = os.stat(path)
                files[os.path.relpath(path, folder)] = (stat.st_size, stat.st_mtime_ns)
    return files


def named_paths(command: str, folder: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each word of ``command`` that names a path (has a ``/`` or a file suffix, is no flag) with what it
    matches in ``folder`` now: the file, a directory's files, a pattern's matches, or nothing."""
    state = []
    for word in shlex.split(command):
        word = word.rstrip("/")
        if word.startswith(("-", "/", "~")) or not re.search(r"/|\.\w+$", word):
            continue
        matches = set()
        for path in folder.glob(word):
            matches.add(str(path.relative_to(folder)))
            if path.is_dir() and not path.is_symlink():
                matches.update(str(path.relative_to(folder) / name) for name in files_of(path))
        state.append((word, tuple(sorted(matches))))
    return tuple(state)


@dataclass(frozen=True)
class Outcome:
    """What a command that succeeded left behind: the files it wrote (copied to ``written``, by relative
    path) and the ones it removed."""

    written: Path
    removed: tuple[str, ...]

    def apply_to(self, folder: Path) -> None:
        shutil.copytree(self.written, folder, symlinks=True, dirs_exist_ok=True)
        for name in self.removed:
            (folder / name).unlink(missing_ok=True)


@pytest.fixture(scope="module")
def run_once(tmp_path_factory):
    """Run a command in a page's folder, or reuse the outcome of the same command run earlier in this
    session on the same named paths (:func:`named_paths`); returns the failed process, or None."""
    outcomes: dict[tuple[str, tuple], Outcome] = {}

    def run(folder: Path, command: str) -> subprocess.CompletedProcess | None:
        key = (command, named_paths(command, folder))
        if key in outcomes:
            outcomes[key].apply_to(folder)
            return None
        before = files_of(folder)
        completed = run_in(folder, command)
        if completed.returncode != 0:
            return completed
        after = files_of(folder)
        written = tmp_path_factory.mktemp("outcome")
        for name, stamp in after.items():
            if before.get(name) != stamp:
                (written / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(folder / name, written / name)
        outcomes[key] = Outcome(written, tuple(sorted(set(before) - set(after))))
        return None

    return run


@pytest.mark.slow
@pytest.mark.parametrize("page", doc_commands.PAGES)
def test_every_command_of_the_page_runs(page, tmp_path, run_once):
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    commands = doc_commands.documented_commands(page)
    assert commands, f"{page} has no bash commands"
    for command in [*doc_commands.SETUP.get(page, []), *commands]:
        to_run = doc_commands.command_to_run(command) if command in commands else command
        if to_run is None:
            continue
        failed = run_once(tmp_path, to_run)
        assert failed is None, f"{page}: `{to_run}` failed:\n{failed.stderr[-3000:]}"


def test_a_later_page_reuses_an_outcome_only_where_the_named_paths_are_as_they_were(tmp_path, run_once):
    first, second, third = (tmp_path / name for name in ("first", "second", "third"))
    for folder in (first, second, third):
        folder.mkdir()
    make, read = "mkdir -p out && echo $RANDOM > out/a.txt", "cat out/a.txt && touch out/read.txt"
    assert run_once(first, make) is None and run_once(first, read) is None
    assert run_once(second, make) is None and run_once(second, read) is None  # both reused: nothing ran
    assert (second / "out" / "a.txt").read_text() == (first / "out" / "a.txt").read_text()
    assert (second / "out" / "read.txt").is_file()
    failed = run_once(third, read)  # a page without the step making out/a.txt runs the command, which fails
    assert failed is not None and "out/a.txt" in failed.stderr


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
