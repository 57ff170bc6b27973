"""Atomic file writes, and the standard JSON every JSON file of the project is written in.

A write goes to a temporary file in the target folder, then is renamed over the target: a crash or a full
disk mid-write leaves the previous file (or none) in place, never a truncated one.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: str | Path, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write(handle)`` on a temporary binary file next to ``path``, then ``os.replace`` it onto
    ``path`` (mode 0644). On any error the temporary file is removed and the error re-raised."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by the `with handle` below, deleted by the except
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """:func:`atomic_write` of UTF-8 text."""
    atomic_write(path, lambda handle: handle.write(text.encode("utf-8")))


def json_safe(value):
    """``value`` with every NaN and infinity (in nested dicts, lists and tuples) replaced by None: standard
    JSON (RFC 8259) has no NaN or Infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def json_text(value, **dumps_options) -> str:
    """Standard JSON text of ``value`` (:func:`json_safe` first: NaN and infinities become ``null``), so that
    every reader, strict ones included, parses it; ``dumps_options`` go to :func:`json.dumps` (``indent``,
    ``separators``, ``sort_keys``). Every JSON file the project writes goes through here.

    Raises:
        TypeError: a value JSON cannot hold (as :func:`json.dumps`).
    """
    return json.dumps(json_safe(value), allow_nan=False, **dumps_options)


def atomic_write_json(path: str | Path, value, indent: int | None = 1) -> None:
    """:func:`atomic_write_text` of :func:`json_text` of ``value``, followed by a newline."""
    atomic_write_text(path, json_text(value, indent=indent) + "\n")


def earlier_outputs(folder: str | Path, patterns: tuple[str, ...]) -> list[Path]:
    """The files directly in ``folder`` that match one of ``patterns`` (file names or glob patterns, the
    outputs an entry point writes there), sorted; empty when ``folder`` does not exist."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted({path for pattern in patterns for path in folder.glob(pattern) if path.is_file()})


def claim_output_folder(folder: str | Path, patterns: tuple[str, ...], overwrite: bool, refusal: str) -> None:
    """Make sure that writing ``patterns`` into ``folder`` destroys nothing silently: where
    :func:`earlier_outputs` finds files of an earlier run, raise, or with ``overwrite`` delete them first
    (only them: other files in ``folder`` are left alone).

    Raises:
        ValueError: earlier outputs and no ``overwrite``: ``refusal`` followed by the files found.
    """
    found = earlier_outputs(folder, patterns)
    if found and not overwrite:
        names = ", ".join(path.name for path in found[:4]) + (", ..." if len(found) > 4 else "")
        raise ValueError(f"{refusal} (it holds {names})")
    for path in found:
        path.unlink()
