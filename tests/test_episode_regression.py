"""Short episodes replay exactly as they did before the package was reorganised.

``tests/fixtures/pinned_episodes.json`` was recorded at commit e7e39ce (before the registries, the round
simulator and the subpackages): one episode (seed 7) per case, each case an aggregation rule, a
partitioner, a policy or a training setting. A refactor that changes what a seed plays fails here.
A change that is meant to alter behaviour re-records the affected cases and says so in its commit.

Re-recorded, every case, when the reward moved to the validation split (default ``val_fraction`` 0.25,
``reward_accuracy_split="validation"``, recalibrated weights) and downloads were recorded: before
re-recording, every case of the e7e39ce file still replayed exactly with ``val_fraction=0.1``,
``reward_accuracy_split="test"`` and the old weights (3.68e-4, 1.20e-3). The fixture holds the
:class:`~fedenv.evaluation.EpisodeRecord` fields of :data:`PINNED_FIELDS`, written by ``run_episode``.

When the MLP's fused SGD step became the default engine (``auto``; the earlier step is ``unfused``), every
case replayed within the tolerance below both ways, so nothing was re-recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fedenv.baselines import make_policy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import run_episode

PINNED = json.loads((Path(__file__).parent / "fixtures" / "pinned_episodes.json").read_text())
PINNED_FIELDS = ("test_accuracy", "validation_accuracy", "wall_clock_s", "reward", "upload_mb", "download_mb")


@pytest.mark.parametrize("case", sorted(PINNED["cases"]))
def test_seeded_episode_replays_the_recorded_rounds(case):
    pinned = PINNED["cases"][case]
    policy = make_policy(pinned["policy"])
    # the overrides were recorded with the flat keys of an earlier release; from_dict reads them as options
    config = EnvConfig.from_dict({**PINNED["base"], **pinned["overrides"], **policy.env_overrides})
    record = run_episode(ClientSelectionEnv(config), policy, seed=PINNED["seed"])
    assert record.num_selected == pinned["num_selected"]
    for key in PINNED_FIELDS:
        np.testing.assert_allclose(getattr(record, key), pinned[key], rtol=1e-6, atol=1e-9, err_msg=key)
