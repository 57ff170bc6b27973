"""Atomic file writes: write to a temporary file in the target folder, then rename over the target.

A crash or a full disk mid-write leaves the previous file (or none) in place, never a truncated one.
"""

from __future__ import annotations

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
