"""Pages written by the study scripts: a script replaces the text between two HTML-comment markers of a
Markdown page (README.md, docs/results/*.md) with its tables, stamped with the commit that produced them,
so that no result on a page is typed by hand."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fedenv.fileio import atomic_write_text

ROOT = Path(__file__).resolve().parent.parent


def git_commit() -> str:
    """The commit of the working tree (``+dirty`` when it has uncommitted changes), or ``unknown``."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def replace_between_markers(text: str, block: str, start_marker: str, end_marker: str) -> str:
    """``text`` with everything between ``start_marker`` and ``end_marker`` replaced by ``block``.

    Raises:
        ValueError: a marker is missing, or they are out of order.
    """
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"no {start_marker} ... {end_marker} markers in that order")
    return text[:start + len(start_marker)] + "\n" + block + "\n" + text[end:]


def write_between_markers(path: Path, block: str, start_marker: str, end_marker: str) -> None:
    """Replace the text between the markers of file ``path`` by ``block``, atomically.

    Raises:
        ValueError: ``path`` lacks the markers (naming the file). FileNotFoundError: no such file.
    """
    try:
        text = replace_between_markers(path.read_text(), block, start_marker, end_marker)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    atomic_write_text(path, text)
    print(f"wrote {path}")
