"""Shared fixtures: the tiny federation (see :func:`tests.helpers.tiny_config`) and trace files; the test
process runs torch on train_agents.py's default thread count."""

from __future__ import annotations

import json

import pytest

import train_agents
from fedenv.env import ClientSelectionEnv
from tests.helpers import tiny_config as make_tiny_config
from tests.helpers import trace_document


def pytest_configure(config):
    """Torch threads of the test process: train_agents.py's default (one; a second did not pay, and on a
    loaded machine two threads made the tiny federations' steps about eight times slower), set before
    any test rather than by whichever test first calls ``train_agents.main``."""
    train_agents.set_threads(train_agents.DEFAULT_THREADS)


@pytest.fixture
def tiny_config():
    """An :class:`~fedenv.config.EnvConfig` of 3 clients, all 3 candidates, 2 rounds, CPU, 200 test samples."""
    return make_tiny_config()


@pytest.fixture
def tiny_env(tiny_config):
    """A :class:`~fedenv.env.ClientSelectionEnv` on ``tiny_config`` (not reset)."""
    return ClientSelectionEnv(tiny_config)


@pytest.fixture
def make_env():
    """Build a :class:`~fedenv.env.ClientSelectionEnv` on the tiny federation with field overrides."""

    def make(**overrides) -> ClientSelectionEnv:
        return ClientSelectionEnv(make_tiny_config(**overrides))

    return make


@pytest.fixture
def write_trace(tmp_path):
    """Write a trace document to a file; returns its path."""

    def write(clients: list[dict], macs: int = 1_000_000, name: str = "trace.json") -> str:
        path = tmp_path / name
        path.write_text(json.dumps(trace_document(clients, macs)))
        return str(path)

    return write
