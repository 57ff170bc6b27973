"""Shared fixtures."""

from __future__ import annotations

import json

import pytest

from tests.helpers import trace_document


@pytest.fixture
def write_trace(tmp_path):
    """Write a trace document to a file; returns its path."""

    def write(clients: list[dict], macs: int = 1_000_000, name: str = "trace.json") -> str:
        path = tmp_path / name
        path.write_text(json.dumps(trace_document(clients, macs)))
        return str(path)

    return write
