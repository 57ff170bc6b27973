"""Every command README and the documentation pages (docs/) give for a script or module starts as written
from the repository root and takes the flags they give it: each ``python SCRIPT`` / ``python -m MODULE``
is run with ``--help`` (no PYTHONPATH, as a user types it), and every flag a page passes it must be one its
help lists. Benchmarks run both as files and as modules; the ``--quick`` forms given for the
``gpu_check`` command run in full. A command without flags that ``tests/test_docs_commands.py`` runs as
written is left to that test (the extending examples take no ``--help``: they would run in full twice)."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs_commands import doc_commands

ROOT = Path(__file__).resolve().parents[1]
NOT_OURS = ("pytest", "venv", "pip")
"""Modules README runs that are not the project's commands."""


def readme_commands(text: str) -> list[list[str]]:
    """The ``python ...`` commands of README, as token lists up to the first shell operator or comment:
    every line of a fenced code block that starts with ``python`` (joined over ``\\`` continuations) and
    every inline code span that does."""
    lines, commands = [], []
    in_block = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_block = not in_block
        elif in_block:
            lines.append(line.strip())
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    spans = [line for line in joined.splitlines() if line.startswith("python ")]
    spans += re.findall(r"`(python [^`]+)`", text)
    for span in spans:
        tokens = []
        for token in shlex.split(span.split(" #")[0], posix=True):
            if token in (">", "2>&1", "&&", "|", "\\") or token.startswith(">"):
                break
            tokens.append(token)
        if tokens[1:2] != ["-m"] or tokens[2] not in NOT_OURS:
            commands.append(tokens[1:])
    return commands


def target(command: list[str]) -> tuple[str, ...]:
    """``("-m", MODULE)`` or ``(SCRIPT,)`` of a command (without ``python``)."""
    return tuple(command[:2]) if command[0] == "-m" else (command[0],)


@functools.cache
def help_text(invocation: tuple[str, ...]) -> str:
    """``python INVOCATION --help`` run from the repository root without PYTHONPATH; fails on an error."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, *invocation, "--help"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"python {' '.join(invocation)} --help failed:\n{result.stderr[-2000:]}"
    return result.stdout


def subcommand(command: list[str]) -> tuple[str, ...]:
    """The invocation whose help lists the command's flags: the target, plus its first word when that is
    one of the target's subcommands (``python -m fedenv.traces import ...``)."""
    invocation = target(command)
    rest = command[len(invocation):]
    if rest and not rest[0].startswith("-"):
        choices = re.search(r"\{([\w,-]+)\}", help_text(invocation))
        if choices and rest[0] in choices.group(1).split(","):
            return (*invocation, rest[0])
    return invocation


PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md")
                                     if "_build" not in p.parts and p.name != "design.md")]
"""README and the documentation pages its measurement write-ups and guides moved to (not the design, whose
``python benchmarks/NAME.py`` is a pattern)."""
COMMANDS = [c for page in PAGES for c in readme_commands(page.read_text())]
RUN_AS_WRITTEN = {doc_commands.command_to_run(c) for page in doc_commands.PAGES
                  for c in doc_commands.documented_commands(page)} - {None}
"""The commands ``tests/test_docs_commands.py`` runs (as written, or the quick forms of the long ones)."""


def takes_no_flags_and_runs_as_written(command: list[str]) -> bool:
    """True for a command without flags that ``tests/test_docs_commands.py`` runs exactly as given here."""
    return not any(token.startswith("-") for token in command[1:]) and f"python {shlex.join(command)}" in RUN_AS_WRITTEN


def test_readme_commands_are_found():
    assert {"train_agents.py", "evaluate.py", "benchmarks/gpu_check.py"} <= {c[0] for c in COMMANDS}
    assert ("-m", "fedenv.calibrate") in {target(c) for c in COMMANDS}
    assert not any(c[:2] == ["-m", "pytest"] for c in COMMANDS)


def test_the_extraction_reads_blocks_continuations_and_inline_spans():
    text = ("Run `python a.py --x 1` first.\n```\npython b.py --y \\\n    --z 2   # note\n"
            "python -m pkg.mod --w > out.txt\npython -m pytest -q\n```\n")
    assert readme_commands(text) == [["b.py", "--y", "--z", "2"], ["-m", "pkg.mod", "--w"], ["a.py", "--x", "1"]]


CHECKED = [c for c in COMMANDS if not takes_no_flags_and_runs_as_written(c)]


@pytest.mark.parametrize("command", CHECKED, ids=[" ".join(c)[:60] for c in CHECKED])
def test_readme_command_starts_and_takes_its_flags(command):
    invocation = subcommand(command)
    text = help_text(invocation)
    flags = {token.split("=")[0] for token in command if token.startswith("--")}
    unknown = sorted(flag for flag in flags if not re.search(re.escape(flag) + r"(?![\w-])", text))
    assert unknown == [], f"python {' '.join(invocation)} does not list {unknown}"


BENCHMARKS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if "__main__" in p.read_text())


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_runs_as_a_file_and_as_a_module(name):
    assert help_text((f"benchmarks/{name}.py",)) == help_text(("-m", f"benchmarks.{name}"))


def test_benchmarks_is_a_regular_package_of_this_checkout():
    import benchmarks

    assert Path(benchmarks.__file__).resolve() == ROOT / "benchmarks" / "__init__.py"


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in COMMANDS if c[0] == "benchmarks/gpu_check.py" and "--quick" in c],
                         ids=lambda c: " ".join(c))
def test_readme_quick_gpu_check_runs_as_written(command):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "determinism" in result.stdout
