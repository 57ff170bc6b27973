"""benchmarks/rule_sweep.py: each cell is the policy's mean return over the seeds, played as the plain evaluation
loop plays it in the setting's federation; bad input is refused naming it."""

import dataclasses

import pytest

from benchmarks import rule_sweep
from benchmarks.agent_study_settings import setting_config
from benchmarks.common import QUICK_FEDERATION
from fedenv.baselines import StaleFastestPolicy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.rollout import run_episode


@pytest.mark.parametrize("flags", [[], ["--num-rounds", "3"]])  # the federation's flags change the federation
def test_each_cell_is_the_mean_return_of_the_policy_played_by_the_plain_loop(flags, capsys):
    table = rule_sweep.main(["--quick", *flags])
    assert list(table) == ["trained", "4x"]
    federation = EnvConfig(**{**QUICK_FEDERATION, "num_rounds": 3 if flags else QUICK_FEDERATION["num_rounds"]})
    for setting in table:
        config = setting_config(federation, setting)
        policy = StaleFastestPolicy(k=2, last_rounds=1, num_rounds=config.num_rounds)
        env = ClientSelectionEnv(dataclasses.replace(config, probing=False))  # stale-fastest decides before probing
        by_hand = run_episode(env, policy, 500).team_return  # one seed: the mean
        assert table[setting]["stale-fastest:k=2,last_rounds=1"] == pytest.approx(by_hand, abs=1e-12)
    printed = capsys.readouterr().out
    assert "| setting | `fastest` | `stale-fastest:k=2,last_rounds=1` |" in printed
    assert f"| 4x | {table['4x']['fastest']:.3f} | " in printed
    assert list(rule_sweep.main(["--quick", "--settings", "8x", *flags])) == ["8x"]  # a flag given wins over --quick


def test_bad_policies_and_settings_are_refused_naming_them(capsys):
    for argv, message in ((["--policies", "fastest:k=2"], "policy 'fastest' takes no option 'k'"),
                          (["--policies", "oort", "oort"], "names a policy twice: oort oort"),
                          (["--settings", "fmnist", "--seeds", "500"], "needs --data-root"),
                          (["--settings", "16x"], "invalid choice: '16x'")):
        with pytest.raises(SystemExit):
            rule_sweep.main(argv)
        err = capsys.readouterr().err
        assert message in err
        assert len(err.splitlines()) == 3  # usage, error, --help pointer: not the dozens of federation flags
